import { writeFileSync } from 'node:fs';
import { printSortedSchema } from '../faces/graphql/index.js';

/** `npm run schema`: writes the sorted, printed schema to schema.graphql. */
const target = new URL('../../schema.graphql', import.meta.url);
writeFileSync(target, printSortedSchema());
console.log(`wrote ${target.pathname}`);

import { writeFileSync } from 'node:fs';
import { restDocument } from '../faces/rest/table.js';

/** `npm run openapi`: writes the REST face's OpenAPI document to openapi.json. */
const target = new URL('../../openapi.json', import.meta.url);
writeFileSync(target, `${JSON.stringify(restDocument(), null, 2)}\n`);
console.log(`wrote ${target.pathname}`);

import { lexicographicSortSchema, printSchema } from 'graphql';
import { builder } from './builder.js';
import './scalars.js';
import './task.js';
import './task-operations.js';
import './many.js';
import './schedule.js';
import './signals.js';
import './steps.js';
import './webhook.js';
import './work-fields.js';

/** The code-first schema; `schema.graphql` is its sorted print. */
export const schema = builder.toSchema({ sortSchema: false });

export function printSortedSchema(): string {
  return `${printSchema(lexicographicSortSchema(schema))}\n`;
}

import type { TaskStatus } from '../client/index.js';
import { CliError } from './errors.js';

/** The command line's own arguments, read into values; a bad one is a CliError naming it. */

export const STATUSES = ['WORKING', 'INPUT_REQUIRED', 'COMPLETED', 'CANCELLED', 'FAILED'];

export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CliError(`${what} is not valid JSON: ${(err as Error).message}`);
  }
}

export function positiveInt(value: string, what: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new CliError(`${what} must be a positive integer`);
  return n;
}

export function integer(value: string, what: string): number {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new CliError(`${what} must be an integer`);
  return n;
}

/** `--rate-limit 5/60000`: at most 5 starts in any 60 000 ms (the server checks the ranges). */
export function rateLimitArg(value: string): { limit: number; periodMs: number } {
  const match = /^(\d+)\/(\d+)$/.exec(value.trim());
  if (!match) throw new CliError('--rate-limit must be LIMIT/PERIOD_MS, e.g. 5/60000');
  return { limit: Number(match[1]), periodMs: Number(match[2]) };
}

export function statuses(list: string): TaskStatus[] {
  const wanted = list
    .split(',')
    .map((s) => s.trim().toUpperCase())
    .filter(Boolean);
  for (const s of wanted)
    if (!STATUSES.includes(s))
      throw new CliError(`unknown status ${s}; one of ${STATUSES.join(', ')}`);
  return wanted as TaskStatus[];
}

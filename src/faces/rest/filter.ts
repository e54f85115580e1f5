import { ServiceError } from '../../errors.js';
import type { TaskFilter } from '../../tasks/filter.js';
import type { TaskStatus } from '../../tasks/status.js';

/**
 * DESIGN §15's filter as the REST face takes it, a query string or a JSON body, in the
 * domain's shape. Only what is REST's own is checked here (the query's `label=key:value`; the
 * body's members and types are its schema's, TaskFilter); whether a status is known or a date valid is the domain's to
 * say (`checkFilter`), as for every face.
 */

function refuse(message: string): never {
  throw new ServiceError('BAD_USER_INPUT', message);
}

/** Statuses lower-case, as the domain spells them; an unknown one is the domain's to refuse. */
function statusesOf(values: readonly string[]): TaskStatus[] | null {
  const statuses = values.map((s) => s.trim().toLowerCase()).filter(Boolean);
  return statuses.length ? (statuses as TaskStatus[]) : null;
}

/** A date and time as the domain takes it; one that does not parse reaches it invalid. */
function dateOf(value: unknown): Date | null {
  if (value === undefined || value === null) return null;
  return typeof value === 'string' ? new Date(value) : new Date(Number.NaN);
}

/** Repeated or comma-separated values of one query parameter. */
function listParam(params: URLSearchParams, name: string): string[] {
  return params.getAll(name).flatMap((v) => v.split(','));
}

/**
 * `GET /v1/jobs?status=&kind=&label=k:v&createdAfter=&createdBefore=&owner=&parentId=`:
 * `status` and `kind` repeat or take comma-separated values, `label=key:value` repeats.
 */
export function filterOfQuery(params: URLSearchParams): TaskFilter {
  const labels: Record<string, string> = {};
  for (const pair of params.getAll('label')) {
    const colon = pair.indexOf(':');
    if (colon < 1) refuse('label must be key:value.');
    const key = pair.slice(0, colon);
    if (key in labels && labels[key] !== pair.slice(colon + 1))
      refuse(`label ${JSON.stringify(key)} is given twice with different values.`);
    labels[key] = pair.slice(colon + 1);
  }
  const kinds = listParam(params, 'kind')
    .map((k) => k.trim())
    .filter(Boolean);
  return {
    statuses: statusesOf(listParam(params, 'status')),
    kinds: kinds.length ? kinds : null,
    labels,
    createdAfter: dateOf(params.get('createdAfter')),
    createdBefore: dateOf(params.get('createdBefore')),
    owner: params.get('owner'),
    parentId: params.get('parentId'),
  };
}

/** A string, or a list of strings, as a list. */
function listOf(value: string | string[] | null | undefined): string[] | null {
  if (value === undefined || value === null) return null;
  return Array.isArray(value) ? value : [value];
}

/** The body of `POST /v1/jobs/cancel` (its schema, TaskFilter, checked its members' types). */
export interface FilterBody {
  status?: string | string[] | null;
  kind?: string | string[] | null;
  labels?: Record<string, string> | null;
  createdAfter?: string | null;
  createdBefore?: string | null;
  owner?: string | null;
  parentId?: string | null;
}

/** The body of `POST /v1/jobs/cancel`: the filter object itself, statuses lower-case. */
export function filterOfBody(body: FilterBody): TaskFilter {
  const statuses = listOf(body.status);
  return {
    statuses: statuses ? statusesOf(statuses) : null,
    kinds: listOf(body.kind),
    labels: body.labels,
    createdAfter: dateOf(body.createdAfter),
    createdBefore: dateOf(body.createdBefore),
    owner: body.owner ?? null,
    parentId: body.parentId ?? null,
  };
}

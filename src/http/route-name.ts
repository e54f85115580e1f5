/** Paths served as they are: each is its own route. */
const FIXED = new Set([
  '/',
  '/graphql',
  '/healthz',
  '/readyz',
  '/metrics',
  '/v1/jobs',
  '/v1/schedules',
  '/v1/openapi.json',
  '/mcp',
  '/a2a',
]);
/** Top-level folders whose sub-paths are one route each, named by the folder. */
const FOLDERS = [
  '/v1/',
  '/mcp/',
  '/a2a/',
  '/.well-known/',
  '/graphql/graphiql/',
  '/web/',
  '/assets/',
];

/**
 * The route a request path belongs to, for metrics labels and request logs: ids become
 * `{id}`; paths the server does not serve (404) are all `unmatched` and other unlisted ones
 * (the dashboard's files) `other`, so a client inventing paths cannot grow the number of series.
 */
export function routeOf(url: string | undefined, status: number): string {
  const path = (url ?? '/').split('?')[0]!;
  if (FIXED.has(path)) return path;
  const job = /^\/v1\/jobs\/[^/]+(\/[a-z-]+)?$/.exec(path);
  if (job) return `/v1/jobs/{id}${job[1] ?? ''}`;
  const schedule = /^\/v1\/schedules\/[^/]+(\/trigger)?$/.exec(path);
  if (schedule) return `/v1/schedules/{key}${schedule[1] ?? ''}`;
  const folder = FOLDERS.find((f) => path.startsWith(f));
  if (folder) return `${folder}*`;
  return status === 404 ? 'unmatched' : 'other';
}

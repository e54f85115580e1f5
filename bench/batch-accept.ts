import {
  alternate,
  DURATION_MS,
  databaseUrl,
  fmt,
  out,
  PROFILE,
  ratio,
  server,
  targets,
  truncate,
  verdict,
  WARMUP_MS,
} from './common.js';
import { type LoadResult, load } from './load.js';
import { spawnChild } from './processes.js';

/** Tasks a batch carries, and clients sending batches at once. */
const BATCH = 100;
const CLIENTS = 8;

/**
 * Starts in batches: `startTasks` of 100 tasks (8 clients, GraphQL over HTTP with a token)
 * beside a bare node:http endpoint that inserts the same 100 rows in one multi-row
 * `INSERT … RETURNING` (with the same notify), and `POST /v1/jobs/batch`.
 */
export async function batchAccept(token: string): Promise<void> {
  out(`## 1b. accept in batches: ${BATCH} tasks a request, ${CLIENTS} concurrent clients`);
  out();
  const api = await server('batch-api', { ROLE: 'api' });
  const floor = await spawnChild('batch-floor', 'bench/floor.ts', {
    env: { DATABASE_URL: databaseUrl },
    profile: PROFILE,
  });
  try {
    const entries = Array.from({ length: BATCH }, (_, i) => ({
      kind: 'sleep',
      input: { ms: 1000 + i },
    }));
    const startTasks =
      'mutation($inputs: [StartTaskInput!]!) { startTasks(inputs: $inputs) { id status pollIntervalMs } }';
    const every = (status: number, text: string, wanted: number) =>
      status === wanted && !text.includes('"errors"');
    const measure = (url: string, body: unknown, headers: Record<string, string>, ok: number) =>
      load({
        url,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
        concurrency: CLIENTS,
        warmupMs: WARMUP_MS,
        durationMs: DURATION_MS,
        check: (status, text) => every(status, text, ok),
      });
    const auth = { authorization: `Bearer ${token}` };
    const results = await alternate(
      [
        [
          'graphql',
          () =>
            measure(
              `${api.url}/graphql`,
              { query: startTasks, variables: { inputs: entries } },
              { ...auth, accept: 'application/graphql-response+json, application/json' },
              200,
            ),
        ],
        ['rest', () => measure(`${api.url}/v1/jobs/batch`, { jobs: entries }, auth, 202)],
        ['floor', () => measure(`${floor.url}/accept-many`, { inputs: entries }, {}, 200)],
      ],
      truncate,
    );
    const f = results.get('floor')!;
    const line = (label: string, r: LoadResult) =>
      out(
        `| ${label} | ${fmt(r.perSecond * BATCH)} | ${fmt(r.p50Ms, 2)} | ${fmt(r.p99Ms, 2)} | ${ratio(r.perSecond, f.perSecond)} |`,
      );
    out('| contender | tasks/s | p50 ms a batch | p99 ms a batch | vs floor |');
    out('| --- | ---: | ---: | ---: | ---: |');
    line('`startTasks` of 100, GraphQL over HTTP (ROLE=api)', results.get('graphql')!);
    line('`POST /v1/jobs/batch` of 100 (ROLE=api)', results.get('rest')!);
    line('floor: bare node:http, one multi-row insert + notify of the same 100 rows', f);
    out();
    out(
      'Each request carries 100 `sleep` tasks (distinct inputs); every contender validates nothing beyond JSON but ours, which checks each entry against its kind, authorizes the token, audits the call and commits the batch in one transaction before it answers.',
    );
    out();
    const r = results.get('graphql')!.perSecond / f.perSecond;
    targets.push(`| startTasks of 100 ≥ 0.7× floor | ${r.toFixed(2)}× | ${verdict(r >= 0.7)} |`);
  } finally {
    await Promise.all([api.stop(), floor.stop()]);
  }
}

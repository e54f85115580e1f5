import { CLIENTS, clientRequest } from './clients.js';
import {
  alternate,
  CONCURRENCY,
  DURATION_MS,
  databaseUrl,
  fmt,
  out,
  POLL,
  PROFILE,
  pool,
  row,
  START,
  server,
  startTask,
  targets,
  truncate,
  verdict,
  WARMUP_MS,
} from './common.js';
import { INSERT_SQL, insertParams, SELECT_SQL } from './floor.js';
import { type LoadResult, load, loop } from './load.js';
import { spawnChild } from './processes.js';

/** Throughput at 16 concurrent clients, beside a bare node:http server and the driver alone. */

export async function accept(token: string): Promise<void> {
  out('## 1. accept: start a task over HTTP, 16 concurrent clients');
  out();
  const api = await server('accept-api', { ROLE: 'api' });
  const yogaOnly = await server('accept-yoga', { ROLE: 'api', BENCH_YOGA_ONLY: '1' });
  const floor = await spawnChild('accept-floor', 'bench/floor.ts', {
    env: { DATABASE_URL: databaseUrl },
    profile: PROFILE,
  });
  try {
    const body = { kind: 'sleep', input: { ms: 1000 } };
    const ok200 = (status: number, text: string) => status === 200 && !text.includes('"errors"');
    const start = { query: START, variables: { input: body }, isQuery: false };
    const results = await alternate(
      [
        ...clientContenders(token, start, ok200, api.url, yogaOnly.url),
        [
          'rest',
          () =>
            load({
              url: `${api.url}/v1/jobs`,
              method: 'POST',
              headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
              body: JSON.stringify(body),
              concurrency: CONCURRENCY,
              warmupMs: WARMUP_MS,
              durationMs: DURATION_MS,
              check: (s) => s === 202,
            }),
        ],
        [
          'floor',
          () =>
            load({
              url: `${floor.url}/accept`,
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify(body),
              concurrency: CONCURRENCY,
              warmupMs: WARMUP_MS,
              durationMs: DURATION_MS,
            }),
        ],
        [
          'driver',
          () =>
            loop(
              () => pool.query(INSERT_SQL, insertParams('alice', 'sleep', body.input)),
              CONCURRENCY,
              WARMUP_MS,
              DURATION_MS,
            ),
        ],
      ],
      truncate,
    );
    const f = results.get('floor')!;
    out('| contender | requests/s | p50 ms | p99 ms | vs floor |');
    out('| --- | ---: | ---: | ---: | ---: |');
    for (const client of CLIENTS)
      out(row(`\`startTask\` as ${client.name} sends it (ROLE=api)`, results.get(client.name)!, f));
    out(row('A/B: Apollo Client 4’s, through yoga’s own HTTP layer', results.get('yoga only')!, f));
    out(row('`POST /v1/jobs` (taskhandle, ROLE=api)', results.get('rest')!, f));
    out(row('floor: bare node:http, same insert + notify', f, f));
    out(row('driver alone: pg, same statement, no HTTP', results.get('driver')!, f));
    out();
    for (const client of CLIENTS) {
      const r = results.get(client.name)!.perSecond / f.perSecond;
      targets.push(
        `| accept ≥ 0.9× floor, ${client.name} | ${r.toFixed(2)}× | ${verdict(r >= 0.9)} |`,
      );
    }
  } finally {
    await Promise.all([api.stop(), yogaOnly.stop(), floor.stop()]);
  }
}

export async function poll(token: string): Promise<void> {
  out('## 2. poll: `task(id)` of an unchanged task, 16 concurrent clients');
  out();
  await truncate();
  // A table that is not empty: 10 000 other tasks around the one polled.
  await pool.query(
    `insert into tasks (id, owner, kind, input, ttl_ms, expires_at, poll_interval_ms, max_attempts, timeout_ms)
     select gen_random_uuid(), 'owner' || (i % 100), 'sleep', '{"ms":1000}', 3600000, now() + interval '1 hour', 1000, 3, 3700000
     from generate_series(1, 10000) i`,
  );
  const api = await server('poll-api', { ROLE: 'api' });
  const yogaOnly = await server('poll-yoga', { ROLE: 'api', BENCH_YOGA_ONLY: '1' });
  const floor = await spawnChild('poll-floor', 'bench/floor.ts', {
    env: { DATABASE_URL: databaseUrl },
    profile: PROFILE,
  });
  try {
    const id = await startTask(api, token, 'sleep', { ms: 3_600_000, steps: 1 });
    await pool.query('analyze tasks');
    const polling = { query: POLL, variables: { id }, isQuery: true };
    const working = (status: number, text: string) => status === 200 && text.includes('"WORKING"');
    const results = await alternate([
      ...clientContenders(token, polling, working, api.url, yogaOnly.url),
      [
        'rest',
        () =>
          load({
            url: `${api.url}/v1/jobs/${id}`,
            headers: { authorization: `Bearer ${token}` },
            concurrency: CONCURRENCY,
            warmupMs: WARMUP_MS,
            durationMs: DURATION_MS,
          }),
      ],
      [
        'floor',
        () =>
          load({
            url: `${floor.url}/poll?id=${id}`,
            concurrency: CONCURRENCY,
            warmupMs: WARMUP_MS,
            durationMs: DURATION_MS,
          }),
      ],
      [
        'driver',
        () =>
          loop(() => pool.query(SELECT_SQL, [id, 'alice']), CONCURRENCY, WARMUP_MS, DURATION_MS),
      ],
    ]);
    const cache = await api.ask<{ hits: number; misses: number }>('cache');
    const f = results.get('floor')!;
    out('| contender | requests/s | p50 ms | p99 ms | vs floor |');
    out('| --- | ---: | ---: | ---: | ---: |');
    for (const client of CLIENTS)
      out(row(`\`task(id)\` as ${client.name} sends it (ROLE=api)`, results.get(client.name)!, f));
    out(row('A/B: Apollo Client 4’s, through yoga’s own HTTP layer', results.get('yoga only')!, f));
    out(row('`GET /v1/jobs/{id}` (taskhandle, ROLE=api)', results.get('rest')!, f));
    out(row('floor: bare node:http, same select', f, f));
    out(row('driver alone: pg, same select, no HTTP', results.get('driver')!, f));
    out();
    out(
      `Row cache in the api process over the run: ${fmt(cache.hits)} hits, ${fmt(cache.misses)} misses (a miss is a query).`,
    );
    out();
    for (const client of CLIENTS) {
      const r = results.get(client.name)!.perSecond / f.perSecond;
      targets.push(
        `| poll ≥ 1.5× floor, ${client.name} | ${r.toFixed(2)}× | ${verdict(r >= 1.5)} |`,
      );
    }
  } finally {
    await Promise.all([api.stop(), yogaOnly.stop(), floor.stop()]);
  }
}

/**
 * One contender per mainstream client sending `operation` to the server at `url`, and the A/B
 * contender: Apollo Client 4's request to `yogaOnlyUrl`, a server whose direct path is off.
 */
function clientContenders(
  token: string,
  operation: Parameters<typeof clientRequest>[3],
  check: (status: number, text: string) => boolean,
  url: string,
  yogaOnlyUrl: string,
): Array<[string, () => Promise<LoadResult>]> {
  const as = (client: (typeof CLIENTS)[number], to: string) => () =>
    load({
      ...clientRequest(client, to, token, operation),
      concurrency: CONCURRENCY,
      warmupMs: WARMUP_MS,
      durationMs: DURATION_MS,
      check,
    });
  return [
    ...CLIENTS.map((client): [string, () => Promise<LoadResult>] => [client.name, as(client, url)]),
    ['yoga only', as(CLIENTS[0]!, yogaOnlyUrl)],
  ];
}

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
import { cpuOf } from './cpu-split.js';
import { INSERT_SQL, insertParams, SELECT_SQL } from './floor.js';
import { type LoadResult, load, loop } from './load.js';
import { type Child, spawnChild } from './processes.js';

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
        ...clientContenders(token, start, ok200, api, yogaOnly),
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
              cpu: cpuOf(api),
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
              cpu: cpuOf(floor),
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
              cpuOf(undefined),
            ),
        ],
      ],
      truncate,
    );
    const f = results.get('floor')!;
    table(results, {
      operation: '`startTask`',
      rest: '`POST /v1/jobs`',
      floor: 'same insert + notify',
      driver: 'same statement',
    });
    out(CPU_NOTE);
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
      ...clientContenders(token, polling, working, api, yogaOnly),
      [
        'rest',
        () =>
          load({
            url: `${api.url}/v1/jobs/${id}`,
            headers: { authorization: `Bearer ${token}` },
            concurrency: CONCURRENCY,
            warmupMs: WARMUP_MS,
            durationMs: DURATION_MS,
            cpu: cpuOf(api),
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
            cpu: cpuOf(floor),
          }),
      ],
      [
        'driver',
        () =>
          loop(
            () => pool.query(SELECT_SQL, [id, 'alice']),
            CONCURRENCY,
            WARMUP_MS,
            DURATION_MS,
            cpuOf(undefined),
          ),
      ],
    ]);
    const cache = await api.ask<{ hits: number; misses: number }>('cache');
    const f = results.get('floor')!;
    table(results, {
      operation: '`task(id)`',
      rest: '`GET /v1/jobs/{id}`',
      floor: 'same select',
      driver: 'same select',
    });
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
  api: Child,
  yogaOnly: Child,
): Array<[string, () => Promise<LoadResult>]> {
  const as = (client: (typeof CLIENTS)[number], to: Child) => () =>
    load({
      ...clientRequest(client, to.url, token, operation),
      concurrency: CONCURRENCY,
      warmupMs: WARMUP_MS,
      durationMs: DURATION_MS,
      check,
      cpu: cpuOf(to),
    });
  return [
    ...CLIENTS.map((client): [string, () => Promise<LoadResult>] => [client.name, as(client, api)]),
    ['yoga only', as(CLIENTS[0]!, yogaOnly)],
  ];
}

/**
 * A throughput table: each contender's rate and latency beside the floor's, and the CPU a
 * request cost each side, then what the CPU columns mean.
 */
function table(
  results: Map<string, LoadResult>,
  what: { operation: string; rest: string; floor: string; driver: string },
): void {
  const f = results.get('floor')!;
  out(HEADER);
  for (const client of CLIENTS)
    out(
      cpuRow(
        `${what.operation} as ${client.name} sends it (ROLE=api)`,
        results.get(client.name)!,
        f,
      ),
    );
  out(
    cpuRow('A/B: Apollo Client 4’s, through yoga’s own HTTP layer', results.get('yoga only')!, f),
  );
  out(cpuRow(`${what.rest} (taskhandle, ROLE=api)`, results.get('rest')!, f));
  out(cpuRow(`floor: bare node:http, ${what.floor}`, f, f));
  out(cpuRow(`driver alone: pg, ${what.driver}, no HTTP`, results.get('driver')!, f));
  out();
  out(CPU_NOTE);
  out();
}

const HEADER = [
  '| contender | requests/s | p50 ms | p99 ms | vs floor | CPU ms a request: server | Postgres | load generator | all three |',
  '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
].join('\n');

const CPU_NOTE =
  "CPU ms a request: over the measured stretch of the run kept, the server process that answers, every Postgres process of this machine (/proc) and the load generator (this process), each divided by the requests of the stretch. The three share the 2 cores: a contender whose three together keep the cores busy (2,000 ms of CPU a second) is bound by that sum; one that leaves them idle waits on each request in turn, its commit and the server's own work on one thread.";

/** A contender's row with the CPU a request cost each side over its measured stretch. */
function cpuRow(label: string, result: LoadResult, floor: LoadResult): string {
  const { server, postgres, client } = result.cpu!;
  const cells = [server, postgres, client, server + postgres + client].map((ms) => fmt(ms, 3));
  return `${row(label, result, floor)} ${cells.join(' | ')} |`;
}

/**
 * The event row as an A/B test of two source trees, for a machine too noisy for runs one after
 * the other: `BENCH_AB=/path/to/other/tree npx tsx bench/ab-event.ts` starts one server of
 * each (ROLE=all, or api + worker with BENCH_AB_SPLIT=1), each on a database of its own, and
 * takes their samples in turn, so that both see the same load. Prints p50/p99 of each and the
 * ratio. BENCH_EVENT_SAMPLES sets the samples of each (300).
 */
import { mintToken } from '../src/auth/mint.js';
import { recreateMigratedDatabase } from '../test/helpers/migrated-database.js';
import {
  agent,
  BASE_URL,
  EVENT_SAMPLES,
  FOLLOW,
  fmt,
  pool,
  SECRET,
  SERVER_ENV,
  startTask,
} from './common.js';
import { percentile } from './load.js';
import { type Child, spawnChild } from './processes.js';
import { GqlSocket } from './ws-client.js';

const other = process.env.BENCH_AB;
if (!other) throw new Error('BENCH_AB names the other tree');
const split = process.env.BENCH_AB_SPLIT === '1';

async function side(name: string, root: string): Promise<{ api: Child; stop(): Promise<void> }> {
  const url = await recreateMigratedDatabase(BASE_URL, `taskhandle_ab_${name}`);
  const env = { ...SERVER_ENV, DATABASE_URL: url };
  const script = `${root}/bench/serve.ts`;
  if (!split) {
    const all = await spawnChild(`ab-${name}`, script, { env: { ...env, ROLE: 'all' } });
    return { api: all, stop: () => all.stop() };
  }
  const [api, worker] = await Promise.all([
    spawnChild(`ab-${name}-api`, script, { env: { ...env, ROLE: 'api' } }),
    spawnChild(`ab-${name}-worker`, script, { env: { ...env, ROLE: 'worker' } }),
  ]);
  return { api, stop: () => Promise.all([api.stop(), worker.stop()]).then(() => {}) };
}

async function main(): Promise<void> {
  const token = await mintToken(SECRET, {
    sub: 'alice',
    scopes: ['tasks:read', 'tasks:write'],
    ttl: '1h',
  });
  const sides = [await side('this', process.cwd()), await side('other', other!)];
  try {
    const sockets = await Promise.all(
      sides.map((s) => GqlSocket.open(`${s.api.url.replace(/^http/, 'ws')}/graphql`, token)),
    );
    const one = async (i: number) => {
      const started = performance.now();
      const id = await startTask(sides[i]!.api, token, 'sleep', { ms: 0 });
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no COMPLETED frame within 10 s')), 10_000);
        sockets[i]!.subscribe(FOLLOW, { id }, (raw) => {
          if (raw.includes('"COMPLETED"')) {
            clearTimeout(timer);
            resolve();
          } else if (raw.includes('"type":"error"')) reject(new Error(raw));
        });
      });
      return performance.now() - started;
    };
    const samples: number[][] = [[], []];
    for (let n = 0; n < EVENT_SAMPLES + 30; n++)
      for (const i of n % 2 ? [1, 0] : [0, 1]) {
        const ms = await one(i);
        if (n >= 30) samples[i]!.push(ms);
      }
    for (const s of sockets) s.close();
    const [a, b] = samples.map((s) => s.sort((x, y) => x - y)) as [number[], number[]];
    const line = (label: string, s: number[]) =>
      `${label}: p50 ${fmt(percentile(s, 50), 2)} ms, p99 ${fmt(percentile(s, 99), 2)} ms`;
    console.log(`${split ? 'api + worker' : 'ROLE=all'}, ${a.length} samples each, interleaved`);
    console.log(line('this tree ', a));
    console.log(line('other tree', b));
    console.log(
      `this/other: p50 ${(percentile(a, 50) / percentile(b, 50)).toFixed(2)}×, p99 ${(percentile(a, 99) / percentile(b, 99)).toFixed(2)}×`,
    );
  } finally {
    await Promise.all(sides.map((s) => s.stop()));
  }
}

try {
  await main();
} finally {
  agent.destroy();
  await pool.end();
}
process.exit(0);

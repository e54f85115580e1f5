import { Agent, request } from 'node:http';

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** The same text every time, or a fresh one per request (a JSON-RPC id, say). */
  body?: string | (() => string);
  /** Requests in flight at once, each on its own keep-alive connection. */
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  /** Refuses an answer that is not what the endpoint should say (counted as an error). */
  check?: (status: number, body: string) => boolean;
  /** The CPU each side spends over the measured stretch (see bench/cpu-split.ts). */
  cpu?: CpuWindow;
}

/** Starts when the warm-up ends; its result is the CPU ms each side spent until `end`. */
export type CpuWindow = () => Promise<{ end(): Promise<CpuSplit> }>;

/** CPU ms: the server process, Postgres, and this process (the load generator). */
export interface CpuSplit {
  server: number;
  postgres: number;
  client: number;
}

export interface LoadResult {
  requests: number;
  errors: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU ms a request over the measured stretch, when measured. */
  cpu?: CpuSplit | undefined;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The middle of `xs` (the upper one of an even count), as `percentile(sorted, 50)`. */
export function median(xs: readonly number[]): number {
  return percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );
}

function once(agent: Agent, options: LoadOptions): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      options.url,
      { method: options.method ?? 'GET', headers: options.headers, agent },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(typeof options.body === 'function' ? options.body() : options.body);
  });
}

/**
 * A closed-loop load: `concurrency` clients each send a request, wait for its answer, and
 * send the next, for `warmupMs` (not counted) then `durationMs`. Loopback only.
 */
export async function load(options: LoadOptions): Promise<LoadResult> {
  if (!/^http:\/\/127\.0\.0\.1:/.test(options.url))
    throw new Error(`load only goes to 127.0.0.1, not ${options.url}`);
  const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency });
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const warmupUntil = performance.now() + options.warmupMs;
  const until = warmupUntil + options.durationMs;
  const window = measureFrom(options.warmupMs, options.cpu);
  const client = async () => {
    for (;;) {
      const started = performance.now();
      if (started >= until) return;
      try {
        const { status, body } = await once(agent, options);
        const ok = options.check ? options.check(status, body) : status === 200;
        if (started >= warmupUntil) {
          if (ok) latencies.push(performance.now() - started);
          else {
            errors++;
            firstError ??= `${status} ${body.slice(0, 300)}`;
          }
        }
      } catch (err) {
        if (started >= warmupUntil) errors++;
        firstError ??= String(err);
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, client));
  const cpu = await window.end(latencies.length + errors);
  agent.destroy();
  if (firstError) console.error(`  (${errors} errors; first: ${firstError})`);
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    errors,
    perSecond: latencies.length / (options.durationMs / 1000),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    cpu,
  };
}

/**
 * The CPU window of a load: opened once `warmupMs` have passed, closed when the last request
 * is answered, and divided by the requests sent after the warm-up.
 */
function measureFrom(
  warmupMs: number,
  cpu: CpuWindow | undefined,
): { end(requests: number): Promise<CpuSplit | undefined> } {
  if (!cpu) return { end: async () => undefined };
  const opened = new Promise<{ end(): Promise<CpuSplit> }>((resolve, reject) =>
    setTimeout(() => cpu().then(resolve, reject), warmupMs),
  );
  return {
    async end(requests) {
      const spent = await (await opened).end();
      return {
        server: spent.server / requests,
        postgres: spent.postgres / requests,
        client: spent.client / requests,
      };
    },
  };
}

/** The same closed loop around any async operation (the driver alone, no HTTP). */
export async function loop(
  operation: () => Promise<unknown>,
  concurrency: number,
  warmupMs: number,
  durationMs: number,
  cpu?: CpuWindow,
): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  const warmupUntil = performance.now() + warmupMs;
  const until = warmupUntil + durationMs;
  const window = measureFrom(warmupMs, cpu);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (;;) {
        const started = performance.now();
        if (started >= until) return;
        try {
          await operation();
          if (started >= warmupUntil) latencies.push(performance.now() - started);
        } catch {
          if (started >= warmupUntil) errors++;
        }
      }
    }),
  );
  const spent = await window.end(latencies.length + errors);
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    errors,
    perSecond: latencies.length / (durationMs / 1000),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    cpu: spent,
  };
}

import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';

/**
 * The hostile-document loop of DESIGN §12, against a real server process: ~100 distinct
 * 200 KB documents of 100 000 tokens each, unauthenticated, and the server's resident memory
 * after each round. Before the parser's token limit and the byte-bounded parse cache, each
 * such document kept ~48 MiB for an hour and about a hundred ended the process.
 *
 *   npx tsx bench/hostile-heap.ts [root]   # root: a checkout to measure (default: this one)
 *
 * The server runs in production against the Postgres at HEAP_DATABASE_URL (default: database
 * taskhandle_heap on this machine, created beforehand), so its resident memory is its own,
 * with its heap capped at HEAP_MIB so that a leak ends it instead of the machine.
 */

const ROOT = resolve(process.argv[2] ?? '.');
const HEAP_MIB = Number(process.env.HEAP_MIB ?? 768);
const DOCUMENTS = Number(process.env.DOCUMENTS ?? 100);
const ROUNDS = Number(process.env.ROUNDS ?? 3);

function freePort(): Promise<number> {
  return new Promise((done) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => done(port));
    });
  });
}

const rssMiB = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

/** A distinct document of 100 000 tokens (~200 KB): `{ a a a … }` with a unique field first. */
const hostile = (i: number) => `{ f${i} ${'a '.repeat(100_000)}}`;

async function main(): Promise<void> {
  const port = await freePort();
  const server: ChildProcess = spawn(
    process.execPath,
    [`--max-old-space-size=${HEAP_MIB}`, '--import', 'tsx', 'src/main.ts'],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_ENV: 'production',
        AUTH_JWT_SECRET: 'taskhandle-bench-secret-0123456789abcdef0123',
        DATABASE_URL:
          process.env.HEAP_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/taskhandle_heap',
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  let exited: string | undefined;
  server.on('exit', (code, signal) => {
    exited = `exited (${signal ?? code})`;
  });
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    if (exited) throw new Error(`server ${exited} before it listened`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {}
    await new Promise((r) => setTimeout(r, 200));
  }
  const pid = server.pid as number;
  const start = rssMiB(pid);
  console.log(`root ${ROOT}: RSS at start ${start.toFixed(0)} MiB (heap cap ${HEAP_MIB} MiB)`);
  let peak = start;
  let worstMs = 0;
  let sent = 0;
  for (let round = 1; round <= ROUNDS && !exited; round++) {
    for (let i = 0; i < DOCUMENTS && !exited; i++) {
      const began = performance.now();
      try {
        await fetch(`${url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: hostile(i) }),
        }).then((r) => r.text());
      } catch {
        break; // the server died mid-request
      }
      worstMs = Math.max(worstMs, performance.now() - began);
      if (exited) break;
      sent += 1;
      peak = Math.max(peak, rssMiB(pid));
    }
    if (!exited && sent === round * DOCUMENTS)
      console.log(`round ${round}: ${DOCUMENTS} documents, RSS ${rssMiB(pid).toFixed(0)} MiB`);
  }
  console.log(
    exited
      ? `server ${exited} after ${sent} documents; peak RSS ${peak.toFixed(0)} MiB`
      : `alive; RSS ${start.toFixed(0)} → ${rssMiB(pid).toFixed(0)} MiB (peak ${peak.toFixed(0)}); slowest answer ${worstMs.toFixed(0)} ms`,
  );
  server.kill('SIGTERM');
  if (exited) process.exitCode = 1;
}

await main();

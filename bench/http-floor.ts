import { Agent, request } from 'node:http';

/**
 * A bare keep-alive node:http client, 16 requests at a time, posting bodies the size and shape
 * of a delivery's (unsigned, no database) to FLOOR_URL from a process of its own: what sending
 * webhooks costs at the least. With FLOOR_REQUESTS it posts that many (after FLOOR_WARMUP) and
 * reports its CPU a request; without, it posts as many as the harness's `post` messages say
 * (the webhooks row's floor round: two a task, as the tasks are accepted).
 */
const url = new URL(process.env.FLOOR_URL!);
const agent = new Agent({ keepAlive: true, maxSockets: 16 });
const padding = 'x'.repeat(320);

function post(): Promise<void> {
  const body = JSON.stringify({
    type: 'task.status',
    timestamp: new Date().toISOString(),
    data: { taskId: crypto.randomUUID(), status: 'completed', padding },
    version: 2,
  });
  return new Promise<void>((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'webhook-id': crypto.randomUUID(),
          'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
          'webhook-signature': `v1,${'A'.repeat(44)}`,
        },
      },
      (res) => {
        res.resume();
        res.on('end', resolve);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Requests asked for and not yet sent; 16 senders take from it. */
let owed = 0;
const idle: Array<() => void> = [];
async function sender(): Promise<void> {
  for (;;) {
    while (owed === 0) await new Promise<void>((r) => idle.push(r));
    owed--;
    await post();
  }
}

async function run(n: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next++ < n) await post();
    }),
  );
}

const requests = Number(process.env.FLOOR_REQUESTS ?? 0);
let result = { cpuMs: 0, perSecond: 0 };
if (requests > 0) {
  await run(Number(process.env.FLOOR_WARMUP ?? 0));
  const before = process.cpuUsage();
  const started = performance.now();
  await run(requests);
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(before);
  result = { cpuMs: (used.user + used.system) / 1000 / requests, perSecond: requests / seconds };
} else {
  for (let i = 0; i < 16; i++) void sender();
}
process.on('message', (m: { type: string; n?: number }) => {
  if (m.type === 'result') process.send!({ type: 'result', ...result });
  if (m.type === 'cpu') process.send!({ type: 'cpu', ...process.cpuUsage() });
  if (m.type === 'post') {
    process.send!({ type: 'post' });
    owed += m.n!;
    for (const resume of idle.splice(0, m.n!)) resume();
  }
});
process.send!({ type: 'listening', url: '' });

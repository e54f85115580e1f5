import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskKind } from '../../src/index.js';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { ROOT } from '../helpers/process.js';
import { requestBody } from '../helpers/receiver.js';

/**
 * docs/kinds.md's worked example, a payment callback through `ctx.signalUrl`, runs as
 * written: the block after its "tested by" marker is taken from the page, its import of
 * 'taskhandle' pointed at this checkout, and driven against a payment provider played here.
 */

const MARKER = '<!-- tested by test/kinds/docs-example.test.ts';

/** The example's code, as the page shows it. */
function example(): string {
  const page = readFileSync(join(ROOT, 'docs/kinds.md'), 'utf8');
  const after = page.slice(page.indexOf(MARKER));
  const block = /```ts\n([\s\S]*?)\n```/.exec(after);
  if (!page.includes(MARKER) || !block) throw new Error('docs/kinds.md has no tested example');
  return block[1]!;
}

interface Call {
  path: string;
  key: string | undefined;
  body: any;
}

let provider: Server;
const calls: Call[] = [];
let t: TestApp;
let alice: string;
let checkout: TaskKind<any, any>;
let file: string;

async function bodyOf(req: IncomingMessage): Promise<any> {
  return JSON.parse((await requestBody(req)) || 'null');
}

beforeAll(async () => {
  // The provider: creates payment pay_1 (the same one for a repeated key), captures it.
  provider = createServer(async (req, res) => {
    const call = {
      path: req.url ?? '',
      key: req.headers['idempotency-key'] as string | undefined,
      body: await bodyOf(req),
    };
    calls.push(call);
    res.setHeader('content-type', 'application/json');
    if (call.path === '/payments') return res.end(JSON.stringify({ id: 'pay_1' }));
    if (call.path === '/payments/pay_1/capture')
      return res.end(JSON.stringify({ receipt: 'rcpt_9' }));
    res.statusCode = 404;
    res.end('{}');
  });
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  process.env.PAYMENTS_URL = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;

  const dir = join(ROOT, 'test/.docs');
  mkdirSync(dir, { recursive: true });
  file = join(dir, `checkout-${process.pid}.ts`);
  writeFileSync(
    file,
    example().replace("from 'taskhandle'", `from ${JSON.stringify(join(ROOT, 'src/index.js'))}`),
  );
  ({ checkout } = await import(file));
  t = await startTestApp({ kinds: [checkout] });
  alice = await t.token('alice');
});
afterAll(async () => {
  await t?.stop();
  await new Promise((resolve) => provider?.close(resolve));
  delete process.env.PAYMENTS_URL;
  if (file) rmSync(file, { force: true });
});

const GET = `query($id: ID!) { task(id: $id) { status statusMessage result error { code }
  steps { name state signalUrl } } }`;
const read = async (id: string) => (await t.gql(GET, { id }, alice)).data.task;

describe('the payment callback of docs/kinds.md', () => {
  it('creates the payment once, waits holding nothing, and captures once the provider calls back', async () => {
    const started = await t.gql(
      `mutation($input: StartTaskInput!) { startTask(input: $input) { id } }`,
      { input: { kind: 'checkout', input: { orderId: 'o-17', amountCents: 1250 } } },
      alice,
    );
    expect(started.errors).toBeUndefined();
    const id: string = started.data.startTask.id;

    const waiting = await eventually(async () => {
      const task = await read(id);
      return task.steps.some((s: any) => s.name === 'settled' && s.state === 'WAITING_SIGNAL') &&
        task.statusMessage
        ? task
        : undefined;
    });
    expect(waiting.status).toBe('WORKING');
    expect(waiting.statusMessage).toMatch(/^Waiting for signal "settled" until /);
    expect(t.app.runner?.holds(id)).toBe(false);
    const [create] = calls;
    expect(create).toMatchObject({
      path: '/payments',
      key: `${id}:create-payment`,
      body: { amount: 1250, reference: 'o-17' },
    });
    const callbackUrl: string = create!.body.callbackUrl;
    expect(waiting.steps.find((s: any) => s.name === 'settled').signalUrl).toBe(callbackUrl);

    // The provider calls back without a token; a payload the wait's schema refuses is not kept.
    const post = (body: unknown) =>
      fetch(callbackUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect((await post({ status: 'paid?' })).status).toBe(422);
    const settled = { paymentId: 'pay_1', status: 'succeeded' };
    const first = await post(settled);
    expect(first.status).toBe(202);
    expect(await first.json()).toEqual({ received: true, first: true });
    // Its retry of the same callback is answered alike.
    expect((await post(settled)).status).toBe(202);

    const done = await eventually(async () => {
      const task = await read(id);
      return task.status === 'WORKING' ? undefined : task;
    });
    expect(done).toMatchObject({
      status: 'COMPLETED',
      result: { paymentId: 'pay_1', receipt: 'rcpt_9' },
    });
    expect(calls.map((c) => `${c.path} ${c.key}`)).toEqual([
      `/payments ${id}:create-payment`,
      `/payments/pay_1/capture ${id}:capture`,
    ]);
    // The URL died with the task.
    expect((await post(settled)).status).toBe(404);
  });
});

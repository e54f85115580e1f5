import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind } from '../../src/tasks/kinds.js';
import {
  ADMIN_SCOPES,
  capturingLog,
  eventually,
  startTestApp,
  type TestApp,
} from '../helpers/app.js';
import { hold, untilAborted } from '../helpers/kinds.js';
import { restClient } from '../helpers/rest.js';

/** cancelTasks and POST /v1/jobs/cancel (DESIGN §15), on one process. */

const { log, lines } = capturingLog();

/** Why each handler of `watched` was stopped, by task id. */
const aborted = new Map<string, unknown>();
const watched = defineTaskKind({
  name: 'watched',
  description: 'waits until cancelled, and records that it was',
  inputSchema: { type: 'object' },
  run: ({ signal, taskId }) => untilAborted(signal, (reason) => aborted.set(taskId, reason)),
});

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id } }`;
const CANCEL = `mutation($filter: TaskFilter!) { cancelTasks(filter: $filter) { matched cancelled } }`;
const STATUS = `query($id: ID!) { task(id: $id) { status } }`;

let t: TestApp;
let alice: string;
let bob: string;
let root: string;
let api: ReturnType<typeof restClient>;
beforeAll(async () => {
  t = await startTestApp({
    kinds: [hold, watched],
    log,
    env: { RUNNER_CONCURRENCY: '50' },
  });
  alice = await t.token('alice');
  bob = await t.token('bob');
  root = await t.token('root', ADMIN_SCOPES);
  api = restClient(t.url);
});
afterAll(() => t?.stop());

async function start(token: string, kind: string, labels: Record<string, string>) {
  const res = await t.gql(START, { input: { kind, labels } }, token);
  expect(res.errors).toBeUndefined();
  return res.data.startTask.id as string;
}

const statusOf = async (id: string, token = alice) =>
  (await t.gql(STATUS, { id }, token)).data.task.status as string;

describe('cancelTasks', () => {
  it('cancels every matching active task, aborts each running handler, and counts the rest', async () => {
    const running = await Promise.all(
      Array.from({ length: 6 }, () => start(alice, 'watched', { batch: 'one' })),
    );
    const other = await start(alice, 'watched', { batch: 'two' });
    // Every handler is running before the cancel, so each abort is one a runner did.
    await eventually(async () =>
      (
        await t.app.db.kysely
          .selectFrom('tasks')
          .select('id')
          .where('id', 'in', running)
          .where('worker_id', 'is not', null)
          .execute()
      ).length === running.length
        ? true
        : undefined,
    );
    await t.gql(`mutation($id: ID!) { cancelTask(id: $id) { id } }`, { id: running[0] }, alice);
    const from = lines.length;
    const res = await t.gql(CANCEL, { filter: { labels: { batch: 'one' } } }, alice);
    expect(res.errors).toBeUndefined();
    expect(res.data.cancelTasks).toEqual({ matched: 6, cancelled: 5 });
    for (const id of running) expect(await statusOf(id)).toBe('CANCELLED');
    expect(await statusOf(other)).toBe('WORKING');
    await eventually(async () => (running.every((id) => aborted.has(id)) ? true : undefined));
    // Audited once, with the filter and the counts.
    const audit = lines.slice(from).filter((l) => l.audit && l.operation === 'cancelTasks');
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      principal: 'alice',
      owner: 'alice',
      outcome: 'cancelled',
      matched: 6,
      cancelled: 5,
      filter: { labels: { batch: 'one' } },
    });
  });

  it('refuses an empty filter as BAD_USER_INPUT, and cancels everything when the statuses are named', async () => {
    const empty = await t.gql(CANCEL, { filter: {} }, bob);
    expect(empty.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const ids = await Promise.all([start(bob, 'hold', {}), start(bob, 'hold', { x: 'y' })]);
    const res = await t.gql(CANCEL, { filter: { status: ['WORKING', 'INPUT_REQUIRED'] } }, bob);
    expect(res.data.cancelTasks).toEqual({ matched: 2, cancelled: 2 });
    for (const id of ids) expect(await statusOf(id, bob)).toBe('CANCELLED');
  });

  it("cancels only the caller's tasks; an admin names another owner with owner", async () => {
    const carol = await t.token('carol');
    const dave = await t.token('dave');
    const carols = await start(carol, 'hold', { shared: 'yes' });
    const daves = await start(dave, 'hold', { shared: 'yes' });
    const own = await t.gql(CANCEL, { filter: { labels: { shared: 'yes' } } }, carol);
    expect(own.data.cancelTasks).toEqual({ matched: 1, cancelled: 1 });
    expect(await statusOf(daves, dave)).toBe('WORKING');
    const refused = await t.gql(
      CANCEL,
      { filter: { labels: { shared: 'yes' }, owner: 'dave' } },
      carol,
    );
    expect(refused.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(await statusOf(daves, dave)).toBe('WORKING');
    const admin = await t.gql(
      CANCEL,
      { filter: { labels: { shared: 'yes' }, owner: 'dave' } },
      root,
    );
    expect(admin.data.cancelTasks).toEqual({ matched: 1, cancelled: 1 });
    expect(await statusOf(daves, dave)).toBe('CANCELLED');
    expect(await statusOf(carols, carol)).toBe('CANCELLED');
  });

  it('takes the filter as the body of POST /v1/jobs/cancel, statuses lower-case', async () => {
    const erin = await t.token('erin');
    const ids = await Promise.all([
      start(erin, 'hold', { batch: 'x' }),
      start(erin, 'hold', { batch: 'x' }),
      start(erin, 'watched', { batch: 'x' }),
    ]);
    const res = await api('POST', '/v1/jobs/cancel', {
      token: erin,
      body: { status: ['working'], kind: ['hold'], labels: { batch: 'x' } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ matched: 2, cancelled: 2 });
    expect(await statusOf(ids[2] as string, erin)).toBe('WORKING');
    const empty = await api('POST', '/v1/jobs/cancel', { token: erin, body: {} });
    expect(empty.status).toBe(422);
    expect(empty.body.code).toBe('BAD_USER_INPUT');
    const unknown = await api('POST', '/v1/jobs/cancel', { token: erin, body: { colour: 'red' } });
    expect(unknown.status).toBe(422);
    const readOnly = await t.token('erin', ['tasks:read']);
    const forbidden = await api('POST', '/v1/jobs/cancel', {
      token: readOnly,
      body: { status: ['working'] },
    });
    expect(forbidden.status).toBe(403);
    expect(await statusOf(ids[2] as string, erin)).toBe('WORKING');
  });
});

import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_SCOPES, eventually, startTestApp, type TestApp } from '../helpers/app.js';

/**
 * The audit trail: one pino line per task operation (principal, operation, taskId, outcome),
 * refused ones included, and never a token or a payload anywhere in the log.
 */

const SECRET_QUESTION = `question-${randomUUID()}`;
const SECRET_COMMENT = `comment-${randomUUID()}`;

/** Every line the app logged, raw and parsed. */
const raw: string[] = [];
const sink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    raw.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    done();
  },
});

interface AuditLine {
  principal: string | null;
  operation: string;
  taskId: string | null;
  outcome: string;
}

function auditLines(from = 0): AuditLine[] {
  return raw
    .slice(from)
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => entry.audit === true)
    .map(
      ({ principal, operation, taskId, outcome }) =>
        ({ principal, operation, taskId, outcome }) as AuditLine,
    );
}

/** Runs `act` and returns the audit lines it wrote. */
async function audited(act: () => Promise<unknown>): Promise<AuditLine[]> {
  const from = raw.length;
  await act();
  return auditLines(from);
}

let t: TestApp;
const tokens: string[] = [];
let alice: string;
let bob: string;
let admin: string;
let readOnly: string;

const START = 'mutation($input: StartTaskInput!) { startTask(input: $input) { id } }';
const GET =
  'query($id: ID!) { task(id: $id) { id status input result inputRequest { message } owner } }';

async function startApproval(): Promise<string> {
  const started = await t.gql(
    START,
    { input: { kind: 'approval', input: { question: SECRET_QUESTION } } },
    alice,
  );
  const id: string = started.data.startTask.id;
  await eventually(async () =>
    (await t.gql(GET, { id }, alice)).data?.task?.status === 'INPUT_REQUIRED' ? true : undefined,
  );
  return id;
}

beforeAll(async () => {
  // Trace: nothing the server logs at any level may carry a token or a payload.
  t = await startTestApp({ log: pino({ level: 'trace' }, sink) });
  alice = await t.token('alice');
  bob = await t.token('bob');
  admin = await t.token('root', ADMIN_SCOPES);
  readOnly = await t.token('alice', ['tasks:read']);
  tokens.push(alice, bob, admin, readOnly);
});
afterAll(() => t?.stop());

describe('the audit log', () => {
  it('writes one line for each GraphQL task operation', async () => {
    let id = '';
    expect(
      await audited(async () => {
        id = (
          await t.gql(
            START,
            { input: { kind: 'approval', input: { question: SECRET_QUESTION } } },
            alice,
          )
        ).data.startTask.id;
      }),
    ).toEqual([{ principal: 'alice', operation: 'startTask', taskId: id, outcome: 'created' }]);
    await eventually(async () =>
      (await t.gql(GET, { id }, alice)).data?.task?.status === 'INPUT_REQUIRED' ? true : undefined,
    );

    expect(await audited(() => t.gql(GET, { id }, alice))).toEqual([
      { principal: 'alice', operation: 'task', taskId: id, outcome: 'ok' },
    ]);
    expect(await audited(() => t.gql('{ tasks { edges { cursor } } }', {}, alice))).toEqual([
      {
        principal: 'alice',
        operation: 'tasks',
        taskId: null,
        outcome: expect.stringMatching(/^ok/),
      },
    ]);

    const follow = t.ws(alice);
    const subscribed = await audited(
      () =>
        new Promise<void>((resolve) => {
          follow.subscribe(
            {
              query: 'subscription($id: ID!) { taskUpdated(id: $id) { version } }',
              variables: { id },
            },
            { next: () => resolve(), error: () => resolve(), complete: () => resolve() },
          );
        }),
    );
    expect(subscribed).toEqual([
      { principal: 'alice', operation: 'taskUpdated', taskId: id, outcome: 'subscribed' },
    ]);

    const answer =
      'mutation($id: ID!, $value: JSON!) { provideTaskInput(id: $id, key: "decision", value: $value) { id } }';
    expect(
      await audited(() =>
        t.gql(answer, { id, value: { approved: true, comment: SECRET_COMMENT } }, alice),
      ),
    ).toEqual([
      { principal: 'alice', operation: 'provideTaskInput', taskId: id, outcome: 'answered' },
    ]);

    const other = await startApproval();
    expect(
      await audited(() =>
        t.gql('mutation($id: ID!) { cancelTask(id: $id) { id } }', { id: other }, alice),
      ),
    ).toEqual([
      { principal: 'alice', operation: 'cancelTask', taskId: other, outcome: 'cancelled' },
    ]);
  });

  it("records a look at someone else's task as not_found, and an admin's read as one line", async () => {
    const id = await startApproval();
    expect(await audited(() => t.gql(GET, { id }, bob))).toEqual([
      { principal: 'bob', operation: 'task', taskId: id, outcome: 'not_found' },
    ]);
    // The payload fields an admin may not read resolve to null without a line of their own.
    expect(await audited(() => t.gql(GET, { id }, admin))).toEqual([
      { principal: 'root', operation: 'task', taskId: id, outcome: 'ok' },
    ]);
  });

  it('records refused operations: missing scope and missing token', async () => {
    const id = await startApproval();
    expect(
      await audited(() => t.gql(START, { input: { kind: 'sleep', input: { ms: 1 } } }, readOnly)),
    ).toEqual([{ principal: 'alice', operation: 'startTask', taskId: null, outcome: 'FORBIDDEN' }]);
    expect(
      await audited(() => t.gql('mutation($id: ID!) { cancelTask(id: $id) { id } }', { id }, null)),
    ).toEqual([
      { principal: null, operation: 'cancelTask', taskId: id, outcome: 'UNAUTHENTICATED' },
    ]);
    const writeOnly = t.ws(await t.token('alice', ['tasks:write']));
    const refusedSubscription = await audited(
      () =>
        new Promise<void>((resolve) => {
          writeOnly.subscribe(
            {
              query: 'subscription($id: ID!) { taskUpdated(id: $id) { version } }',
              variables: { id },
            },
            { next: () => undefined, error: () => resolve(), complete: () => resolve() },
          );
        }),
    );
    expect(refusedSubscription).toEqual([
      { principal: 'alice', operation: 'taskUpdated', taskId: id, outcome: 'FORBIDDEN' },
    ]);
  });

  it('writes the same lines for the REST face', async () => {
    const post = (path: string, token: string, body: unknown) =>
      fetch(`${t.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    let id = '';
    expect(
      await audited(async () => {
        id = (
          (await (
            await post('/v1/jobs', alice, { kind: 'sleep', input: { ms: 600_000 } })
          ).json()) as {
            taskId: string;
          }
        ).taskId;
      }),
    ).toEqual([{ principal: 'alice', operation: 'startTask', taskId: id, outcome: 'created' }]);
    expect(
      await audited(() =>
        fetch(`${t.url}/v1/jobs/${id}`, { headers: { authorization: `Bearer ${alice}` } }),
      ),
    ).toEqual([{ principal: 'alice', operation: 'task', taskId: id, outcome: 'ok' }]);
    expect(
      await audited(() =>
        fetch(`${t.url}/v1/jobs/${id}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${readOnly}` },
        }),
      ),
    ).toEqual([{ principal: 'alice', operation: 'cancelTask', taskId: id, outcome: 'FORBIDDEN' }]);
    expect(
      await audited(() =>
        fetch(`${t.url}/v1/jobs/${id}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${admin}` },
        }),
      ),
    ).toEqual([{ principal: 'root', operation: 'cancelTask', taskId: id, outcome: 'cancelled' }]);
  });

  it('records a call refused for want of a valid token on MCP and A2A, as on REST', async () => {
    const forged = `${alice.slice(0, -4)}AAAA`;
    const call = (path: string, token: string | null, headers: Record<string, string>) =>
      fetch(`${t.url}${path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...headers,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
    const faces: Array<[operation: string, path: string, headers: Record<string, string>]> = [
      ['mcp', '/mcp', { accept: 'application/json, text/event-stream' }],
      ['a2a', '/a2a', { 'a2a-version': '1.0' }],
    ];
    for (const [operation, path, headers] of faces) {
      for (const token of [null, forged]) {
        let status = 0;
        expect(
          await audited(async () => {
            status = (await call(path, token, headers)).status;
          }),
        ).toEqual([{ principal: null, operation, taskId: null, outcome: 'UNAUTHENTICATED' }]);
        expect(status).toBe(401);
      }
    }
    expect(
      await audited(() =>
        fetch(`${t.url}/v1/jobs`, { headers: { authorization: `Bearer ${forged}` } }),
      ),
    ).toEqual([{ principal: null, operation: 'tasks', taskId: null, outcome: 'UNAUTHENTICATED' }]);
  });

  it('never logs a token or a payload, at any level', () => {
    expect(raw.length).toBeGreaterThan(10);
    const log = raw.join('\n');
    for (const token of tokens) {
      expect(log).not.toContain(token);
      expect(log).not.toContain(token.split('.')[2]);
    }
    expect(log).not.toContain(SECRET_QUESTION);
    expect(log).not.toContain(SECRET_COMMENT);
  });
});

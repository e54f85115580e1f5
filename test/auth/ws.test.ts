import { type Client, createClient } from 'graphql-ws';
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { mintToken } from '../../src/auth/mint.js';
import { eventually, type GraphQLResponse } from '../helpers/app.js';
import { admin, alice, t, useFileApp } from '../helpers/file-app.js';

/** The WebSocket face: who may connect, how long a socket lives, what an admin's subscription carries. */

useFileApp();

const QUESTION = 'Publish the salaries spreadsheet?';
const FOLLOW =
  'subscription($id: ID!) { taskUpdated(id: $id) { id status statusMessage version input result inputRequest { key message } owner } }';
const KINDS = '{ taskKinds { name } }';

/** What a client gets for one operation: its first result, or the code the socket was closed with. */
type Answer = GraphQLResponse & { closeCode?: number };

function firstAnswer(
  token: string | null,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<Answer> {
  const client = t.ws(token);
  return new Promise<Answer>((resolve) => {
    client.subscribe(
      { query, variables },
      {
        next: (value) => resolve(value as Answer),
        error: (err) => resolve({ closeCode: (err as { code?: number }).code ?? -1 }),
        complete: () => undefined,
      },
    );
  }).finally(() => client.dispose());
}

/** Follows a task: `first` resolves with the first event, `all` with every event once it completes. */
function follow(
  client: Client,
  id: string,
): { first: Promise<void>; all: Promise<{ events: any[]; error?: unknown }> } {
  let seen: () => void = () => undefined;
  const first = new Promise<void>((resolve) => (seen = resolve));
  const all = new Promise<{ events: any[]; error?: unknown }>((resolve) => {
    const events: any[] = [];
    client.subscribe(
      { query: FOLLOW, variables: { id } },
      {
        next: (value) => {
          events.push(value.data);
          seen();
        },
        error: (error) => {
          seen();
          resolve({ events, error });
        },
        complete: () => resolve({ events }),
      },
    );
  });
  return { first, all };
}

async function startApproval(): Promise<string> {
  const started = await t.gql(
    'mutation($q: String!) { startTask(input: { kind: "approval", input: { question: $q } }) { id } }',
    { q: QUESTION },
    alice,
  );
  const id: string = started.data.startTask.id;
  await eventually(async () => {
    const read = await t.gql('query($id: ID!) { task(id: $id) { status } }', { id }, alice);
    return read.data?.task?.status === 'INPUT_REQUIRED' ? true : undefined;
  });
  return id;
}

describe('connecting', () => {
  it('closes a connection_init without a token with 4403', async () => {
    expect(await firstAnswer(null, KINDS)).toEqual({ closeCode: 4403 });
  });

  it('closes a connection_init with a refused token with 4403', async () => {
    const expired = await t.token('alice', undefined, -60);
    const forged = await mintToken('not-the-server-secret-0123456789abcdef', {
      sub: 'alice',
      scopes: ['tasks:read'],
    });
    for (const token of [expired, forged, 'not.a.jwt'])
      expect(await firstAnswer(token, KINDS)).toEqual({ closeCode: 4403 });
  });

  it('accepts a valid token, with or without the Bearer prefix', async () => {
    expect((await firstAnswer(alice, KINDS)).data.taskKinds.length).toBeGreaterThan(0);
    const bare = createClient({
      url: t.wsUrl,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      connectionParams: { authorization: alice },
    });
    const answer = await new Promise<any>((resolve) =>
      bare.subscribe(
        { query: KINDS },
        { next: resolve, error: resolve, complete: () => undefined },
      ),
    );
    await bare.dispose();
    expect(answer.data.taskKinds.length).toBeGreaterThan(0);
  });
});

describe('operations over the socket', () => {
  it('answers a missing scope with FORBIDDEN and its code, for queries and mutations alike', async () => {
    const readOnly = await t.token('alice', ['tasks:read']);
    const writeOnly = await t.token('alice', ['tasks:write']);
    const start = await firstAnswer(
      readOnly,
      'mutation { startTask(input: { kind: "sleep", input: { ms: 1 } }) { id } }',
    );
    const list = await firstAnswer(writeOnly, '{ tasks { edges { cursor } } }');
    for (const answer of [start, list]) {
      expect(answer.errors).toHaveLength(1);
      expect(answer.errors![0]!.extensions?.code).toBe('FORBIDDEN');
      expect(answer.errors![0]!.message).not.toBe('Unexpected error.');
    }
  });
});

// Concurrent: each waits for a token to expire, with the verifier's 5 s of clock tolerance.
describe.concurrent('token expiry', () => {
  it('closes the socket with 4403 once its token expires, ending the subscription', async () => {
    const started = await t.gql(
      'mutation { startTask(input: { kind: "sleep", input: { ms: 600000 } }) { id } }',
      {},
      alice,
    );
    const id: string = started.data.startTask.id;
    const shortLived = await t.token('alice', ['tasks:read'], 2);
    const { exp } = decodeJwt(shortLived);
    const client = t.ws(shortLived);
    const events: unknown[] = [];
    const closed = await new Promise<{ code: number; at: number }>((resolve) => {
      client.subscribe(
        { query: FOLLOW, variables: { id } },
        {
          next: (value) => events.push(value.data),
          error: (err) => resolve({ code: (err as { code?: number }).code ?? -1, at: Date.now() }),
          complete: () => resolve({ code: 0, at: Date.now() }),
        },
      );
    });
    expect(closed.code).toBe(4403);
    // The socket worked while the token was valid, and was not closed before the token's exp.
    expect(events.length).toBeGreaterThanOrEqual(1);
    expect(closed.at).toBeGreaterThanOrEqual(exp! * 1000);
    await client.dispose();
  });

  it('ends a Server-Sent Events subscription once its token expires', async () => {
    const started = await t.gql(
      'mutation { startTask(input: { kind: "sleep", input: { ms: 600000 } }) { id } }',
      {},
      alice,
    );
    const id: string = started.data.startTask.id;
    const shortLived = await t.token('alice', ['tasks:read'], 2);
    const { exp } = decodeJwt(shortLived);
    const response = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        authorization: `Bearer ${shortLived}`,
      },
      body: JSON.stringify({ query: FOLLOW, variables: { id } }),
    });
    const body = await response.text(); // resolves only once the server ends the stream
    const endedAt = Date.now();
    expect(body).toMatch(/"status":"WORKING"/);
    expect(endedAt).toBeGreaterThanOrEqual(exp! * 1000);
    // The task itself goes on: only the expired credentials' stream ended.
    expect(
      (await t.gql('query($id: ID!) { task(id: $id) { status } }', { id }, alice)).data.task.status,
    ).toBe('WORKING');
  });
});

describe('what a subscription carries', () => {
  it("gives an admin the status and owner of another principal's task, never its payloads", async () => {
    const id = await startApproval();
    const asAdmin = follow(t.ws(admin), id);
    const asOwner = follow(t.ws(alice), id);
    // Answer only once both have the current state (INPUT_REQUIRED), so both see every later version.
    await Promise.all([asAdmin.first, asOwner.first]);
    const answered = await t.gql(
      'mutation($id: ID!) { provideTaskInput(id: $id, key: "decision", value: { approved: false }) { id } }',
      { id },
      alice,
    );
    expect(answered.errors).toBeUndefined();

    const [admins, owners] = await Promise.all([asAdmin.all, asOwner.all]);
    expect(admins.error).toBeUndefined();
    expect(owners.error).toBeUndefined();
    expect(admins.events.map((e) => e.taskUpdated.status)).toEqual(
      expect.arrayContaining(['INPUT_REQUIRED', 'COMPLETED']),
    );
    for (const { taskUpdated } of admins.events) {
      expect(taskUpdated).toMatchObject({
        id,
        owner: 'alice',
        input: null,
        result: null,
        inputRequest: null,
      });
      expect(JSON.stringify(taskUpdated)).not.toContain(QUESTION);
    }
    // The owner's subscription, on the same events, carries them.
    expect(owners.events.at(-1).taskUpdated).toMatchObject({
      status: 'COMPLETED',
      input: { question: QUESTION },
      result: { approved: false },
      owner: null,
    });
  });
});

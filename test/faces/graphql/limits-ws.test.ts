import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestApp, type TestApp } from '../../helpers/app.js';

/** WebSocket rows of DESIGN §12: frame size, subscriptions per socket, one bad operation fails alone. */

let t: TestApp;
let alice: string;
let taskId: string;
beforeAll(async () => {
  t = await startTestApp({
    env: { WS_MAX_PAYLOAD_BYTES: String(64 * 1024), WS_MAX_SUBSCRIPTIONS_PER_SOCKET: '3' },
  });
  alice = await t.token('alice');
  const started = await t.gql(
    'mutation { startTask(input: { kind: "sleep", input: { ms: 3600000 } }) { id } }',
    {},
    alice,
  );
  taskId = started.data.startTask.id;
});
afterAll(() => t?.stop());

type Message = { type: string; id?: string; payload?: any };

/** A graphql-ws socket spoken by hand, to see every message and the close code. */
class Socket {
  readonly ws: WebSocket;
  private messages: Message[] = [];
  private wake: (() => void) | undefined;
  readonly closed: Promise<{ code: number; reason: string }>;

  constructor(url: string) {
    this.ws = new WebSocket(url, 'graphql-transport-ws');
    this.ws.on('message', (data) => {
      this.messages.push(JSON.parse(String(data)) as Message);
      this.wake?.();
    });
    this.closed = new Promise((resolve) =>
      this.ws.on('close', (code, reason) => {
        this.wake?.();
        resolve({ code, reason: String(reason) });
      }),
    );
  }

  async open(token: string): Promise<void> {
    await new Promise((resolve) => this.ws.once('open', resolve));
    this.send({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } });
    await this.next((m) => m.type === 'connection_ack');
  }

  send(message: Message | string): void {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /** The first message (from now on or already received) that `match` accepts. */
  async next(match: (m: Message) => boolean): Promise<Message> {
    for (;;) {
      const index = this.messages.findIndex(match);
      if (index >= 0) return this.messages.splice(index, 1)[0] as Message;
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error('socket closed');
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }

  subscribe(id: string, query: string): void {
    this.send({ type: 'subscribe', id, payload: { query } });
  }
}

const follow = (id: string) => `subscription { taskUpdated(id: "${id}") { id status } }`;

describe('WebSocket limits', () => {
  it('closes a socket sending a frame over WS_MAX_PAYLOAD_BYTES with 1009', async () => {
    const s = new Socket(t.wsUrl);
    await s.open(alice);
    s.send({
      type: 'subscribe',
      id: '1',
      payload: { query: '{ __typename }', variables: { pad: 'x'.repeat(128 * 1024) } },
    });
    expect((await s.closed).code).toBe(1009);
  });

  it('refuses the subscription past WS_MAX_SUBSCRIPTIONS_PER_SOCKET, and only that one', async () => {
    const s = new Socket(t.wsUrl);
    await s.open(alice);
    for (const id of ['1', '2', '3']) {
      s.subscribe(id, follow(taskId));
      await s.next((m) => m.type === 'next' && m.id === id);
    }
    s.subscribe('4', follow(taskId));
    const refused = await s.next((m) => m.id === '4');
    expect(refused.type).toBe('error');
    expect(refused.payload[0].extensions.code).toBe('TOO_MANY_SUBSCRIPTIONS');
    // The others live on; completing one makes room for another.
    s.send({ type: 'complete', id: '1' });
    s.subscribe('5', follow(taskId));
    expect((await s.next((m) => m.id === '5')).type).toBe('next');
    s.subscribe('6', '{ __typename }');
    expect((await s.next((m) => m.id === '6')).payload[0]?.extensions?.code).toBe(
      'TOO_MANY_SUBSCRIPTIONS',
    );
    expect(s.ws.readyState).toBe(WebSocket.OPEN);
    s.ws.close();
  });

  it('fails an operation too deep to parse alone, coded, without internals', async () => {
    const s = new Socket(t.wsUrl);
    await s.open(alice);
    s.subscribe('live', follow(taskId));
    await s.next((m) => m.type === 'next' && m.id === 'live');
    for (const [id, query] of [
      ['deep', `{ ${'a { '.repeat(3_000)} id ${'} '.repeat(3_000)} }`],
      ['list', `{ task(id: ${'['.repeat(4_000)}1${']'.repeat(4_000)}) { id } }`],
      ['long', `{ ${'a '.repeat(20_000)} }`],
      ['syntax', '{ task(id: '],
      ['unknown', '{ nope }'],
    ] as const) {
      s.subscribe(id, query);
      const answer = await s.next((m) => m.id === id);
      expect(answer.type, id).toBe('error');
      const [error] = answer.payload;
      expect(error.extensions?.code, `${id}: ${JSON.stringify(error)}`).toMatch(
        /^GRAPHQL_(VALIDATION|PARSE)_FAILED$/,
      );
      expect(error.message).not.toMatch(/call stack|RangeError|at /);
    }
    // The socket and its subscription are still there.
    s.subscribe('after', '{ __typename }');
    expect((await s.next((m) => m.id === 'after')).payload).toEqual({
      data: { __typename: 'Query' },
    });
    expect(s.ws.readyState).toBe(WebSocket.OPEN);
    s.ws.close();
  });

  it('closes with 4400, not 4500, a socket that sends a message only a server may send', async () => {
    // graphql-ws throws on these (next, error, connection_ack), which closed the socket with
    // 4500 Internal Server Error and its message: a client's mistake, reported as ours.
    for (const [init, message] of [
      [false, { type: 'next', id: '\u0000', payload: {} }],
      [true, { type: 'next', id: '1', payload: { data: null } }],
      [true, { type: 'error', id: '1', payload: [{ message: 'x' }] }],
      [true, { type: 'connection_ack' }],
    ] as const) {
      const s = new Socket(t.wsUrl);
      if (init) await s.open(alice);
      else await new Promise((resolve) => s.ws.once('open', resolve));
      s.send(message);
      expect((await s.closed).code, JSON.stringify(message)).toBe(4400);
    }
    // Nothing like it in a client's own data is refused.
    const s = new Socket(t.wsUrl);
    await s.open(alice);
    s.send({
      type: 'subscribe',
      id: 'v',
      payload: {
        query: '{ __typename }',
        variables: { v: { '': { type: 'next' }, type: 'error' } },
      },
    });
    expect((await s.next((m) => m.id === 'v')).payload).toEqual({ data: { __typename: 'Query' } });
    s.ws.close();
  });

  it('applies the GraphQL limits over WebSocket too', async () => {
    const s = new Socket(t.wsUrl);
    await s.open(alice);
    const aliases = Array.from({ length: 40 }, (_, i) => `a${i}: taskKinds { name }`).join(' ');
    s.subscribe('aliases', `{ ${aliases} }`);
    const answer = await s.next((m) => m.id === 'aliases');
    expect(answer.type).toBe('error');
    expect(answer.payload[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    s.ws.close();
  });
});

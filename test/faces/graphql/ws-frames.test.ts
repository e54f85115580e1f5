import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { admin, alice, t, useFileApp } from '../../helpers/file-app.js';

/**
 * Subscription frames are written by the subscription itself (src/faces/graphql/ws-frames.ts),
 * serialized once per distinct result: every subscriber still gets exactly its own frames, in
 * graphql-ws's bytes and order.
 */

useFileApp();

const FULL = 'subscription($id: ID!) { taskUpdated(id: $id) { id status version input owner } }';
const STATUS = 'subscription($id: ID!) { taskUpdated(id: $id) { status } }';

/** A graphql-ws socket spoken by hand, keeping every frame's text as received. */
class RawSocket {
  readonly ws: WebSocket;
  readonly frames: string[] = [];
  private waiting: (() => void)[] = [];

  constructor() {
    this.ws = new WebSocket(t.wsUrl, 'graphql-transport-ws');
    this.ws.on('message', (data) => {
      this.frames.push(String(data));
      for (const wake of this.waiting.splice(0)) wake();
    });
  }

  async open(token: string): Promise<void> {
    await new Promise((resolve) => this.ws.once('open', resolve));
    this.send({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } });
    await this.until((f) => f.type === 'connection_ack');
  }

  send(message: object): void {
    this.ws.send(JSON.stringify(message));
  }

  subscribe(id: string, query: string, taskId: string): void {
    this.send({ id, type: 'subscribe', payload: { query, variables: { id: taskId } } });
  }

  /** Waits for a frame (received before or after the call) that `match` accepts. */
  async until(match: (frame: { id?: string; type: string; payload?: any }) => boolean) {
    for (;;) {
      const found = this.frames.find((f) => match(JSON.parse(f)));
      if (found) return JSON.parse(found);
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  /** The frames of one operation, as text. */
  of(id: string): string[] {
    return this.frames.filter((f) => JSON.parse(f).id === id);
  }
}

async function startSleep(): Promise<string> {
  const started = await t.gql(
    'mutation { startTask(input: { kind: "sleep", input: { ms: 3600000 } }) { id } }',
    {},
    alice,
  );
  return started.data.startTask.id;
}

const next = (id: string, payload: unknown) => JSON.stringify({ id, type: 'next', payload });
const complete = (id: string) => JSON.stringify({ id, type: 'complete' });

describe('subscription frames', () => {
  it('gives subscribers with different selections and viewers exactly their own frames', async () => {
    const taskId = await startSleep();
    const owner = new RawSocket();
    const otherOwner = new RawSocket();
    const root = new RawSocket();
    await Promise.all([owner.open(alice), otherOwner.open(alice), root.open(admin)]);
    // One event, three selections × viewers: the same document and viewer on two sockets (and
    // two ids), a narrower document on one of them, the same document for an admin.
    owner.subscribe('full', FULL, taskId);
    owner.subscribe('status', STATUS, taskId);
    otherOwner.subscribe('other', FULL, taskId);
    root.subscribe('full', FULL, taskId);
    const working = (s: RawSocket, id: string) =>
      s.until((f) => f.id === id && f.payload?.data?.taskUpdated?.status === 'WORKING');
    await Promise.all([
      working(owner, 'full'),
      working(owner, 'status'),
      working(otherOwner, 'other'),
      working(root, 'full'),
    ]);
    const cancelled = await t.gql(
      'mutation($id: ID!) { cancelTask(id: $id) { version } }',
      { id: taskId },
      alice,
    );
    const version = cancelled.data.cancelTask.version;
    const done = (s: RawSocket, id: string) => s.until((f) => f.id === id && f.type === 'complete');
    await Promise.all([
      done(owner, 'full'),
      done(owner, 'status'),
      done(otherOwner, 'other'),
      done(root, 'full'),
    ]);

    const ownersView = {
      data: {
        taskUpdated: {
          id: taskId,
          status: 'CANCELLED',
          version,
          input: { ms: 3600000 },
          owner: null,
        },
      },
    };
    // Byte for byte what graphql-ws writes: JSON.stringify of { id, type, payload }.
    expect(owner.of('full').slice(-2)).toEqual([next('full', ownersView), complete('full')]);
    expect(otherOwner.of('other').slice(-2)).toEqual([
      next('other', ownersView),
      complete('other'),
    ]);
    expect(owner.of('status').slice(-2)).toEqual([
      next('status', { data: { taskUpdated: { status: 'CANCELLED' } } }),
      complete('status'),
    ]);
    // The admin's result of the same document on the same event: no payloads, the owner named.
    expect(root.of('full').slice(-2)).toEqual([
      next('full', {
        data: {
          taskUpdated: { id: taskId, status: 'CANCELLED', version, input: null, owner: 'alice' },
        },
      }),
      complete('full'),
    ]);
    // Nothing but each operation's own next frames and one complete, in order.
    for (const [s, id] of [
      [owner, 'full'],
      [owner, 'status'],
      [otherOwner, 'other'],
      [root, 'full'],
    ] as const) {
      const frames = s.of(id).map((f) => JSON.parse(f));
      expect(frames.map((f) => f.type)).toEqual([
        ...frames.slice(0, -1).map(() => 'next'),
        'complete',
      ]);
    }
    for (const s of [owner, otherOwner, root]) s.ws.close();
  });

  it('writes nothing more for an operation the client completed', async () => {
    const taskId = await startSleep();
    const s = new RawSocket();
    await s.open(alice);
    s.subscribe('gone', STATUS, taskId);
    s.subscribe('kept', STATUS, taskId);
    await s.until((f) => f.id === 'gone' && f.type === 'next');
    await s.until((f) => f.id === 'kept' && f.type === 'next');
    s.send({ id: 'gone', type: 'complete' });
    await t.gql('mutation($id: ID!) { cancelTask(id: $id) { id } }', { id: taskId }, alice);
    await s.until((f) => f.id === 'kept' && f.type === 'complete');
    // A ping answered means every frame written before it has arrived.
    s.send({ type: 'ping' });
    await s.until((f) => f.type === 'pong');
    expect(s.of('gone').map((f) => JSON.parse(f).payload?.data?.taskUpdated?.status)).toEqual([
      'WORKING',
    ]);
    s.ws.close();
  });

  it('closes with 4408 a socket that sends no connection_init within 3 s', async () => {
    const s = new RawSocket();
    const closed = new Promise<[number, string]>((resolve) =>
      s.ws.once('close', (code, reason) => resolve([code, String(reason)])),
    );
    expect(await closed).toEqual([4408, 'Connection initialisation timeout']);
  });
});

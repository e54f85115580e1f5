import type { Client } from 'graphql-ws';
import { describe, expect, it } from 'vitest';
import { alice, bob, admin as root, t, useFileApp } from '../../helpers/file-app.js';

/** `tasksUpdated`: every change of the caller's tasks over a real WebSocket, and nobody else's. */

useFileApp();

const FEED = `subscription($status: [TaskStatus!], $owner: String) {
  tasksUpdated(status: $status, owner: $owner) {
    id kind status progress statusMessage version input result owner
  }
}`;

interface Feed {
  events: any[];
  /** Resolves with the first event matching `match` (already seen or still to come). */
  when(match: (event: any) => boolean): Promise<any>;
  errors: Promise<any>;
  completed: Promise<void>;
}

function feed(client: Client, variables: Record<string, unknown> = {}): Feed {
  const events: any[] = [];
  const waiters: Array<{ match: (e: any) => boolean; resolve: (e: any) => void }> = [];
  let failed: (errors: any) => void = () => undefined;
  let done: () => void = () => undefined;
  const errors = new Promise<any>((resolve) => (failed = resolve));
  const completed = new Promise<void>((resolve) => (done = resolve));
  client.subscribe(
    { query: FEED, variables },
    {
      next: (value) => {
        if (value.errors) return failed(value.errors);
        const event = (value.data as any).tasksUpdated;
        events.push(event);
        for (const waiter of [...waiters])
          if (waiter.match(event)) {
            waiters.splice(waiters.indexOf(waiter), 1);
            waiter.resolve(event);
          }
      },
      error: failed,
      complete: () => done(),
    },
  );
  return {
    events,
    errors,
    completed,
    when: (match) =>
      new Promise((resolve) => {
        const seen = events.find(match);
        if (seen) resolve(seen);
        else waiters.push({ match, resolve });
      }),
  };
}

async function start(token: string, kind: string, input: unknown): Promise<string> {
  const answer = await t.gql(
    'mutation($kind: String!, $input: JSON) { startTask(input: { kind: $kind, input: $input }) { id } }',
    { kind, input },
    token,
  );
  return answer.data.startTask.id;
}

/** Resolves once `subscription` is live: it has seen a task that `token`'s principal started after it. */
async function live(subscription: Feed, token: string): Promise<void> {
  for (;;) {
    const probe = await start(token, 'sleep', { ms: 0 });
    const seen = subscription.when((e) => e.id === probe);
    const settled = await Promise.race([
      seen.then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), 1_000)),
    ]);
    if (settled) return;
  }
}

const final = (id: string) => (e: any) =>
  e.id === id && ['COMPLETED', 'FAILED', 'CANCELLED'].includes(e.status);

function versionsOf(events: any[], id: string): number[] {
  return events.filter((e) => e.id === id).map((e) => e.version);
}

describe('tasksUpdated', () => {
  it("delivers every change of the caller's tasks in version order, and never another principal's", async () => {
    const mine = feed(t.ws(alice));
    const theirs = feed(t.ws(bob));
    await Promise.all([live(mine, alice), live(theirs, bob)]);

    const ours = await start(alice, 'sleep', { ms: 200, steps: 4 });
    const other = await start(bob, 'sleep', { ms: 100, steps: 2 });
    const [done] = await Promise.all([mine.when(final(ours)), theirs.when(final(other))]);

    expect(done.status).toBe('COMPLETED');
    expect(done.result).toEqual({ sleptMs: expect.any(Number) });
    const versions = versionsOf(mine.events, ours);
    expect(versions[0]).toBe(1); // its creation is a change too
    expect(versions.length).toBeGreaterThanOrEqual(2);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(new Set(versions).size).toBe(versions.length);
    expect(versions.at(-1)).toBe(done.version);
    expect(mine.events.some((e) => e.id === ours && e.progress > 0 && e.progress < 1)).toBe(true);

    expect(mine.events.some((e) => e.id === other)).toBe(false);
    expect(theirs.events.some((e) => e.id === ours)).toBe(false);
    expect(mine.events.every((e) => e.owner === null)).toBe(true);
  });

  it('filters by status', async () => {
    const completed = feed(t.ws(alice), { status: ['COMPLETED'] });
    await live(completed, alice);
    const id = await start(alice, 'sleep', { ms: 100, steps: 4 });
    await completed.when(final(id));
    expect(completed.events.map((e) => e.status)).toEqual(completed.events.map(() => 'COMPLETED'));
    expect(versionsOf(completed.events, id)).toHaveLength(1);
  });

  it("lets an admin follow another principal's tasks with owner, without payloads", async () => {
    const watching = feed(t.ws(root), { owner: 'alice' });
    await live(watching, alice);
    const id = await start(alice, 'sleep', { ms: 50, steps: 2 });
    const done = await watching.when(final(id));
    expect(done).toMatchObject({ status: 'COMPLETED', owner: 'alice', input: null, result: null });
    const others = feed(t.ws(root));
    await live(others, root);
    expect(others.events.every((e) => e.owner === 'root')).toBe(true);
  });

  it('refuses owner to a non-admin with FORBIDDEN, and accepts their own name', async () => {
    const refused = feed(t.ws(bob), { owner: 'alice' });
    const errors = await refused.errors;
    expect(errors[0].extensions.code).toBe('FORBIDDEN');
    const own = feed(t.ws(bob), { owner: 'bob' });
    await live(own, bob);
  });

  it('ends when the token expires', async () => {
    const shortLived = await t.token('alice', ['tasks:read', 'tasks:write'], '2s');
    const ending = feed(t.ws(shortLived));
    await live(ending, shortLived);
    // The stream completes at expiry, or the socket is closed 4403 at the same moment.
    const how = await Promise.race([
      ending.completed.then(() => 'completed'),
      ending.errors.then((e: any) => (e?.code === 4403 ? 'closed 4403' : e)),
    ]);
    expect(['completed', 'closed 4403']).toContain(how);
  });
});

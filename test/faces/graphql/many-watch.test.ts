import { describe, expect, it } from 'vitest';
import { eventually } from '../../helpers/app.js';
import { alice, t, useFileApp } from '../../helpers/file-app.js';

/** `tasksUpdated(filter)` (DESIGN §15): only changes that leave a task meeting the filter. */

useFileApp();

const FEED = `subscription($filter: TaskFilter) {
  tasksUpdated(filter: $filter) { id kind status labels version }
}`;
const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id } }`;
const STATUS = `query($id: ID!) { task(id: $id) { status } }`;

async function startDone(input: Record<string, unknown>): Promise<string> {
  const res = await t.gql(START, { input }, alice);
  expect(res.errors).toBeUndefined();
  const id = res.data.startTask.id as string;
  await eventually(async () => {
    const now = await t.gql(STATUS, { id }, alice);
    return now.data.task.status === 'COMPLETED' ? true : undefined;
  });
  return id;
}

describe('tasksUpdated(filter)', () => {
  it('sends the changes of matching tasks only, judged by labels, kind and status', async () => {
    const events: any[] = [];
    let errors: unknown;
    const client = t.ws(alice);
    let done: (event: any) => void = () => undefined;
    const finalSeen = new Promise<any>((resolve) => (done = resolve));
    let matching = '';
    client.subscribe(
      {
        query: FEED,
        variables: { filter: { labels: { team: 'a' }, kind: ['sleep'], status: ['COMPLETED'] } },
      },
      {
        next: (value) => {
          if (value.errors) errors = value.errors;
          const event = (value.data as any)?.tasksUpdated;
          if (!event) return;
          events.push(event);
          if (event.id === matching) done(event);
        },
        error: (err) => (errors = err),
        complete: () => undefined,
      },
    );
    // The subscription is live once a change of a matching task reaches it: probes until one does.
    const probes = new Set<string>();
    await eventually(async () => {
      if (events.length > 0) return true;
      probes.add(await startDone({ kind: 'sleep', input: { ms: 0 }, labels: { team: 'a' } }));
      return undefined;
    }, 30_000);
    // Changes of tasks that miss the filter by one condition each: none may arrive.
    await startDone({ kind: 'sleep', input: { ms: 0 }, labels: { team: 'b' } });
    await startDone({ kind: 'sleep', input: { ms: 0 } });
    await startDone({ kind: 'export', input: { format: 'csv' }, labels: { team: 'a' } });
    const res = await t.gql(
      START,
      { input: { kind: 'sleep', input: { ms: 0 }, labels: { team: 'a', extra: 'x' } } },
      alice,
    );
    matching = res.data.startTask.id;
    const final = await finalSeen;
    expect(final).toMatchObject({ status: 'COMPLETED', labels: { team: 'a', extra: 'x' } });
    expect(errors).toBeUndefined();
    // Only the matching tasks, each once, in its COMPLETED state.
    const after = events.filter((e) => !probes.has(e.id));
    expect(after.map((e) => [e.id, e.status])).toEqual([[matching, 'COMPLETED']]);
    expect(events.every((e) => e.status === 'COMPLETED')).toBe(true);
  });

  it('refuses a malformed filter before anything is sent', async () => {
    const client = t.ws(alice);
    const result = await new Promise<any>((resolve) =>
      client.subscribe(
        { query: FEED, variables: { filter: { labels: { 'Bad Key': 'x' } } } },
        {
          next: (value) => resolve(value.errors),
          error: resolve,
          complete: () => resolve(undefined),
        },
      ),
    );
    expect(result?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });
});

import type { Client } from 'graphql-ws';
import type { Plugin } from 'graphql-yoga';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resultsUntouched } from '../../../src/faces/graphql/direct-hooks.js';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';
import { alice, t, useFileApp } from '../../helpers/file-app.js';
import { sample } from '../../helpers/metrics.js';

/**
 * The WebSocket face writes a subscription's results without errors from beneath envelop's
 * hooks (src/faces/graphql/ws-frames.ts), when every plugin leaves such results as they are;
 * whatever else comes goes through the hooks as before. Seen from a graphql-ws client: the
 * same frames either way, and an embedder's plugin that rewrites results sees every one.
 */

const START = 'mutation { startTask(input: { kind: "sleep", input: { ms: 3600000 } }) { id } }';
const CANCEL = 'mutation($id: ID!) { cancelTask(id: $id) { version } }';

const STATUS = 'subscription($id: ID!) { taskUpdated(id: $id) { status } }';

/**
 * Every `next` payload of one subscription, whole (data, errors, extensions), its end (an
 * error, or undefined), and `stop`, which has the client send `complete`.
 */
function follow(client: Client, query: string, variables: Record<string, unknown>) {
  const payloads: any[] = [];
  let stop = () => {};
  const ended = new Promise<unknown>((resolve) => {
    stop = client.subscribe(
      { query, variables },
      {
        next: (value) => void payloads.push(value),
        error: (error) => resolve(error),
        complete: () => resolve(undefined),
      },
    );
  });
  return { payloads, ended, stop };
}

async function subscriptionsOpen(app: TestApp): Promise<number | undefined> {
  const text = await (await fetch(`${app.url}/metrics`)).text();
  return sample(text, 'taskhandle_graphql_subscriptions');
}

describe('subscription results written from beneath the hooks', () => {
  useFileApp();

  const start = async () => (await t.gql(START, {}, alice)).data.startTask.id as string;

  it('delivers a result with errors through the hooks, and the stream goes on', async () => {
    const id = await start();
    const client = t.ws(alice);
    // A cursor that is no cursor: every event's result carries the field's error.
    const { payloads, ended } = follow(
      client,
      'subscription($id: ID!) { taskUpdated(id: $id) { status children(after: "nonsense") { pageInfo { hasNextPage } } } }',
      { id },
    );
    await eventually(async () => (payloads.length > 0 ? true : undefined));
    await t.gql(CANCEL, { id }, alice);
    expect(await ended).toBeUndefined();
    // Both events, the first and the final one, each with the field's coded error (the field
    // cannot be null, so neither can the task's: no data).
    const failed = {
      data: null,
      errors: [
        {
          message: 'Malformed cursor.',
          locations: [{ line: 1, column: 56 }],
          path: ['taskUpdated', 'children'],
          extensions: { code: 'BAD_USER_INPUT' },
        },
      ],
    };
    expect(payloads).toEqual([failed, failed]);
    await client.dispose();
  });

  it('stops at a client’s complete, and counts the subscription closed', async () => {
    const [id, other] = [await start(), await start()];
    const client = t.ws(alice);
    const stopped = follow(client, STATUS, { id });
    const kept = follow(client, STATUS, { id: other });
    await eventually(async () =>
      stopped.payloads.length > 0 && kept.payloads.length > 0 ? true : undefined,
    );
    expect(await subscriptionsOpen(t)).toBe(2);
    stopped.stop(); // graphql-ws's client sends `complete`
    expect(await stopped.ended).toBeUndefined();
    await eventually(async () => ((await subscriptionsOpen(t)) === 1 ? true : undefined));
    await t.gql(CANCEL, { id }, alice);
    await t.gql(CANCEL, { id: other }, alice);
    // The socket and its other subscription go on to the end.
    expect(await kept.ended).toBeUndefined();
    expect(kept.payloads.map((p) => p.data.taskUpdated.status)).toEqual(['WORKING', 'CANCELLED']);
    expect(stopped.payloads.map((p) => p.data.taskUpdated.status)).toEqual(['WORKING']);
    await eventually(async () => ((await subscriptionsOpen(t)) === 0 ? true : undefined));
    await client.dispose();
  });

  it('ends every subscriber of a task at its final state with the final result', async () => {
    const id = await start();
    const clients = Array.from({ length: 5 }, () => t.ws(alice));
    const followers = clients.map((client) =>
      follow(client, 'subscription($id: ID!) { taskUpdated(id: $id) { status version } }', { id }),
    );
    await eventually(async () =>
      followers.every((f) => f.payloads.length > 0) ? true : undefined,
    );
    const { version } = (await t.gql(CANCEL, { id }, alice)).data.cancelTask;
    for (const { payloads, ended } of followers) {
      expect(await ended).toBeUndefined();
      expect(payloads.at(-1)).toEqual({ data: { taskUpdated: { status: 'CANCELLED', version } } });
    }
    await eventually(async () => ((await subscriptionsOpen(t)) === 0 ? true : undefined));
    await Promise.all(clients.map((c) => c.dispose()));
  });
});

describe('an embedder’s plugin on subscription results', () => {
  const plugin: Plugin = {
    onSubscribe: () => ({
      onSubscribeResult: () => ({
        onNext: ({ result, setResult }) =>
          setResult({ ...result, extensions: { seenBy: 'plugin' } }),
      }),
    }),
  };
  let app: TestApp;
  let token: string;
  beforeAll(async () => {
    app = await startTestApp({ graphqlPlugins: [plugin] });
    token = await app.token('alice');
  });
  afterAll(() => app?.stop());

  it('sees every result, the first and the final one too', async () => {
    const id = (await app.gql(START, {}, token)).data.startTask.id as string;
    const client = app.ws(token);
    const { payloads, ended } = follow(client, STATUS, { id });
    await eventually(async () => (payloads.length > 0 ? true : undefined));
    await app.gql(CANCEL, { id }, token);
    expect(await ended).toBeUndefined();
    expect(payloads).toEqual([
      { data: { taskUpdated: { status: 'WORKING' } }, extensions: { seenBy: 'plugin' } },
      { data: { taskUpdated: { status: 'CANCELLED' } }, extensions: { seenBy: 'plugin' } },
    ]);
    await client.dispose();
  });
});

describe('resultsUntouched', () => {
  it('holds for no plugins and for plugins that do not hook subscriptions', () => {
    expect(resultsUntouched()).toBe(true);
    expect(resultsUntouched([{ onExecute() {} }, { onParse() {} }, { onRequest() {} }])).toBe(true);
  });

  it.each(['onSubscribe', 'onPluginInit', 'instrumentation', 'onSomethingNew'])(
    'does not for a plugin with %s',
    (hook) => {
      expect(resultsUntouched([{ onExecute() {} }, { [hook]: () => {} } as Plugin])).toBe(false);
    },
  );
});

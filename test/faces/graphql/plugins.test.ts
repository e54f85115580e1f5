import type { Plugin } from 'graphql-yoga';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servedDirectly } from '../../../src/faces/graphql/direct-hooks.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';

/**
 * An embedder's yoga plugins (AppOptions.graphqlPlugins) run on every request, whichever path
 * serves it: the direct POST path (fast-post.ts) runs envelop's hooks, and steps aside for
 * good when a plugin hooks what it leaves out (the HTTP request or response).
 */

/** The Accept headers mainstream clients send with a POST. */
const CLIENTS: Record<string, string> = {
  'Apollo Client 4': 'application/graphql-response+json,application/json;q=0.9',
  'graphql-http': 'application/graphql-response+json, application/json',
  urql: 'application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed',
};

const QUERY = '{ __typename }';

async function post(url: string, accept: string, token: string) {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept, authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: QUERY }),
  });
  return { res, body: await res.json() };
}

describe('an envelop plugin (onExecute)', () => {
  const seen: Array<{ operation: string | undefined; direct: boolean }> = [];
  const plugin: Plugin = {
    onExecute({ args }) {
      const request = (args.contextValue as { request?: Request }).request;
      seen.push({
        operation: args.document.definitions[0]?.kind,
        // The direct path reads the body itself and hands envelop a Request without one.
        direct: request?.body === null,
      });
    },
  };
  let t: TestApp;
  let token: string;
  beforeAll(async () => {
    t = await startTestApp({ graphqlPlugins: [plugin] });
    token = await t.token('alice');
  });
  afterAll(() => t?.stop());

  it.each(Object.entries(CLIENTS))('runs on the direct path for %s', async (_client, accept) => {
    seen.length = 0;
    const { res, body } = await post(t.url, accept, token);
    expect(res.status).toBe(200);
    expect(body).toEqual({ data: { __typename: 'Query' } });
    expect(seen).toEqual([{ operation: 'OperationDefinition', direct: true }]);
  });

  it('runs for a query over GET too', async () => {
    seen.length = 0;
    const res = await fetch(`${t.url}/graphql?query=${encodeURIComponent(QUERY)}`, {
      headers: { accept: CLIENTS.urql!, authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(200);
    expect(seen.map((s) => s.operation)).toEqual(['OperationDefinition']);
  });
});

describe('a plugin that hooks the HTTP response (onResponse)', () => {
  let responses = 0;
  const plugin: Plugin = {
    onResponse({ response }) {
      responses++;
      response.headers.set('x-seen-by-plugin', 'yes');
    },
  };
  let t: TestApp;
  let token: string;
  beforeAll(async () => {
    t = await startTestApp({ graphqlPlugins: [plugin] });
    token = await t.token('alice');
  });
  afterAll(() => t?.stop());

  it.each(Object.entries(CLIENTS))(
    'sees a POST from %s: the direct path steps aside',
    async (_client, accept) => {
      const before = responses;
      const { res, body } = await post(t.url, accept, token);
      expect(body).toEqual({ data: { __typename: 'Query' } });
      expect(res.headers.get('x-seen-by-plugin')).toBe('yes');
      expect(responses).toBe(before + 1);
    },
  );
});

describe('servedDirectly', () => {
  it('keeps the direct path for envelop hooks only, and for no plugins', () => {
    expect(servedDirectly()).toBe(true);
    expect(servedDirectly([{ onExecute() {} }, { onParse() {} }, { onValidate() {} }])).toBe(true);
    expect(servedDirectly([{ onContextBuilding() {} }, { onSubscribe() {} }])).toBe(true);
  });

  it.each([
    'onRequest',
    'onRequestParse',
    'onParams',
    'onExecutionResult',
    'onResultProcess',
    'onResponse',
    'onPluginInit',
    'instrumentation',
  ])('turns it off for %s', (hook) => {
    expect(servedDirectly([{ onExecute() {} }, { [hook]: () => {} } as Plugin])).toBe(false);
  });
});

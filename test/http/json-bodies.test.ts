import { describe, expect, it } from 'vitest';
import { alice, t, useFileApp } from '../helpers/file-app.js';

/**
 * One rule for which bodies are JSON (src/http/json-body.ts, docs/limits.md), the same on every
 * face: `application/json` or a `+json` type, any parameters, but no charset other than UTF-8.
 * Each face gets a request that is fine but for its Content-Type.
 */

useFileApp();

/** A POST each face would take (or refuse for another reason than its type). */
const FACES: Record<string, { path: string; body: unknown; headers?: Record<string, string> }> = {
  rest: { path: '/v1/jobs', body: { kind: 'no-such-kind' } },
  graphql: { path: '/graphql', body: { query: '{ __typename }' } },
  mcp: {
    path: '/mcp',
    body: { jsonrpc: '2.0', id: 1, method: 'ping' },
    headers: { accept: 'application/json, text/event-stream' },
  },
  a2a: {
    path: '/a2a',
    body: { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'none' } },
    headers: { 'a2a-version': '1.0' },
  },
};

async function send(face: string, contentType: string | undefined) {
  const { path, body, headers = {} } = FACES[face]!;
  const res = await fetch(`${t.url}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${alice}`,
      ...headers,
      ...(contentType === undefined ? {} : { 'content-type': contentType }),
    },
    // A Blob without a type: fetch adds no Content-Type of its own.
    body: new Blob([JSON.stringify(body)]),
  });
  const json = (await res.json()) as {
    code?: string;
    detail?: string;
    errors?: Array<{ message: string; extensions?: { code?: string } }>;
  };
  return {
    status: res.status,
    code: json.code ?? json.errors?.[0]?.extensions?.code,
    message: json.detail ?? json.errors?.[0]?.message,
  };
}

const TAKEN = [
  'application/json',
  'application/json; charset=utf-8',
  'Application/JSON;Charset="UTF-8"',
  'application/json;profile=x',
  'application/merge-patch+json',
];

const REFUSED = [
  undefined,
  'text/plain',
  'text/plain; charset=utf-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/jsonx',
  'application/json-seq',
  'text/json',
  'application/json; charset=utf-16',
  'application/json; charset=iso-8859-1',
];

describe('the JSON body rule', () => {
  for (const face of Object.keys(FACES)) {
    it.each(TAKEN)(`${face} reads a body sent as %s`, async (type) => {
      const answer = await send(face, type);
      expect(answer.status, JSON.stringify(answer)).not.toBe(415);
      expect(answer.code).not.toBe('UNSUPPORTED_MEDIA_TYPE');
    });

    it.each(REFUSED.map((type) => [String(type), type]))(
      `${face} refuses a body sent as %s with 415`,
      async (_name, type) => {
        const answer = await send(face, type);
        expect(answer).toMatchObject({ status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' });
        // The message names the remedy, the same on every face.
        expect(answer.message).toMatch(/UTF-8|application\/json/);
      },
    );
  }
});

import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { ClientFactory } from '@a2a-js/sdk/client';
import { describe, expect, it } from 'vitest';
import {
  a2aClient,
  getTaskCall,
  list,
  postA2A,
  startRequestJson,
  UNKNOWN_ID,
} from '../../helpers/a2a.js';
import { capturingLog } from '../../helpers/app.js';
import { alice, t, useFileApp } from '../../helpers/file-app.js';
import { rest } from '../../helpers/rest.js';
import { expectProblem } from '../../helpers/rest-jobs.js';

/**
 * The A2A face at the HTTP level (DESIGN §10): the agent card, and what `POST /a2a` refuses
 * before JSON-RPC — tokens, scopes, the protocol version (bodies and the wire: a2a-http-wire). The SDK client cannot send
 * these requests, so they are written by hand; everything else goes through the SDK.
 */

const { log } = capturingLog();

useFileApp({ log });

const { version } = JSON.parse(
  readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'),
);

/** A JSON-RPC request by hand (postA2A) to the file's app. */
const rpc = (token: string | null, body: unknown, headers?: Record<string, string>) =>
  postA2A(t.url, token, body, headers);

describe('the agent card', () => {
  it('is served without a token, exactly as §10 shapes it, one skill per kind', async () => {
    const res = await rest(t.url, 'GET', '/.well-known/agent-card.json');
    expect(res.status).toBe(200);
    const kinds = t.app.tasks.listKinds();
    expect(res.body).toEqual({
      name: 'taskhandle',
      description: expect.any(String),
      version,
      supportedInterfaces: [
        { url: `${t.url}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      ],
      capabilities: { streaming: true, pushNotifications: true },
      securitySchemes: {
        bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'JWT' } },
      },
      securityRequirements: [{ schemes: { bearer: {} } }],
      defaultInputModes: ['application/json'],
      defaultOutputModes: ['application/json'],
      skills: kinds.map((kind) => ({
        id: kind.name,
        name: kind.name,
        description: kind.description,
        tags: ['taskhandle'],
        inputModes: ['application/json'],
        outputModes: ['application/json'],
      })),
    });
    expect(res.body.skills.map((s: any) => s.id)).toEqual([
      'approval',
      'export',
      'pipeline',
      'primes',
      'sleep',
    ]);
  });

  it('names the endpoint at the host the request came to', async () => {
    // fetch will not send another Host: node:http will.
    const cardAt = (host: string) =>
      new Promise<any>((resolve, reject) => {
        const req = request(
          `${t.url}/.well-known/agent-card.json`,
          { headers: { host } },
          (res) => {
            let text = '';
            res.on('data', (chunk) => (text += chunk));
            res.on('end', () => resolve(JSON.parse(text)));
          },
        );
        req.on('error', reject);
        req.end();
      });
    const port = new URL(t.url).port;
    expect((await cardAt(`localhost:${port}`)).supportedInterfaces[0].url).toBe(
      `http://localhost:${port}/a2a`,
    );
    // Not a host: not one of ALLOWED_HOSTS either, so refused before the card is built.
    expect(await cardAt('evil"/><x')).toMatchObject({ code: 'MISDIRECTED_REQUEST' });
  });

  it('may be cached five minutes, and a client sending its ETag or date back gets 304 without a body', async () => {
    const card = `${t.url}/.well-known/agent-card.json`;
    const first = await fetch(card);
    expect(first.headers.get('cache-control')).toBe('public, max-age=300');
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"[\w-]{27}"$/);
    expect((await fetch(card)).headers.get('etag')).toBe(etag);
    for (const condition of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const again = await fetch(card, { headers: { 'if-none-match': condition } });
      expect(again.status, condition).toBe(304);
      expect(again.headers.get('etag')).toBe(etag);
      expect(await again.text()).toBe('');
    }
    const changed = await fetch(card, { headers: { 'if-none-match': '"other"' } });
    expect(changed.status).toBe(200);
    // Last-Modified is the process's start; If-Modified-Since counts without an ETag only.
    const modified = first.headers.get('last-modified')!;
    expect(Date.parse(modified)).toBeLessThanOrEqual(Date.now());
    const since = (date: string, etag?: string) =>
      fetch(card, {
        headers: { 'if-modified-since': date, ...(etag ? { 'if-none-match': etag } : {}) },
      }).then((r) => r.status);
    expect(await since(modified)).toBe(304);
    expect(await since(new Date(Date.parse(modified) - 1000).toUTCString())).toBe(200);
    expect(await since(modified, '"other"')).toBe(200);
    // The card names the host it was asked at: another host, another card, another ETag.
    const port = new URL(t.url).port;
    const elsewhere = await new Promise<string | undefined>((resolve, reject) => {
      const req = request(card, { headers: { host: `localhost:${port}` } }, (res) => {
        res.resume();
        resolve(res.headers.etag);
      });
      req.on('error', reject);
      req.end();
    });
    expect(elsewhere).toMatch(/^"[\w-]{27}"$/);
    expect(elsewhere).not.toBe(etag);
  });

  it("is what the SDK's ClientFactory builds a JSON-RPC client from", async () => {
    const client = await new ClientFactory().createFromUrl(t.url);
    expect(client.transport.protocolName).toBe('JSONRPC');
    expect(client.protocolVersion).toBe('1.0');
  });
});

describe('authentication, before the body is read', () => {
  it('401 with a bare Bearer challenge without a token', async () => {
    const res = await rpc(null, getTaskCall(UNKNOWN_ID));
    expectProblem(res, 401, 'UNAUTHENTICATED');
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('401 with error="invalid_token" for a bad, forged or expired token', async () => {
    const expired = await t.token('alice', ['tasks:read'], -120);
    const forged = `${alice.slice(0, -4)}AAAA`;
    for (const token of ['not-a-jwt', forged, expired]) {
      const res = await rpc(token, getTaskCall(UNKNOWN_ID));
      expectProblem(res, 401, 'UNAUTHENTICATED');
      expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    }
  });

  it('401 even when the body is not JSON at all: the token comes first', async () => {
    const res = await rpc(null, '{not json');
    expectProblem(res, 401, 'UNAUTHENTICATED');
  });
});

describe('scopes: tasks:write to send and cancel, tasks:read to get, list and subscribe', () => {
  const cases: Array<[string, unknown, string]> = [
    ['SendMessage', startRequestJson(), 'tasks:write'],
    ['SendStreamingMessage', startRequestJson(), 'tasks:write'],
    ['CancelTask', { id: UNKNOWN_ID }, 'tasks:write'],
    ['GetTask', { id: UNKNOWN_ID }, 'tasks:read'],
    ['ListTasks', {}, 'tasks:read'],
    ['SubscribeToTask', { id: UNKNOWN_ID }, 'tasks:read'],
  ];
  for (const [method, params, scope] of cases) {
    it(`${method} without ${scope}: 403 insufficient_scope naming it`, async () => {
      const other = scope === 'tasks:write' ? 'tasks:read' : 'tasks:write';
      const token = await t.token('carol', [other]);
      const res = await rpc(token, { jsonrpc: '2.0', id: 1, method, params });
      expectProblem(res, 403, 'FORBIDDEN');
      expect(res.headers.get('www-authenticate')).toBe(
        `Bearer error="insufficient_scope", scope="${scope}"`,
      );
    });
  }

  it('stores nothing for a refused SendMessage', async () => {
    const token = await t.token('dave', ['tasks:read']);
    await rpc(token, { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: startRequestJson() });
    const client = await a2aClient(t.url, await t.token('dave'));
    const page = await client.listTasks(list({ pageSize: 10 }));
    expect(page.totalSize).toBe(0);
  });
});

describe('the protocol version', () => {
  it('without A2A-Version a request counts as 0.3: VersionNotSupportedError -32009', async () => {
    const res = await rpc(alice, getTaskCall(UNKNOWN_ID), { 'content-type': 'application/json' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32009 } });
  });

  it('0.3 named outright is refused the same way', async () => {
    const res = await rpc(alice, getTaskCall(UNKNOWN_ID), { 'a2a-version': '0.3' });
    expect(res.body.error.code).toBe(-32009);
  });

  it('1.0 is served', async () => {
    const res = await rpc(alice, getTaskCall(UNKNOWN_ID));
    expect(res.body).toMatchObject({ id: 7, error: { code: -32001 } });
  });
});

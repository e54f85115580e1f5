import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { SECRET, startTestApp, type TestApp } from '../helpers/app.js';
import { RawConnection, type RawResponse } from '../helpers/raw-http.js';

/**
 * ALLOWED_HOSTS (DESIGN §12) against DNS rebinding: a page on evil.example.com whose name is
 * re-pointed at 127.0.0.1 sends `Host: evil.example.com`. A development server (which embeds
 * a token with every scope in its pages) must answer it 421 on every route and on a WebSocket
 * upgrade, with nothing of the token, and still serve its own loopback names.
 */

let dev: TestApp;
let port: string;
beforeAll(async () => {
  dev = await startTestApp({ env: { AUTH_JWT_SECRET: '' } });
  port = new URL(dev.url).port;
});
afterAll(() => dev?.stop());

const json = 'application/json';
const MCP_INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'rebinding', version: '1' },
  },
});
const A2A_GET = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} });

interface Probe {
  name: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

const PROBES: Probe[] = [
  { name: 'the dashboard', method: 'GET', path: '/', headers: { Accept: 'text/html' } },
  { name: 'GraphiQL', method: 'GET', path: '/graphql', headers: { Accept: 'text/html' } },
  {
    name: 'a GraphQL POST',
    method: 'POST',
    path: '/graphql',
    headers: { 'Content-Type': json },
    body: '{"query":"{ tasks(first: 1) { edges { node { id } } } }"}',
  },
  { name: 'REST', method: 'GET', path: '/v1/jobs' },
  {
    name: 'MCP',
    method: 'POST',
    path: '/mcp',
    headers: {
      'Content-Type': json,
      Accept: 'application/json, text/event-stream',
      Origin: 'http://evil.example.com',
    },
    body: MCP_INIT,
  },
  {
    name: 'A2A',
    method: 'POST',
    path: '/a2a',
    headers: { 'Content-Type': json, 'A2A-Version': '1.0' },
    body: A2A_GET,
  },
  { name: 'metrics', method: 'GET', path: '/metrics' },
  {
    name: 'a WebSocket upgrade',
    method: 'GET',
    path: '/graphql',
    headers: {
      Upgrade: 'websocket',
      Connection: 'Upgrade',
      'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
      'Sec-WebSocket-Version': '13',
      'Sec-WebSocket-Protocol': 'graphql-transport-ws',
    },
  },
  {
    name: 'a CORS preflight',
    method: 'OPTIONS',
    path: '/graphql',
    headers: {
      Origin: 'http://evil.example.com',
      'Access-Control-Request-Method': 'POST',
    },
  },
];

async function raw(host: string, probe: Probe): Promise<RawResponse | undefined> {
  const conn = new RawConnection(dev.url);
  const body = probe.body ?? '';
  const lines = [`${probe.method} ${probe.path} HTTP/1.1`, `Host: ${host}`];
  for (const [name, value] of Object.entries(probe.headers ?? {})) lines.push(`${name}: ${value}`);
  if (body) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  await conn.write(`${lines.join('\r\n')}\r\n\r\n${body}`);
  try {
    return await conn.response();
  } finally {
    conn.close();
  }
}

describe('a development server, reached under another name', () => {
  it('has a development token to protect', () => {
    expect(dev.app.devToken).toMatch(/^ey/);
  });

  for (const probe of PROBES) {
    for (const host of ['evil.example.com', 'evil.example.com:4000']) {
      it(`answers ${probe.name} for Host ${host} with 421 and no token`, async () => {
        const res = await raw(host, probe);
        expect(res?.status).toBe(421);
        expect(res?.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(JSON.parse(res?.body ?? '{}')).toMatchObject({
          status: 421,
          code: 'MISDIRECTED_REQUEST',
        });
        expect(JSON.stringify(res)).not.toContain(dev.app.devToken);
        expect(res?.headers['access-control-allow-origin']).toBeUndefined();
      });
    }
  }

  it('refuses a name that only starts like an allowed one', async () => {
    for (const host of ['localhost.evil.example.com', '127.0.0.1.nip.io', 'localhost:x', '']) {
      const res = await raw(host, PROBES[0]!);
      expect(res?.status, host).toBe(421);
    }
  });
});

describe('a development server, reached under its own names', () => {
  for (const host of ['localhost', '127.0.0.1', '[::1]', 'LOCALHOST.']) {
    it(`serves the dashboard with its token and upgrades WebSockets for Host ${host} with the port`, async () => {
      const page = await raw(`${host}:${port}`, PROBES[0]!);
      expect(page?.status).toBe(200);
      expect(page?.body).toContain(dev.app.devToken);
      const upgrade = await raw(`${host}:${port}`, PROBES[7]!);
      expect(upgrade?.status).toBe(101);
    });
  }
});

/** An address of this machine that is not loopback, if it has one. */
function outsideAddress(): string | undefined {
  for (const list of Object.values(networkInterfaces()))
    for (const entry of list ?? [])
      if (entry.family === 'IPv4' && !entry.internal) return entry.address;
  return undefined;
}

describe.runIf(outsideAddress())('a development server listening on every address', () => {
  let open: TestApp;
  let base: string;
  beforeAll(async () => {
    open = await startTestApp({ env: { AUTH_JWT_SECRET: '', HOST: '0.0.0.0' } });
    base = `http://${outsideAddress()}:${new URL(open.url).port}`;
  });
  afterAll(() => open?.stop());

  it('answers any name, by default', () => {
    expect(open.app.config.limits.allowedHosts).toBe('*');
  });

  it('writes the token into no page served to another machine', async () => {
    expect(open.app.devToken).toMatch(/^ey/);
    for (const path of ['/', '/graphql']) {
      const res = await fetch(`${base}${path}`, { headers: { accept: 'text/html' } });
      expect(res.status).toBe(200);
      const html = await res.text();
      expect(html).toMatch(/<html/i);
      expect(html).not.toContain(open.app.devToken);
    }
    // The same pages to this machine carry it.
    const local = await fetch(`http://127.0.0.1:${new URL(open.url).port}/`);
    expect(await local.text()).toContain(open.app.devToken);
  });
});

describe('ALLOWED_HOSTS', () => {
  const load = (env: Record<string, string>) => loadConfig({ AUTH_JWT_SECRET: SECRET, ...env });

  it('defaults to the loopback names on a loopback HOST, to any name otherwise', () => {
    for (const host of ['127.0.0.1', '127.0.0.2', 'localhost', '::1'])
      expect(load({ HOST: host }).limits.allowedHosts).toEqual(['localhost', '127.0.0.1', '[::1]']);
    for (const host of ['0.0.0.0', '::', '10.1.2.3', 'tasks.example.com'])
      expect(load({ HOST: host }).limits.allowedHosts).toBe('*');
  });

  it('takes names, addresses and *', () => {
    expect(
      load({ ALLOWED_HOSTS: 'Tasks.Example.com, 10.0.0.1 [::1]' }).limits.allowedHosts,
    ).toEqual(['tasks.example.com', '10.0.0.1', '[::1]']);
    expect(load({ ALLOWED_HOSTS: '*', HOST: '127.0.0.1' }).limits.allowedHosts).toBe('*');
  });

  for (const bad of ['tasks.example.com:443', 'http://tasks.example.com', '::1', '[nope]', 'a_b']) {
    it(`refuses ${JSON.stringify(bad)}, naming the variable`, () => {
      expect(() => load({ ALLOWED_HOSTS: bad })).toThrow(ConfigError);
      expect(() => load({ ALLOWED_HOSTS: bad })).toThrow(/ALLOWED_HOSTS/);
    });
  }
});

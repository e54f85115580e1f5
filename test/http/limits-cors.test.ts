import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECRET, startTestApp, type TestApp } from '../helpers/app.js';

/** CORS per CORS_ORIGINS on every face, never `*` with credentials (DESIGN §12). */

const APP = 'https://app.example';
const EVIL = 'https://evil.example';
const PATHS = ['/graphql', '/v1/jobs', '/healthz'];

async function preflight(url: string, origin: string): Promise<Response> {
  return fetch(url, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type',
    },
  });
}

async function simple(url: string, origin: string): Promise<Response> {
  const path = new URL(url).pathname;
  return path === '/graphql'
    ? fetch(url, {
        method: 'POST',
        headers: { origin, 'content-type': 'application/json' },
        body: '{"query":"{ __typename }"}',
      })
    : fetch(url, { headers: { origin } });
}

describe('with CORS_ORIGINS listing one origin', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { CORS_ORIGINS: APP } });
  });
  afterAll(() => t?.stop());

  for (const path of PATHS) {
    it(`lets ${APP} call ${path}, without credentials`, async () => {
      const pre = await preflight(`${t.url}${path}`, APP);
      expect(pre.status).toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBe(APP);
      expect(pre.headers.get('access-control-allow-headers')).toMatch(/authorization/);
      expect(pre.headers.get('access-control-allow-credentials')).toBeNull();
      const res = await simple(`${t.url}${path}`, APP);
      expect(res.headers.get('access-control-allow-origin')).toBe(APP);
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
      expect(res.headers.get('vary')).toMatch(/origin/i);
    });

    it(`gives another origin nothing on ${path}`, async () => {
      const pre = await preflight(`${t.url}${path}`, EVIL);
      expect(pre.headers.get('access-control-allow-origin')).toBeNull();
      expect(pre.headers.get('access-control-allow-methods')).toBeNull();
      const res = await simple(`${t.url}${path}`, EVIL);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    });
  }
});

describe('by default', () => {
  it('in development, lets any origin read, never with credentials', async () => {
    const t = await startTestApp();
    try {
      for (const path of PATHS) {
        const res = await simple(`${t.url}${path}`, EVIL);
        expect(res.headers.get('access-control-allow-origin')).toBe(EVIL);
        expect(res.headers.get('access-control-allow-credentials')).toBeNull();
      }
    } finally {
      await t.stop();
    }
  });

  it('in production, lets no origin read', async () => {
    const t = await startTestApp({ env: { NODE_ENV: 'production', AUTH_JWT_SECRET: SECRET } });
    try {
      for (const path of PATHS) {
        const pre = await preflight(`${t.url}${path}`, EVIL);
        expect(pre.headers.get('access-control-allow-origin')).toBeNull();
        const res = await simple(`${t.url}${path}`, EVIL);
        expect(res.headers.get('access-control-allow-origin')).toBeNull();
        expect(res.headers.get('access-control-allow-credentials')).toBeNull();
      }
    } finally {
      await t.stop();
    }
  });
});

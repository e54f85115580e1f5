import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { type IncomingHttpHeaders, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseEncoding } from '../../../src/faces/graphql/graphiql.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { browserSuite, CHROMIUM, CHROMIUM_ARGS } from '../../helpers/browser.js';
import { freePort } from '../../helpers/client-server.js';
import { freshDatabase, seedDataDir } from '../../helpers/db.js';
import { ROOT } from '../../helpers/process.js';

/**
 * GraphiQL (DESIGN §13) as a browser gets it: a small page never stored, its code at URLs named
 * by content, compressed and cached for good; and, in a browser profile that outlives a
 * restart with a new development secret, operations still authorized.
 */

const DEV = { NODE_ENV: 'development', AUTH_JWT_SECRET: '' };
const HTML = { accept: 'text/html' };

const assetsOf = (html: string) => [...new Set(html.match(/\/graphql\/graphiql\/[^"]+/g) ?? [])];

describe('GraphiQL over HTTP', () => {
  let t: TestApp;
  let html: string;
  let page: Response;
  beforeAll(async () => {
    t = await startTestApp({ env: DEV });
    page = await fetch(`${t.url}/graphql`, { headers: HTML });
    html = await page.text();
  });
  afterAll(() => t?.stop());

  it('is a small page, never stored (it carries the development token), naming its files', () => {
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(Buffer.byteLength(html)).toBeLessThan(8 * 1024);
    expect(html).toContain(`Bearer ${t.app.devToken}`);
    expect(assetsOf(html).map((path) => path.replace(/\.[\w-]{16}\./, '.*.'))).toEqual(
      expect.arrayContaining([
        '/graphql/graphiql/graphiql.*.css',
        '/graphql/graphiql/graphiql.*.js',
        '/graphql/graphiql/boot.*.js',
        '/graphql/graphiql/editor.worker.*.js',
        '/graphql/graphiql/json.worker.*.js',
        '/graphql/graphiql/graphql.worker.*.js',
      ]),
    );
  });

  it('sends its code compressed (br, else gzip) and cached for good; 304 to a revalidation', async () => {
    let identity = 0;
    let br = 0;
    for (const path of assetsOf(html)) {
      const plain = await fetch(`${t.url}${path}`, { headers: { 'accept-encoding': 'identity' } });
      const body = Buffer.from(await plain.arrayBuffer());
      identity += body.length;
      expect(plain.status).toBe(200);
      expect(plain.headers.get('content-encoding')).toBeNull();
      expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      const etag = plain.headers.get('etag')!;
      expect(etag).toMatch(/^"[\w-]{16}"$/);
      expect(path).toContain(etag.slice(1, -1));

      for (const [encoding, decode] of [
        ['br', brotliDecompressSync],
        ['gzip', gunzipSync],
      ] as const) {
        // node's fetch would decode the body itself: read it raw.
        const raw = await rawGet(`${t.url}${path}`, { 'accept-encoding': encoding });
        if (body.length <= 1024) continue;
        expect(raw.headers['content-encoding']).toBe(encoding);
        expect(raw.headers.vary).toBe('accept-encoding');
        expect(decode(raw.body).equals(body)).toBe(true);
        if (encoding === 'br') br += raw.body.length;
      }

      const again = await fetch(`${t.url}${path}`, { headers: { 'if-none-match': etag } });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe('');
    }
    // yoga's own page was 9 MB on every load.
    expect(identity).toBeGreaterThan(8_000_000);
    expect(br).toBeLessThan(2_500_000);
  });

  it('answers HEAD, 405 to other methods, and 404 to a file it does not have', async () => {
    const [first] = assetsOf(html);
    const head = await fetch(`${t.url}${first}`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get('content-length'))).toBeGreaterThan(0);
    const post = await fetch(`${t.url}${first}`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    const missing = await fetch(`${t.url}/graphql/graphiql/graphiql.0000000000000000.js`);
    expect(missing.status).toBe(404);
    expect((await missing.json()).code).toBe('NOT_FOUND');
  });

  it('leaves GraphQL over GET and POST at /graphql to yoga', async () => {
    const query = encodeURIComponent('{ __typename }');
    const get = await fetch(`${t.url}/graphql?query=${query}`, {
      headers: { accept: 'application/json' },
    });
    expect(await get.json()).toEqual({ data: { __typename: 'Query' } });
    const post = await t.gql('{ __typename }', {}, t.app.devToken);
    expect(post).toEqual({ data: { __typename: 'Query' } });
  });

  it('is absent in production: no page, no files', async () => {
    const prod = await startTestApp({ env: { NODE_ENV: 'production' } });
    try {
      expect((await fetch(`${prod.url}/graphql`, { headers: HTML })).status).toBe(406);
      expect((await fetch(`${prod.url}${assetsOf(html)[0]}`)).status).toBe(404);
    } finally {
      await prod.stop();
    }
  });
});

describe('chooseEncoding', () => {
  it.each([
    ['gzip, deflate, br', 'br'],
    ['gzip', 'gzip'],
    ['br;q=0, gzip;q=0.5', 'gzip'],
    ['*', 'br'],
    ['*;q=0, gzip', 'gzip'],
    ['identity', undefined],
    ['', undefined],
    [undefined, undefined],
    ['BR', 'br'],
  ])('%j → %s', (header, expected) => {
    expect(chooseEncoding(header)).toBe(expected);
  });
});

const { suite, title } = browserSuite('GraphiQL in a browser');

suite(title, () => {
  const SHOTS = join(ROOT, 'test/.screenshots');
  const profile = mkdtempSync(join(tmpdir(), 'taskhandle-graphiql-profile-'));
  const dataDirs = [1, 2].map((n) => mkdtempSync(join(tmpdir(), `taskhandle-graphiql-data${n}-`)));
  afterAll(() => {
    for (const dir of [profile, ...dataDirs]) rmSync(dir, { recursive: true, force: true });
  });

  /** GraphiQL in the persistent profile, as a person reopening the browser would see it. */
  async function open(url: string): Promise<{ context: BrowserContext; page: Page }> {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      args: CHROMIUM_ARGS,
      viewport: { width: 1400, height: 900 },
    });
    const page = await context.newPage();
    page.on('pageerror', (err) => console.error('page error:', err.message));
    await page.goto(`${url}/graphql`);
    await page.getByRole('button', { name: /Execute query/ }).waitFor();
    return { context, page };
  }

  /**
   * Runs `operation` of the active tab (which holds several) and returns the result pane's
   * JSON. GraphiQL offers the choice only once it has parsed the editor's document (the
   * button then opens a menu); clicked before, it sends no operation name.
   */
  async function run(page: Page, operation: string): Promise<any> {
    const before = await page.locator('.result-window').textContent();
    await page.locator('button.graphiql-execute-button[aria-haspopup="menu"]').click();
    await page.locator('.graphiql-dropdown-item', { hasText: operation }).click();
    await page.waitForFunction((previous) => {
      const text = document.querySelector('.result-window')?.textContent ?? '';
      return text.includes('}') && text !== previous;
    }, before);
    return JSON.parse(
      ((await page.locator('.result-window').textContent()) ?? '').replace(/\u00a0/g, ' '),
    );
  }

  async function typeInto(page: Page, editor: string, text: string): Promise<void> {
    await page.locator(`${editor} .monaco-editor`).first().click();
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText(text);
  }

  it('keeps working after a restart with a new development secret', async () => {
    mkdirSync(SHOTS, { recursive: true });
    const port = await freePort();
    // One database for both starts, so the task started before is there after (Postgres).
    const database = await freshDatabase();
    const start = async (dataDir: string) => {
      await seedDataDir(dataDir);
      return startTestApp({ database, env: { ...DEV, DATA_DIR: dataDir, PORT: String(port) } });
    };

    const first = await start(dataDirs[0]!);
    let id: string;
    try {
      const { context, page } = await open(first.url);
      const started = await run(page, 'Start');
      expect(started.errors).toBeUndefined();
      id = started.data.startTask.id;
      await page.getByText('Variables', { exact: true }).click();
      await typeInto(page, '.graphiql-editor-tool', JSON.stringify({ id }));
      const polled = await run(page, 'Poll');
      expect(polled.data.task.id).toBe(id);
      await page.screenshot({ path: join(SHOTS, 'graphiql-1-before-restart.png') });
      // GraphiQL saves its tabs half a second after a change: let it, as a person would.
      await page.waitForFunction(
        (taskId) => localStorage.getItem('graphiql:tabState')?.includes(taskId),
        id,
      );
      await context.close();
    } finally {
      await first.stop();
    }

    const second = await start(dataDirs[1]!);
    try {
      expect(second.url).toBe(first.url);
      expect(second.app.devToken).not.toBe(first.app.devToken);
      const { context, page } = await open(second.url);
      // Back to the tab used before the restart, its query, variables and headers restored
      // (GraphiQL opens a new one on each visit: closing it shows the old one).
      const tabs = page.getByRole('tab');
      await expect.poll(() => tabs.count()).toBe(2);
      await tabs.nth(1).getByRole('button', { name: 'Close Tab' }).click();
      await page.locator('.graphiql-query-editor', { hasText: 'mutation Start' }).waitFor();
      const polled = await run(page, 'Poll');
      await page.screenshot({ path: join(SHOTS, 'graphiql-2-after-restart.png') });
      // Before, GraphiQL restored the old token here and this was UNAUTHENTICATED.
      expect(polled.errors).toBeUndefined();
      if (database.url) expect(polled.data.task.id).toBe(id);
      else expect(polled.data).toHaveProperty('task'); // PGlite: a new DATA_DIR, a new database
      const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }));
      expect(stored).toContain(second.app.devToken);
      expect(stored).not.toContain(first.app.devToken);
      await context.close();
    } finally {
      await second.stop();
      await database.drop();
    }
    // Two server starts and a browser: longer than most.
  }, 120_000);
});

function rawGet(
  url: string,
  headers: Record<string, string>,
): Promise<{ headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

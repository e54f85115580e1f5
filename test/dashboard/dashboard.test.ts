import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Locator, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_SCOPES, startTestApp, type TestApp } from '../helpers/app.js';
import { browserSuite, CHROMIUM, CHROMIUM_ARGS } from '../helpers/browser.js';
import { ROOT } from '../helpers/process.js';
import { rest } from '../helpers/rest.js';

/**
 * The dashboard in headless Chromium (Debian's, as `.ci/run` installs it), used as a person
 * would: elements found by role and visible text, a screenshot of every step in
 * test/.screenshots/.
 */

const SHOTS = join(ROOT, 'test/.screenshots');

let browser: Browser;
let t: TestApp;
let alice: string;

const { suite, title } = browserSuite('dashboard');

suite(title, () => {
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    [browser, t] = await Promise.all([
      chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS }),
      startTestApp(),
    ]);
    alice = await t.token('alice', ['tasks:read', 'tasks:write']);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  let current: Page | undefined;
  afterEach(async (context) => {
    // What the page looked like when a step failed, beside the steps' screenshots.
    if (context.task.result?.state === 'fail' && current && !current.isClosed())
      await shot(current, `failed-${context.task.name.replace(/\W+/g, '-')}`);
    await current?.close();
  });

  async function signedIn(token: string, width = 1280): Promise<Page> {
    const page = await browser.newPage({ viewport: { width, height: 860 } });
    current = page;
    page.on('pageerror', (err) => console.error('page error:', err.message));
    await page.goto(t.url);
    await page.getByLabel('Token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: /tasks/i }).waitFor();
    await page.getByText('live', { exact: true }).waitFor();
    return page;
  }

  /**
   * Resolves once the page's tasksUpdated subscription is in place on the server: a task
   * started after it shows up. (A socket says when it is connected, not when a subscription
   * is registered, so a task started in between would only show on the next load.)
   */
  async function listening(page: Page, token = alice): Promise<void> {
    for (;;) {
      const probe = await startOverRest('sleep', { ms: 0 }, token);
      const seen = await rowOf(page, probe)
        .getByText('completed')
        .waitFor({ timeout: 3_000 })
        .then(
          () => true,
          () => false,
        );
      if (seen) return;
    }
  }

  const shot = (page: Page, name: string) =>
    page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const rowOf = (page: Page, id: string) =>
    page.getByRole('row').filter({ hasText: id.slice(0, 8) });
  const startOverRest = async (kind: string, input: unknown, token = alice) =>
    (await rest(t.url, 'POST', '/v1/jobs', { token, body: { kind, input } })).body.taskId as string;

  /** Waits until the bar's value passes `above`; returns the value seen. */
  async function barPasses(bar: Locator, above: number): Promise<number> {
    const handle = await bar.elementHandle();
    await bar
      .page()
      .waitForFunction(
        ([el, min]) => Number((el as Element).getAttribute('aria-valuenow')) > (min as number),
        [handle, above] as const,
      );
    return Number(await bar.getAttribute('aria-valuenow'));
  }

  it('signs in with a token and shows a task started over REST live, its bar advancing', async () => {
    const page = await signedIn(alice);
    await page.getByText('No tasks yet').waitFor();
    await shot(page, '1-signed-in');
    await listening(page);
    const id = await startOverRest('sleep', { ms: 6000, steps: 12 });
    const row = rowOf(page, id);
    await row.getByText('working').waitFor();
    const bar = row.getByRole('progressbar');
    const first = await barPasses(bar, 0);
    await shot(page, '2-live-progress');
    const later = await barPasses(bar, first);
    expect(later).toBeGreaterThan(first);
    await row.getByText('completed').waitFor({ timeout: 20_000 });
    expect(await bar.getAttribute('aria-valuenow')).toBe('100');
  });

  it('cancels a task from its row', async () => {
    const page = await signedIn(alice);
    await listening(page);
    const id = await startOverRest('sleep', { ms: 600_000 });
    const row = rowOf(page, id);
    await row.getByRole('button', { name: 'Cancel' }).click();
    await row.getByText('cancelled').waitFor();
    await shot(page, '3-cancelled');
    const read = await rest(t.url, 'GET', `/v1/jobs/${id}`, { token: alice });
    expect(read.body.status).toBe('cancelled');
  });

  it("starts a task from the form made from its kind's schema, and shows its result", async () => {
    const page = await signedIn(alice);
    await page.getByLabel('Kind').selectOption('sleep');
    await page.getByLabel('ms', { exact: true }).fill('300');
    await page.getByLabel('steps', { exact: true }).fill('3');
    await shot(page, '4-start-form');
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    const detail = page.getByRole('region', { name: /sleep/ });
    await detail.getByRole('heading', { name: 'Result' }).waitFor();
    expect(await detail.locator('pre').first().textContent()).toContain('"sleptMs"');
    await shot(page, '5-result');
    const started = await t.gql('{ tasks { edges { node { kind input } } } }', {}, alice);
    expect(started.data.tasks.edges[0].node).toEqual({
      kind: 'sleep',
      input: { ms: 300, steps: 3 },
    });
  });

  it('answers an approval through the form made from its schema', async () => {
    const page = await signedIn(alice);
    await listening(page);
    const id = await startOverRest('approval', { question: 'Publish the quarterly report?' });
    const row = rowOf(page, id);
    await row.getByRole('button', { name: 'Answer' }).click();
    const form = page.getByRole('form', { name: 'Answer' });
    await form.getByText('Publish the quarterly report?').waitFor();
    await form.getByLabel('approved').check();
    await form.getByLabel('comment').fill('Looks good');
    await shot(page, '6-approval');
    await form.getByRole('button', { name: 'Send answer' }).click();
    await row.getByText('completed').waitFor();
    const detail = page.getByRole('region', { name: /approval/ });
    await detail.getByText('"Looks good"').waitFor();
    await shot(page, '7-approved');
    const read = await rest(t.url, 'GET', `/v1/jobs/${id}`, { token: alice });
    expect(read.body.result).toEqual({ approved: true, comment: 'Looks good' });
  });

  it("lets an admin view another principal's tasks live, without payloads", async () => {
    const root = await t.token('root', ADMIN_SCOPES);
    const page = await signedIn(root);
    await page.getByLabel('Principal').fill('alice');
    await page.getByRole('button', { name: 'View' }).click();
    await page.getByRole('heading', { name: 'Tasks of alice' }).waitFor();
    await listening(page);
    const id = await startOverRest('sleep', { ms: 200 });
    const row = rowOf(page, id);
    await row.getByText('completed').waitFor();
    await row.getByRole('button', { name: 'sleep' }).click();
    const detail = page.getByRole('region', { name: /sleep/ });
    await detail.getByText('alice', { exact: true }).waitFor();
    expect(await detail.getByText('Hidden: only the owner sees payloads.').count()).toBe(2); // input, result
    expect(await detail.locator('pre').count()).toBe(0);
    await shot(page, '8-admin');
  });

  it('fits a phone screen', async () => {
    const page = await signedIn(alice, 390);
    await page.getByRole('progressbar').first().waitFor();
    await shot(page, '9-phone');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth > innerWidth);
    expect(overflow).toBe(false);
  });

  it('is signed in as dev in development, with no token to paste', async () => {
    const dev = await startTestApp({ env: { AUTH_JWT_SECRET: '' } });
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
      await page.goto(dev.url);
      await page.getByText('dev', { exact: true }).waitFor();
      await page.getByRole('heading', { name: 'Your tasks' }).waitFor();
      expect(await page.getByLabel('Token').isVisible()).toBe(false);
      await page.close();
    } finally {
      await dev.stop();
    }
  });
});

describe('dashboard route', () => {
  it('is off with DASHBOARD=false', async () => {
    const off = await startTestApp({ env: { DASHBOARD: 'false' } });
    try {
      expect((await fetch(off.url)).status).toBe(404);
      expect((await fetch(`${off.url}/dashboard/app.js`)).status).toBe(404);
    } finally {
      await off.stop();
    }
  });

  it('serves the page without a token in production and its modules with validators', async () => {
    const app = await startTestApp();
    try {
      const page = await fetch(app.url);
      expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(await page.text()).not.toContain('taskhandle-dev-token');
      const js = await fetch(`${app.url}/dashboard/vendor/graphql-ws/client.js`);
      expect(js.headers.get('content-type')).toContain('javascript');
      const etag = js.headers.get('etag')!;
      const again = await fetch(`${app.url}/dashboard/app.js`, {
        headers: { 'if-none-match': etag },
      });
      expect(again.status).toBe(200);
      const same = await fetch(`${app.url}/dashboard/vendor/graphql-ws/client.js`, {
        headers: { 'if-none-match': etag },
      });
      expect(same.status).toBe(304);
    } finally {
      await app.stop();
    }
  });
});

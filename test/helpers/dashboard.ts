import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startTestApp, type TestApp, type TestAppOptions } from './app.js';
import { CHROMIUM, CHROMIUM_ARGS } from './browser.js';
import { ROOT } from './process.js';
import { rest } from './rest.js';

const SHOTS = join(ROOT, 'test/.screenshots');

/** What a dashboard suite drives: the browser, the app, and the steps a person takes. */
export interface Dashboard {
  browser: Browser;
  t: TestApp;
  /** A new page signed in with `token`, its list live; `path` may carry a filter. */
  signedIn(token: string, path?: string): Promise<Page>;
  /** A task started over REST; its id. */
  startOverRest(
    token: string,
    kind: string,
    input: unknown,
    labels?: Record<string, string>,
  ): Promise<string>;
  /**
   * Resolves once the page's tasksUpdated subscription is in place (see dashboard.test.ts):
   * a task `probe` starts (and brings to completion) afterwards shows up with status `text`.
   */
  listening(page: Page, probe: () => Promise<string>, text?: string): Promise<void>;
  rowOf(page: Page, id: string): ReturnType<Page['getByRole']>;
  shot(page: Page, name: string): Promise<unknown>;
}

/**
 * Starts Chromium and an app for the suite around it, closes both after, and keeps a
 * screenshot of the page of any failed test in test/.screenshots/.
 */
export function dashboardSuite(options: TestAppOptions = {}): Dashboard {
  const pages: Page[] = [];
  const d = {} as Dashboard;
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    [d.browser, d.t] = await Promise.all([
      chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS }),
      startTestApp(options),
    ]);
  });
  afterAll(async () => {
    await d.browser?.close();
    await d.t?.stop();
  });
  afterEach(async (context) => {
    const page = pages.at(-1);
    if (context.task.result?.state === 'fail' && page && !page.isClosed())
      await d.shot(page, `failed-${context.task.name.replace(/\W+/g, '-')}`);
    for (const open of pages.splice(0)) await open.close();
  });

  d.shot = (page, name) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  d.rowOf = (page, id) => page.getByRole('row').filter({ hasText: id.slice(0, 8) });
  d.startOverRest = async (token, kind, input, labels) =>
    (
      await rest(d.t.url, 'POST', '/v1/jobs', {
        token,
        body: labels ? { kind, input, labels } : { kind, input },
      })
    ).body.taskId as string;
  d.signedIn = async (token, path = '/') => {
    const page = await d.browser.newPage({ viewport: { width: 1280, height: 860 } });
    pages.push(page);
    page.on('pageerror', (err) => console.error('page error:', err.message));
    await page.goto(`${d.t.url}${path}`);
    await page.getByLabel('Token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: /tasks/i }).waitFor();
    await page.getByText('live', { exact: true }).waitFor();
    return page;
  };
  d.listening = async (page, probe, text = 'completed') => {
    for (;;) {
      const id = await probe();
      const seen = await d
        .rowOf(page, id)
        .getByText(text)
        .waitFor({ timeout: 3_000 })
        .then(
          () => true,
          () => false,
        );
      if (seen) return;
    }
  };
  return d;
}

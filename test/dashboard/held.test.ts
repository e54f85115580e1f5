import { expect, it } from 'vitest';
import { browserSuite } from '../helpers/browser.js';
import { dashboardSuite } from '../helpers/dashboard.js';
import { rest } from '../helpers/rest.js';

/**
 * "held because …" (DESIGN §14, §17): a task that waits for its rate limit key or its
 * concurrency key says so in its row and its panel, in headless Chromium, and stops saying it
 * once it goes.
 */

const { suite, title } = browserSuite('dashboard held tasks');

suite(title, () => {
  const d = dashboardSuite();

  /** Starts a long sleep over REST with `fields` (a key and its limit); its id. */
  const start = async (token: string, fields: Record<string, unknown>) => {
    const res = await rest(d.t.url, 'POST', '/v1/jobs', {
      token,
      body: { kind: 'sleep', input: { ms: 600_000 }, ...fields },
    });
    expect(res.status).toBe(202);
    return res.body.taskId as string;
  };

  it('says a task is held because its rate limit key is at its limit, and when it may start', async () => {
    const ana = await d.t.token('ana');
    const limited = { rateLimitKey: 'crm-api', rateLimit: { limit: 1, periodMs: 3_600_000 } };
    const first = await start(ana, limited);
    const second = await start(ana, limited);
    const page = await d.signedIn(ana);
    const row = d.rowOf(page, second);
    await row.getByText('held because its rate limit key is at its limit').waitFor();
    // The running one is not held.
    await d.rowOf(page, first).waitFor();
    expect(
      await d
        .rowOf(page, first)
        .getByText(/held because/)
        .count(),
    ).toBe(0);
    await row.getByRole('button', { name: 'sleep' }).click();
    const detail = page.getByRole('region', { name: /sleep/ });
    await detail.getByText('Why it waits').waitFor();
    await detail
      .getByText(/^Rate limited: next start at \d{4}-.*\(1 per 3600000 ms\)\.$/)
      .waitFor();
    await d.shot(page, 'held-rate-limit');
    for (const id of [first, second])
      await rest(d.t.url, 'DELETE', `/v1/jobs/${id}`, { token: ana });
    await detail.getByText('cancelled').first().waitFor();
    expect(await detail.getByText('Why it waits').count()).toBe(0);
  });

  it('says a task is held because its concurrency key is at its limit, until a slot frees', async () => {
    const bo = await d.t.token('bo');
    const keyed = { concurrencyKey: 'export', concurrencyLimit: 1 };
    const first = await start(bo, keyed);
    const second = await start(bo, keyed);
    const page = await d.signedIn(bo);
    const row = d.rowOf(page, second);
    await row.getByText('held because its concurrency key is at its limit').waitFor();
    await d.shot(page, 'held-concurrency');
    // The slot frees: the held task goes, and says so live.
    await rest(d.t.url, 'DELETE', `/v1/jobs/${first}`, { token: bo });
    await row.getByText(/held because/).waitFor({ state: 'detached' });
    await rest(d.t.url, 'DELETE', `/v1/jobs/${second}`, { token: bo });
  });
});

import { expect, it } from 'vitest';
import { browserSuite } from '../helpers/browser.js';
import { dashboardSuite } from '../helpers/dashboard.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { rest } from '../helpers/rest.js';

/** The dashboard's schedules (DESIGN §17): next and last runs, run now, pause, in Chromium. */

const { suite, title } = browserSuite('dashboard schedules');

suite(title, () => {
  // Schedules fire by a clock the test moves, started at the page's own time.
  const clock = new ManualClock(Date.now());
  const d = dashboardSuite({ scheduleClock: clock });

  it('lists schedules with their next and last runs, and follows an occurrence as it runs', async () => {
    const jo = await d.t.token('jo');
    const put = (key: string, body: Record<string, unknown>) =>
      rest(d.t.url, 'PUT', `/v1/schedules/${key}`, { token: jo, body });
    const minutely = await put('minutely', { cron: '* * * * *', kind: 'sleep', input: { ms: 0 } });
    await put('weekly-report', { cron: '@weekly', kind: 'sleep', input: { ms: 0 }, paused: true });

    const page = await d.signedIn(jo);
    const card = page.getByRole('region', { name: 'Schedules' });
    const row = (key: string) => card.getByRole('row').filter({ hasText: key });
    await row('minutely')
      .getByText(/^in \d/)
      .waitFor();
    await row('minutely').getByText('never').waitFor();
    await row('weekly-report').getByText('paused', { exact: true }).waitFor();

    // The minute comes: its task runs, and the row shows it as the last run, to its end.
    clock.set(Date.parse(minutely.body.nextRunAt) + 100);
    await row('minutely').getByText('completed').waitFor();
    expect(await row('minutely').getByText('never').count()).toBe(0);

    // Resumed, the weekly schedule has a next run; run now, its task shows in the list too.
    await row('weekly-report').getByRole('button', { name: 'Resume' }).click();
    await row('weekly-report').getByRole('button', { name: 'Pause' }).waitFor();
    await row('weekly-report')
      .getByText(/^in \d/)
      .waitFor();
    await row('weekly-report').getByRole('button', { name: 'Run now' }).click();
    await row('weekly-report').getByText('completed').waitFor();
    const read = await rest(d.t.url, 'GET', '/v1/schedules/weekly-report', { token: jo });
    await d.rowOf(page, read.body.lastTaskId).getByText('completed').waitFor();
    await d.shot(page, 'schedules');
  });
});

import { expect, it } from 'vitest';
import { browserSuite } from '../helpers/browser.js';
import { dashboardSuite } from '../helpers/dashboard.js';
import { rest } from '../helpers/rest.js';

/** Run again (DESIGN §15) from the dashboard's task panel, in headless Chromium. */

const { suite, title } = browserSuite('dashboard run again');

suite(title, () => {
  const d = dashboardSuite();

  it('runs a failed task again as a new task, which links back to the old one', async () => {
    const jo = await d.t.token('jo');
    const failed = await d.startOverRest(jo, 'sleep', { ms: 0, fail: 'boom' }, { tenant: 'acme' });
    const page = await d.signedIn(jo);
    const row = d.rowOf(page, failed);
    await row.getByText('failed').waitFor();
    await row.getByRole('button', { name: 'sleep' }).click();
    const detail = page.getByRole('region', { name: /sleep/ });
    await detail.getByText('HANDLER_ERROR').waitFor();
    await detail.getByRole('button', { name: 'Run again' }).click();

    // The panel now shows the new task, linked to the old one by retryOf.
    const back = detail.getByRole('button', { name: failed });
    await back.waitFor();
    const id = await detail.locator('dd code').first().textContent();
    expect(id).not.toBe(failed);
    await detail.getByText('tenant:acme', { exact: true }).waitFor();
    await d.rowOf(page, id!).waitFor();
    await d.shot(page, 'run-again');
    const read = await rest(d.t.url, 'GET', `/v1/jobs/${id}`, { token: jo });
    expect(read.body).toMatchObject({ retryOf: failed, labels: { tenant: 'acme' } });

    // The link opens the old task, which stays as it was.
    await back.click();
    await detail.locator('dd code', { hasText: failed }).waitFor();
    await detail.getByRole('alert').getByText('boom').waitFor();
  });

  it('offers Run again on a cancelled task, not on a completed or a working one', async () => {
    const kim = await d.t.token('kim');
    const done = await d.startOverRest(kim, 'sleep', { ms: 0 });
    const working = await d.startOverRest(kim, 'sleep', { ms: 600_000 });
    const page = await d.signedIn(kim);
    const detail = page.getByRole('region', { name: /sleep/ });
    const runAgain = detail.getByRole('button', { name: 'Run again' });

    await d.rowOf(page, done).getByText('completed').waitFor();
    await d.rowOf(page, done).getByRole('button', { name: 'sleep' }).click();
    await detail.getByRole('heading', { name: 'Result' }).waitFor();
    expect(await runAgain.count()).toBe(0);

    await d.rowOf(page, working).getByRole('button', { name: 'sleep' }).click();
    await detail.locator('dd code', { hasText: working }).waitFor();
    await detail.getByRole('button', { name: 'Cancel task' }).waitFor();
    expect(await runAgain.count()).toBe(0);

    await detail.getByRole('button', { name: 'Cancel task' }).click();
    await runAgain.waitFor();
    await runAgain.click();
    await detail.getByRole('button', { name: working }).waitFor();
  });

  it('shows a refused Run again coded in the panel', async () => {
    const lu = await d.t.token('lu');
    const failed = await d.startOverRest(lu, 'sleep', { ms: 0, fail: 'boom' });
    const page = await d.signedIn(lu);
    await d.rowOf(page, failed).getByText('failed').waitFor();
    await d.rowOf(page, failed).getByRole('button', { name: 'sleep' }).click();
    const detail = page.getByRole('region', { name: /sleep/ });
    await detail.getByRole('button', { name: 'Run again' }).waitFor();
    // The task goes while the panel shows it: the server answers NOT_FOUND.
    await d.t.app.db.kysely.deleteFrom('tasks').where('id', '=', failed).execute();
    await detail.getByRole('button', { name: 'Run again' }).click();
    await detail
      .getByRole('alert')
      .getByText(/^NOT_FOUND: /)
      .waitFor();
  });
});

import { expect, it } from 'vitest';
import { ADMIN_SCOPES, eventually } from '../helpers/app.js';
import { browserSuite } from '../helpers/browser.js';
import { dashboardSuite } from '../helpers/dashboard.js';
import { rest } from '../helpers/rest.js';

/**
 * The dashboard's filter bar (DESIGN §15 "Watching many") in headless Chromium: label chips,
 * kind and status narrow the list and its live subscription, and the address carries them.
 */

const { suite, title } = browserSuite('dashboard filter');

suite(title, () => {
  const d = dashboardSuite();

  const labelsIn = (url: string) => new URL(url).searchParams.getAll('label');
  const status = async (id: string) =>
    (await rest(d.t.url, 'GET', `/v1/jobs/${id}`, { token: await d.t.token('hal') })).body.status;

  it('narrows the list to a label, live, and keeps the filter in the address across a reload', async () => {
    const fay = await d.t.token('fay');
    const acme = await d.startOverRest(fay, 'sleep', { ms: 0 }, { tenant: 'acme', team: 'a' });
    const other = await d.startOverRest(fay, 'sleep', { ms: 0 }, { tenant: 'globex' });
    const page = await d.signedIn(fay);
    await d.rowOf(page, acme).getByText('completed').waitFor();
    await d.rowOf(page, other).getByText('completed').waitFor();
    // Every task shows its labels in the list.
    await d.rowOf(page, acme).getByRole('button', { name: 'tenant:acme' }).waitFor();

    await page.getByLabel('Label key:value').fill('tenant:acme');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.getByRole('button', { name: 'Remove label tenant:acme' }).waitFor();
    await d.rowOf(page, other).waitFor({ state: 'detached' });
    await d.rowOf(page, acme).waitFor();
    expect(labelsIn(page.url())).toEqual(['tenant:acme']);
    await d.shot(page, 'filter-1-label');

    // Live under the same filter: a matching task appears, another does not.
    await d.listening(page, () => d.startOverRest(fay, 'sleep', { ms: 0 }, { tenant: 'acme' }));
    const miss = await d.startOverRest(fay, 'sleep', { ms: 0 }, { tenant: 'globex' });
    const hit = await d.startOverRest(fay, 'sleep', { ms: 0 }, { tenant: 'acme' });
    await d.rowOf(page, hit).getByText('completed').waitFor();
    expect(await d.rowOf(page, miss).count()).toBe(0);

    // A second pair narrows further: every pair must match.
    await d.rowOf(page, acme).getByRole('button', { name: 'team:a' }).click();
    await d.rowOf(page, hit).waitFor({ state: 'detached' });
    expect(labelsIn(page.url())).toEqual(['tenant:acme', 'team:a']);

    await page.reload();
    await page.getByText('live', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Remove label team:a' }).waitFor();
    await d.rowOf(page, acme).getByText('completed').waitFor();
    expect(await d.rowOf(page, hit).count()).toBe(0);
    expect(await d.rowOf(page, other).count()).toBe(0);

    await page.getByRole('button', { name: 'Remove label team:a' }).click();
    await page.getByRole('button', { name: 'Remove label tenant:acme' }).click();
    await d.rowOf(page, other).waitFor();
    expect(labelsIn(page.url())).toEqual([]);

    // Back steps through earlier filters.
    await page.goBack();
    await page.getByRole('button', { name: 'Remove label tenant:acme' }).waitFor();
    await d.rowOf(page, other).waitFor({ state: 'detached' });
    expect(labelsIn(page.url())).toEqual(['tenant:acme']);
  });

  it('opens a shared address with its filter, and shows the labels in the detail', async () => {
    const gus = await d.t.token('gus');
    const acme = await d.startOverRest(gus, 'sleep', { ms: 0 }, { tenant: 'acme' });
    const other = await d.startOverRest(gus, 'sleep', { ms: 0 });
    const page = await d.signedIn(gus, '/?label=tenant:acme&kind=sleep');
    await d.rowOf(page, acme).getByText('completed').waitFor();
    expect(await d.rowOf(page, other).count()).toBe(0);
    expect(await page.getByLabel('Show').inputValue()).toBe('sleep');
    await d.rowOf(page, acme).getByRole('button', { name: 'sleep' }).click();
    const detail = page.getByRole('region', { name: /sleep/ });
    await detail.getByText('tenant:acme', { exact: true }).waitFor();
  });

  it("opens an admin's shared view of another principal's tasks under a filter", async () => {
    const mo = await d.t.token('mo');
    const acme = await d.startOverRest(mo, 'sleep', { ms: 0 }, { tenant: 'acme' });
    const other = await d.startOverRest(mo, 'sleep', { ms: 0 }, { tenant: 'globex' });
    const root = await d.t.token('root', ADMIN_SCOPES);
    const page = await d.signedIn(root, '/?owner=mo&label=tenant:acme');
    await page.getByRole('heading', { name: 'Tasks of mo' }).waitFor();
    await d.rowOf(page, acme).getByText('completed').waitFor();
    expect(await d.rowOf(page, other).count()).toBe(0);
  });

  it('filters by kind and by status; a task leaves and joins the list live as its status changes', async () => {
    const hal = await d.t.token('hal');
    const slept = await d.startOverRest(hal, 'sleep', { ms: 0 });
    const asked = await d.startOverRest(hal, 'approval', { question: 'Ship it?' });
    const later = await d.startOverRest(hal, 'approval', { question: 'And this?' });
    const approve = async (id: string) => {
      await eventually(async () => (await status(id)) === 'input_required' || undefined);
      const answered = await rest(d.t.url, 'POST', `/v1/jobs/${id}/input`, {
        token: hal,
        body: { key: 'decision', value: { approved: true } },
      });
      expect(answered.status).toBe(200);
    };
    const page = await d.signedIn(hal);
    await d.rowOf(page, asked).getByText('input required').waitFor();
    await d.rowOf(page, later).getByText('input required').waitFor();
    await d.rowOf(page, slept).getByText('completed').waitFor();

    await page.getByLabel('Show').selectOption('approval');
    await d.rowOf(page, slept).waitFor({ state: 'detached' });
    expect(new URL(page.url()).searchParams.get('kind')).toBe('approval');

    await page.getByLabel('Status').selectOption('INPUT_REQUIRED');
    expect(new URL(page.url()).searchParams.get('status')).toBe('input_required');
    await d.listening(
      page,
      () => d.startOverRest(hal, 'approval', { question: 'Probe?' }),
      'input required',
    );
    await approve(asked);
    await d.rowOf(page, asked).waitFor({ state: 'detached' });
    expect(await d.rowOf(page, later).count()).toBe(1);

    await page.getByLabel('Status').selectOption('FAILED');
    await page.getByText('No tasks match this filter.').waitFor();
    await page.getByLabel('Status').selectOption('COMPLETED');
    await d.rowOf(page, asked).getByText('completed').waitFor();
    await d.listening(page, async () => {
      const probe = await d.startOverRest(hal, 'approval', { question: 'Probe?' });
      await approve(probe);
      return probe;
    });
    await approve(later);
    await d.rowOf(page, later).getByText('completed').waitFor();
  });

  it('shows a refused label filter coded, under the bar', async () => {
    const ida = await d.t.token('ida');
    const page = await d.signedIn(ida);
    await page.getByLabel('Label key:value').fill('no colon');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page
      .getByRole('alert')
      .getByText(/key:value/)
      .waitFor();
    await page.getByLabel('Label key:value').fill('Bad Key:x');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page
      .getByRole('alert')
      .getByText(/^BAD_USER_INPUT: /)
      .waitFor();
  });
});

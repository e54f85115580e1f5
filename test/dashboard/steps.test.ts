import { expect, it } from 'vitest';
import { ADMIN_SCOPES } from '../helpers/app.js';
import { browserSuite } from '../helpers/browser.js';
import { dashboardSuite } from '../helpers/dashboard.js';

/**
 * Durable steps in the dashboard, in headless Chromium: a `pipeline` started over GraphQL
 * shows its step timeline as it runs, takes its signal from the panel, and lists its children
 * under it, each opening its own panel that links back.
 */

const { suite, title } = browserSuite('dashboard steps');

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id } }`;

suite(title, () => {
  const d = dashboardSuite();

  async function startPipeline(token: string, input: Record<string, unknown>): Promise<string> {
    const res = await d.t.gql(START, { input: { kind: 'pipeline', input } }, token);
    expect(res.errors).toBeUndefined();
    return res.data.startTask.id;
  }

  it('follows a pipeline: its sleep and signal wait on the timeline, the signal sent, its children', async () => {
    const jo = await d.t.token('jo');
    const page = await d.signedIn(jo);
    const id = await startPipeline(jo, {
      stages: 2,
      sleepMs: 300,
      signal: 'paid',
      children: 2,
      childMs: 100,
    });
    await d.rowOf(page, id).getByRole('button', { name: 'pipeline' }).click();
    const detail = page.getByRole('region', { name: /pipeline/ });
    const steps = detail.getByRole('region', { name: 'Steps' });
    const step = (name: string) => steps.locator(`li[data-step="${name}"]`);

    // The task suspends on its signal, the timeline says so and shows the signal URL.
    await step('paid').getByText('waiting for a signal').waitFor();
    await step('stage-1').getByText('done').waitFor();
    await step('nap').getByText('done').waitFor();
    const url = await step('paid').locator('code').textContent();
    expect(url).toMatch(new RegExp(`^${d.t.url}/v1/signals/`));
    await d.shot(page, 'steps-waiting');

    await step('paid').getByLabel('Payload of signal paid').fill('{"amount": 12}');
    await step('paid').getByRole('button', { name: 'Send signal' }).click();

    // The rest runs: stage 2, then two children, awaited; the timeline and the list follow.
    await detail.getByRole('heading').getByText('completed').waitFor();
    for (const name of ['paid', 'stage-2', 'child-1', 'child-2'])
      await step(name).getByText('done', { exact: true }).waitFor();
    expect(await step('paid').locator('code').count()).toBe(0);
    const children = detail.getByRole('region', { name: 'Children' });
    await children.getByRole('heading', { name: 'Children (2)' }).waitFor();
    const items = children.getByRole('listitem');
    expect(await items.count()).toBe(2);
    for (const item of await items.all()) await item.getByText('completed').waitFor();
    await d.shot(page, 'steps-done');

    // A child opens its own panel, which names its parent; the parent opens again from there.
    const childId = await step('child-1').getByRole('button').textContent();
    await step('child-1').getByRole('button').click();
    const child = page.getByRole('region', { name: /sleep/ });
    await child.locator('dd code', { hasText: childId! }).waitFor();
    await child.getByRole('button', { name: id }).click();
    await detail.locator('dd code', { hasText: id }).waitFor();
    await d
      .rowOf(page, childId!)
      .getByText(`child of ${id.slice(0, 8)}`)
      .waitFor();
  });

  it('shows a sleep with its wake-up, and an admin the journal without its signal URL', async () => {
    const kim = await d.t.token('kim');
    const asleep = await startPipeline(kim, { stages: 1, sleepMs: 3_600_000 });
    const waiting = await startPipeline(kim, { stages: 1, signal: 'go' });
    const page = await d.signedIn(kim);
    await d.rowOf(page, asleep).getByRole('button', { name: 'pipeline' }).click();
    const detail = page.getByRole('region', { name: /pipeline/ });
    const nap = detail.getByRole('region', { name: 'Steps' }).locator('li[data-step="nap"]');
    await nap.getByText('sleeping').waitFor();
    await nap.getByText(/wakes .* \(in (59m|1h)\)/).waitFor();

    const root = await d.t.token('root', ADMIN_SCOPES);
    const admin = await d.signedIn(root, '/?owner=kim');
    await d.rowOf(admin, waiting).getByRole('button', { name: 'pipeline' }).click();
    const go = admin
      .getByRole('region', { name: /pipeline/ })
      .getByRole('region', { name: 'Steps' })
      .locator('li[data-step="go"]');
    await go.getByText('waiting for a signal').waitFor();
    expect(await go.locator('code').count()).toBe(0);
    // An admin may still send it the signal.
    await go.getByRole('button', { name: 'Send signal' }).click();
    await admin
      .getByRole('region', { name: /pipeline/ })
      .getByRole('heading')
      .getByText('completed')
      .waitFor();
  });
});

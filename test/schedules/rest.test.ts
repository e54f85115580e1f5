import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_SCOPES, startTestApp, type TestApp } from '../helpers/app.js';
import { hold } from '../helpers/kinds.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { restClient } from '../helpers/rest.js';

/**
 * Schedules over plain HTTP (DESIGN §17): `GET/PUT/DELETE /v1/schedules/{key}`,
 * `GET /v1/schedules` and `POST /v1/schedules/{key}/trigger`, errors as problem documents.
 */

describe('schedules over REST', () => {
  let t: TestApp;
  let call: ReturnType<typeof restClient>;
  let alice: string;
  let bob: string;
  let reader: string;
  let admin: string;

  beforeAll(async () => {
    t = await startTestApp({
      kinds: [hold],
      scheduleClock: new ManualClock(Date.parse('2026-05-04T10:00:30Z')),
    });
    call = restClient(t.url);
    [alice, bob, reader, admin] = await Promise.all([
      t.token('alice'),
      t.token('bob'),
      t.token('alice', ['tasks:read']),
      t.token('root', ADMIN_SCOPES),
    ]);
  });
  afterAll(() => t?.stop());

  it('puts, gets, lists, triggers and deletes a schedule', async () => {
    const put = await call('PUT', '/v1/schedules/daily%2Freport', {
      token: alice,
      body: {
        cron: '0 6 * * 1-5',
        timezone: 'America/New_York',
        kind: 'hold',
        input: { to: 'ops' },
        missed: 'once',
        overlap: 'SKIP',
        labels: { team: 'ops' },
        retry: { maxAttempts: 1 },
      },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      key: 'daily/report',
      cron: '0 6 * * 1-5',
      timezone: 'America/New_York',
      input: { to: 'ops' },
      missed: 'once',
      overlap: 'skip',
      paused: false,
      labels: { team: 'ops' },
      retry: { maxAttempts: 1 },
      nextRunAt: '2026-05-05T10:00:00.000Z', // Tuesday 06:00 EDT
      lastRunAt: null,
    });
    const got = await call('GET', '/v1/schedules/daily%2Freport', { token: alice });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(put.body);
    const listed = await call('GET', '/v1/schedules', { token: alice });
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ schedules: [put.body], nextCursor: null });

    const triggered = await call('POST', '/v1/schedules/daily%2Freport/trigger', { token: alice });
    expect(triggered.status).toBe(202);
    expect(triggered.body).toMatchObject({ resultType: 'task', scheduleKey: 'daily/report' });
    expect(triggered.headers.get('location')).toBe(`/v1/jobs/${triggered.body.taskId}`);
    const job = await call('GET', `/v1/jobs/${triggered.body.taskId}`, { token: alice });
    expect(job.body).toMatchObject({ scheduleKey: 'daily/report', labels: { team: 'ops' } });

    const deleted = await call('DELETE', '/v1/schedules/daily%2Freport', { token: alice });
    expect(deleted.status).toBe(204);
    const gone = await call('GET', '/v1/schedules/daily%2Freport', { token: alice });
    expect(gone.status).toBe(404);
    expect(gone.headers.get('content-type')).toContain('application/problem+json');
    expect((await call('DELETE', '/v1/schedules/daily%2Freport', { token: alice })).status).toBe(
      404,
    );
  });

  it('pages with limit and cursor, with a Link to the next page', async () => {
    for (const key of ['p-1', 'p-2', 'p-3'])
      await call('PUT', `/v1/schedules/${key}`, {
        token: bob,
        body: { cron: '@daily', kind: 'hold' },
      });
    const first = await call('GET', '/v1/schedules?limit=2', { token: bob });
    expect(first.body.schedules.map((s: any) => s.key)).toEqual(['p-1', 'p-2']);
    expect(first.headers.get('link')).toBe(
      `</v1/schedules?limit=2&cursor=${first.body.nextCursor}>; rel="next"`,
    );
    const second = await call('GET', `/v1/schedules?limit=2&cursor=${first.body.nextCursor}`, {
      token: bob,
    });
    expect(second.body).toEqual({
      schedules: [expect.objectContaining({ key: 'p-3' })],
      nextCursor: null,
    });
  });

  it('answers bad input, scopes and owners with problem documents', async () => {
    const bad = await call('PUT', '/v1/schedules/x', {
      token: alice,
      body: { cron: '* * *', kind: 'hold' },
    });
    expect(bad.status).toBe(422);
    expect(bad.body).toMatchObject({ code: 'BAD_USER_INPUT', status: 422 });
    expect(bad.body.detail).toContain('cron "* * *"');
    const zone = await call('PUT', '/v1/schedules/x', {
      token: alice,
      body: { cron: '@daily', kind: 'hold', timezone: 'Nowhere/Else' },
    });
    expect(zone.status).toBe(422);
    const otherKey = await call('PUT', '/v1/schedules/x', {
      token: alice,
      body: { key: 'y', cron: '@daily', kind: 'hold' },
    });
    expect(otherKey.status).toBe(422);
    const readOnly = await call('PUT', '/v1/schedules/x', {
      token: reader,
      body: { cron: '@daily', kind: 'hold' },
    });
    expect(readOnly.status).toBe(403);
    expect((await call('GET', '/v1/schedules', {})).status).toBe(401);
    expect((await call('GET', '/v1/schedules/p-1', { token: alice })).status).toBe(404);
    expect((await call('GET', '/v1/schedules/%C3%A9t%C3%A9', { token: alice })).status).toBe(404);
    expect(
      (
        await call('PUT', '/v1/schedules/%C3%A9t%C3%A9', {
          token: alice,
          body: { cron: '@daily', kind: 'hold' },
        })
      ).status,
    ).toBe(422);
    expect((await call('GET', '/v1/schedules/p-1?owner=bob', { token: alice })).status).toBe(403);
    const asAdmin = await call('GET', '/v1/schedules/p-1?owner=bob', { token: admin });
    expect(asAdmin.status).toBe(200);
    expect(asAdmin.body).toMatchObject({ key: 'p-1', owner: 'bob' });
    expect(asAdmin.body).not.toHaveProperty('input');
    const wrongMethod = await call('POST', '/v1/schedules/p-1', { token: bob });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('GET, PUT, DELETE');
  });
});

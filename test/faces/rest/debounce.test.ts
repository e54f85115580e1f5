import { describe, expect, it } from 'vitest';
import { alice, call, expectProblem, post, useRestApp } from '../../helpers/rest-jobs.js';

/** DESIGN §17 debounce through REST: `debounce` in the body of POST /v1/jobs and its batch. */

useRestApp();

const MINUTE = 60_000;

describe('POST /v1/jobs with debounce', () => {
  it('answers 202 with the same task and Location for every start of a burst', async () => {
    const debounce = { key: 'rest-burst', delayMs: MINUTE };
    const first = await post(alice, { kind: 'hold', input: { v: 1 }, debounce });
    const second = await post(alice, { kind: 'hold', input: { v: 2 }, debounce });
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    expect(second.body.taskId).toBe(first.body.taskId);
    expect(second.headers.get('location')).toBe(`/v1/jobs/${first.body.taskId}`);
    expect(Date.parse(second.body.runAt)).toBe(Date.parse(second.body.lastUpdatedAt) + MINUTE);
    const read = await call('GET', `/v1/jobs/${first.body.taskId}`, { token: alice });
    expect(read.body.status).toBe('working');
  });

  it('joins a burst across the entries of a batch', async () => {
    const debounce = { key: 'rest-batch', delayMs: MINUTE };
    const res = await call('POST', '/v1/jobs/batch', {
      token: alice,
      body: {
        jobs: [
          { kind: 'hold', input: { v: 1 }, debounce },
          { kind: 'hold', input: { v: 2 }, debounce },
        ],
      },
    });
    expect(res.status).toBe(202);
    const [one, two] = res.body.jobs;
    expect(two.taskId).toBe(one.taskId);
  });

  it.each([
    [
      'a debounce that is not an object',
      { debounce: 'soon' },
      {},
      /^debounce must be a JSON object/,
    ],
    ['a delay given as text', { debounce: { key: 'k', delayMs: '5' } }, {}, /debounce\.delayMs/],
    ['a key that is not text', { debounce: { key: 5, delayMs: 5 } }, {}, /debounce\.key/],
    [
      'an Idempotency-Key beside it',
      { debounce: { key: 'k', delayMs: 5 } },
      { 'idempotency-key': 'i' },
      /^idempotencyKey/,
    ],
    ['delayMs beside it', { debounce: { key: 'k', delayMs: 5 }, delayMs: 5 }, {}, /^delayMs/],
  ])(
    'refuses %s with 422 BAD_USER_INPUT naming the field',
    async (_what, body, headers, detail) => {
      const res = await post(alice, { kind: 'hold', input: {}, ...body }, headers);
      expectProblem(res, 422, 'BAD_USER_INPUT');
      expect(res.body.detail).toMatch(detail);
    },
  );
});

import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../../src/errors.js';
import { checkBody } from '../../../src/faces/rest/body-check.js';
import { ref } from '../../../src/faces/rest/json-schema.js';
import type { RequestBody } from '../../../src/faces/rest/route.js';

/** Bodies refused by the schemas of openapi.json, in words that name the member at fault. */

const START: RequestBody = { description: '', schema: ref('StartTask') };
const BATCH: RequestBody = { description: '', schema: ref('StartBatch'), entries: 'jobs' };
const FILTER: RequestBody = { description: '', schema: ref('TaskFilter'), name: 'filter' };
const SCHEDULE: RequestBody = { description: '', schema: ref('ScheduleInput') };

function refusal(body: RequestBody, value: unknown): ServiceError {
  try {
    checkBody(body, value);
  } catch (err) {
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).code).toBe('BAD_USER_INPUT');
    return err as ServiceError;
  }
  throw new Error(`took ${JSON.stringify(value)}`);
}

describe('checkBody', () => {
  it('takes a valid body as it is, nulls for absent members included', () => {
    const body = { kind: 'k', input: { deep: [1] }, ttlMs: null, retry: { factor: 1.5 } };
    expect(checkBody(START, body)).toBe(body);
    expect(checkBody(FILTER, { status: 'working', kind: ['a', 'b'] })).toBeTruthy();
  });

  it.each([
    [null, 'The body must be a JSON object.'],
    [[1], 'The body must be a JSON object.'],
    [{}, 'kind must be a string.'],
    [{ kind: 42 }, 'kind must be a string.'],
    [{ kind: 'k', ttlMs: 1.5 }, 'ttlMs must be an integer.'],
    [{ kind: 'k', runAt: 5 }, 'runAt must be a date and time (ISO 8601).'],
    [{ kind: 'k', retry: { factor: 'x' } }, 'retry.factor must be a number.'],
    [{ kind: 'k', retry: { tries: 3 } }, 'retry has no member "tries".'],
    [{ kind: 'k', labels: 'x' }, 'labels must be a JSON object.'],
    [{ kind: 'k', labels: { team: 5 } }, 'labels.team must be a string.'],
    [{ kind: 'k', webhook: {} }, 'webhook.url must be a string.'],
  ])('refuses %j: %s', (value, message) => {
    expect(refusal(START, value).message).toBe(message);
  });

  it('names a batch entry by its index, as a member and in the words', () => {
    const err = refusal(BATCH, { jobs: [{ kind: 'a' }, { kind: 'b' }, { input: {} }] });
    expect(err.message).toBe('entry 2: kind must be a string.');
    expect(err.details).toEqual({ index: 2 });
    expect(refusal(BATCH, { jobs: [7] }).message).toBe('entry 0: must be a JSON object.');
    expect(refusal(BATCH, {}).details).toBeUndefined();
  });

  it('names the filter’s members as the domain does, and refuses one it has not', () => {
    expect(refusal(FILTER, { createdBefore: 5 }).message).toBe(
      'filter.createdBefore must be a date and time (ISO 8601).',
    );
    expect(refusal(FILTER, { status: ['working', 3] }).message).toBe(
      'filter.status[1] must be a string.',
    );
    expect(refusal(FILTER, { colour: 'red' }).message).toBe('filter has no member "colour".');
  });

  it('lists a policy’s values in lower case, though upper case is taken', () => {
    expect(checkBody(SCHEDULE, { cron: '@daily', kind: 'k', missed: 'ONCE' })).toBeTruthy();
    expect(refusal(SCHEDULE, { cron: '@daily', kind: 'k', missed: 'never' }).message).toBe(
      'missed must be one of skip, once, all.',
    );
  });

  it('names a hostile member without echoing all of it', () => {
    const key = 'k'.repeat(100_000);
    const err = refusal(FILTER, { [key]: 1 });
    expect(err.message.length).toBeLessThan(200);
    expect(refusal(START, { kind: 'k', labels: { [key]: 1 } }).message.length).toBeLessThan(200);
  });
});

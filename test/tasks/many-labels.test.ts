import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_SCOPES, startTestApp, type TestApp } from '../helpers/app.js';
import { hold } from '../helpers/kinds.js';
import { restClient } from '../helpers/rest.js';

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id labels retryOf } }`;
const GET = `query($id: ID!) { task(id: $id) { id labels owner } }`;

let t: TestApp;
let alice: string;
let root: string;
let api: ReturnType<typeof restClient>;
beforeAll(async () => {
  t = await startTestApp({ kinds: [hold] });
  alice = await t.token('alice');
  root = await t.token('root', ADMIN_SCOPES);
  api = restClient(t.url);
});
afterAll(() => t?.stop());

const start = (labels: unknown) => t.gql(START, { input: { kind: 'hold', labels } }, alice);

describe('labels on start', () => {
  it('stores labels and returns them, and {} when none were given', async () => {
    const res = await start({ tenant: 'acme', 'report/id': '42', 'a.b-c_d': 'x y' });
    expect(res.errors).toBeUndefined();
    expect(res.data.startTask.labels).toEqual({
      tenant: 'acme',
      'report/id': '42',
      'a.b-c_d': 'x y',
    });
    expect(res.data.startTask.retryOf).toBeNull();
    const none = await start(undefined);
    expect(none.data.startTask.labels).toEqual({});
  });

  it.each([
    ['a list', ['a']],
    ['a string', 'tenant=acme'],
    ['17 labels', Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']))],
    ['a key with an upper-case letter', { Tenant: 'acme' }],
    ['a key starting with a dot', { '.x': 'v' }],
    ['a key of 64 characters', { [`a${'b'.repeat(63)}`]: 'v' }],
    ['an empty key', { '': 'v' }],
    ['a key with a space', { 'a b': 'v' }],
    ['a number value', { n: 1 }],
    ['a null value', { n: null }],
    ['an object value', { n: { x: 'y' } }],
    ['an empty value', { n: '' }],
    ['a value of 256 characters', { n: 'x'.repeat(256) }],
    ['a value with a control character', { n: 'a\nb' }],
    ['a value with a non-ASCII character', { n: 'café' }],
  ])('refuses %s as BAD_USER_INPUT', async (_name, labels) => {
    const res = await start(labels);
    expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(res.errors?.[0]?.message).toMatch(/labels/);
  });

  it('takes exactly 16 labels, a 63-character key and a 255-character value', async () => {
    const sixteen = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, 'v']));
    expect((await start(sixteen)).errors).toBeUndefined();
    const long = { [`a${'b'.repeat(62)}`]: 'x'.repeat(255) };
    expect((await start(long)).data.startTask.labels).toEqual(long);
  });
});

describe('labels on every face', () => {
  it('shows the labels to the owner and to an admin, on GraphQL and REST', async () => {
    const id = (await start({ tenant: 'acme' })).data.startTask.id;
    const own = await t.gql(GET, { id }, alice);
    expect(own.data.task).toEqual({ id, labels: { tenant: 'acme' }, owner: null });
    const admin = await t.gql(GET, { id }, root);
    expect(admin.data.task).toEqual({ id, labels: { tenant: 'acme' }, owner: 'alice' });
    for (const token of [alice, root]) {
      const res = await api('GET', `/v1/jobs/${id}`, { token });
      expect(res.body.labels).toEqual({ tenant: 'acme' });
    }
    const bob = await t.token('bob');
    expect((await t.gql(GET, { id }, bob)).data.task).toBeNull();
  });

  it('takes labels on POST /v1/jobs and returns them in the 202 handle and the list', async () => {
    const res = await api('POST', '/v1/jobs', {
      token: alice,
      body: { kind: 'hold', labels: { via: 'rest' } },
    });
    expect(res.status).toBe(202);
    expect(res.body.labels).toEqual({ via: 'rest' });
    const list = await api('GET', '/v1/jobs?label=via:rest', { token: alice });
    expect(list.body.tasks.map((x: { taskId: string }) => x.taskId)).toEqual([res.body.taskId]);
    expect(list.body.tasks[0].labels).toEqual({ via: 'rest' });
  });

  it('refuses bad labels on POST /v1/jobs with 422 BAD_USER_INPUT', async () => {
    const res = await api('POST', '/v1/jobs', {
      token: alice,
      body: { kind: 'hold', labels: { Bad: 'x' } },
    });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('BAD_USER_INPUT');
  });
});

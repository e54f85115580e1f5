import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { DatabaseUnavailable, faultClassifier, isConnectionFault } from '../../src/db/faults.js';
import { ServiceError } from '../../src/errors.js';
import { SECRET, startTestApp, type TestApp } from '../helpers/app.js';
import { backend } from '../helpers/db.js';

/** DB_STATEMENT_TIMEOUT_MS, DB_CONNECT_TIMEOUT_MS, and which errors mean "the database is gone". */

describe('configuration', () => {
  it('defaults to a 10 s statement timeout and a 3 s connect timeout', () => {
    expect(loadConfig({ AUTH_JWT_SECRET: SECRET }).db).toEqual({
      statementTimeoutMs: 10_000,
      connectTimeoutMs: 3_000,
      preparedStatements: true,
    });
    expect(
      loadConfig({
        AUTH_JWT_SECRET: SECRET,
        DB_STATEMENT_TIMEOUT_MS: '2500',
        DB_CONNECT_TIMEOUT_MS: '750',
      }).db,
    ).toEqual({ statementTimeoutMs: 2_500, connectTimeoutMs: 750, preparedStatements: true });
  });

  it.each([
    ['DB_STATEMENT_TIMEOUT_MS', 'soon'],
    ['DB_STATEMENT_TIMEOUT_MS', '0'],
    ['DB_STATEMENT_TIMEOUT_MS', '1.5'],
    ['DB_CONNECT_TIMEOUT_MS', '-5'],
    ['DB_CONNECT_TIMEOUT_MS', '0'],
    ['DB_CONNECT_TIMEOUT_MS', '3600000'],
  ])('refuses %s=%j, naming it', (name, value) => {
    let refusal: unknown;
    try {
      loadConfig({ AUTH_JWT_SECRET: SECRET, [name]: value });
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(ConfigError);
    expect((refusal as ConfigError).variable).toBe(name);
  });
});

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('connection faults', () => {
  it.each([
    withCode('read ECONNRESET', 'ECONNRESET'),
    withCode('connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED'),
    withCode('write EPIPE', 'EPIPE'),
    new Error('Connection terminated unexpectedly'),
    new Error('Connection terminated due to connection timeout'),
    new Error('timeout exceeded when trying to connect'),
    new Error('Query read timeout'),
    new Error('Client has encountered a connection error and is not queryable'),
    withCode('terminating connection due to administrator command', '57P01'),
    withCode('the database system is starting up', '57P03'),
    withCode('canceling statement due to statement timeout', '57014'),
    withCode('connection failure', '08006'),
    withCode('sorry, too many clients already', '53300'),
  ])('%s is SERVICE_UNAVAILABLE', (err) => {
    expect(isConnectionFault(err)).toBe(true);
    const classified = faultClassifier(pino({ level: 'silent' }))(err);
    expect(classified).toBeInstanceOf(DatabaseUnavailable);
    expect(classified).toBeInstanceOf(ServiceError);
    expect((classified as ServiceError).code).toBe('SERVICE_UNAVAILABLE');
    expect((classified as ServiceError).message).not.toContain(err.message);
    expect((classified as Error).cause).toBe(err);
  });

  it.each([
    withCode('duplicate key value violates unique constraint', '23505'),
    withCode('invalid input syntax for type json', '22P02'),
    withCode('relation "nope" does not exist', '42P01'),
    new ServiceError('NOT_FOUND', 'Task not found.'),
    new TypeError('Do not know how to serialize a BigInt'),
  ])('%s passes unchanged', (err) => {
    expect(isConnectionFault(err)).toBe(false);
    expect(faultClassifier(pino({ level: 'silent' }))(err)).toBe(err);
  });
});

describe.skipIf(backend === 'pglite')('statement timeout on Postgres', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { DB_STATEMENT_TIMEOUT_MS: '300' } });
  });
  afterAll(() => t?.stop());

  it('fails a statement that runs longer with SERVICE_UNAVAILABLE, and the pool serves on', async () => {
    const slow = sql`select pg_sleep(5)`.execute(t.app.db.kysely);
    await expect(slow).rejects.toBeInstanceOf(DatabaseUnavailable);
    await expect(slow).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    const { rows } = await sql<{ one: number }>`select 1 as one`.execute(t.app.db.kysely);
    expect(rows).toEqual([{ one: 1 }]);
  });
});

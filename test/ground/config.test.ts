import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { refusalOf, SECRET, startTestApp, type TestApp } from '../helpers/app.js';
import { spawnNode } from '../helpers/process.js';

/** Configuration as an operator meets it: refusals that name the variable, and what production hides. */

/** The environment of the test process, without anything that configures taskhandle. */
function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (
      value === undefined ||
      /^(AUTH_|TASK_|RUNNER_|A2A_|GRAPHIQL|ROLE|DATABASE_|DB_|DATA_DIR|LOG_LEVEL|NODE_ENV|PORT|HOST)/.test(
        name,
      )
    )
      continue;
    env[name] = value;
  }
  return env;
}

/** Runs a command-line entry as users do; resolves with its exit code and output once it exits. */
async function run(
  script: string,
  env: Record<string, string>,
  args: string[] = [],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const node = spawnNode(
    script,
    { ...cleanEnv(), PORT: '0', DATA_DIR: 'memory://', ...env },
    { args },
  );
  const { code } = await node.exited;
  return { code, stdout: node.stdout(), stderr: node.stderr() };
}

describe('production without authentication', () => {
  it('refuses to load, naming AUTH_JWT_SECRET and AUTH_JWKS_URL', () => {
    const err = refusalOf({ NODE_ENV: 'production' });
    expect(err.message).toContain('AUTH_JWT_SECRET');
    expect(err.message).toContain('AUTH_JWKS_URL');
  });

  it('loads with either a secret or a key set', () => {
    expect(loadConfig({ NODE_ENV: 'production', AUTH_JWT_SECRET: SECRET }).production).toBe(true);
    expect(
      loadConfig({
        NODE_ENV: 'production',
        AUTH_JWKS_URL: 'https://idp.example/.well-known/jwks.json',
      }).auth.jwksUrl,
    ).toBeDefined();
  });

  it('stops `npm start` with exit code 2 and a message naming both variables', async () => {
    const { code, stderr, stdout } = await run('src/main.ts', { NODE_ENV: 'production' });
    expect(code).toBe(2);
    expect(stderr).toMatch(/configuration error: .*AUTH_JWT_SECRET.*AUTH_JWKS_URL/);
    expect(stdout).not.toContain('listening');
  });

  it('refuses to mint development tokens', async () => {
    const { code, stderr, stdout } = await run('src/bin/token.ts', { NODE_ENV: 'production' }, [
      '--sub',
      'alice',
    ]);
    expect(code).toBe(2);
    expect(stderr).toContain('AUTH_JWT_SECRET');
    expect(stdout).toBe('');
  });
});

describe('a bad value', () => {
  // prettier-ignore
  const BAD: Array<[string, string]> = [
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['HOST', 'not a host'],
    ['HOST', 'under_score!'],
    ['DATABASE_URL', 'mysql://db/tasks'],
    ['DATABASE_URL', 'no url'],
    ['ROLE', 'boss'],
    ['AUTH_JWT_SECRET', 'too-short'],
    ['AUTH_JWKS_URL', 'ftp://idp.example/jwks'],
    ['AUTH_JWKS_URL', 'jwks.json'],
    ['AUTH_DEFAULT_SCOPES', 'tasks:read \u0001'],
    ['GRAPHIQL', 'maybe'],
    ['GRAPHQL_PERSISTED_ONLY', 'maybe'],
    ['GRAPHQL_PERSISTED_GRAPHIQL', 'sometimes'],
    ['GRAPHQL_APQ_CACHE_BYTES', 'lots'],
    ['TASK_DEFAULT_TTL_MS', 'an hour'],
    ['TASK_MIN_TTL_MS', '0'],
    ['TASK_MAX_TTL_MS', '-1'],
    ['TASK_LEASE_MS', '1.5'],
    ['TASK_PURGE_INTERVAL_MS', 'often'],
    ['TASK_SHUTDOWN_GRACE_MS', 'x'],
    ['RUNNER_CONCURRENCY', '0'],
    ['RUNNER_FAIRNESS', 'round-robin'],
    ['MCP_SESSION_IDLE_MS', '10'],
    ['MCP_MAX_SESSIONS', '0'],
    ['LOG_LEVEL', 'loud'],
  ];

  it('takes owners in turn unless RUNNER_FAIRNESS=fifo', () => {
    expect(loadConfig({ AUTH_JWT_SECRET: SECRET }).runnerFairness).toBe('owner');
    expect(loadConfig({ AUTH_JWT_SECRET: SECRET, RUNNER_FAIRNESS: 'fifo' }).runnerFairness).toBe(
      'fifo',
    );
  });

  it.each(BAD)('of %s (%j) is refused with a message naming it', (name, value) => {
    const err = refusalOf({ AUTH_JWT_SECRET: SECRET, [name]: value });
    expect(err.variable).toBe(name);
    expect(err.message).toContain(name);
  });

  it('stops `npm start` with exit code 2, naming the variable', async () => {
    const { code, stderr } = await run('src/main.ts', {
      AUTH_JWT_SECRET: SECRET,
      LOG_LEVEL: 'loud',
    });
    expect(code).toBe(2);
    expect(stderr).toMatch(/configuration error: LOG_LEVEL/);
  });

  it('A2A_DEFAULT_SKILL naming no registered kind stops `npm start` before the database opens', async () => {
    const { code, stderr } = await run('src/main.ts', {
      AUTH_JWT_SECRET: SECRET,
      A2A_DEFAULT_SKILL: 'nope',
    });
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /configuration error: A2A_DEFAULT_SKILL: names no registered task kind: "nope" \(registered: approval, export, pipeline, primes, sleep\)/,
    );
  });
});

describe('GraphiQL and development tokens', () => {
  const apps: TestApp[] = [];
  afterAll(() => Promise.all(apps.map((app) => app.stop())));

  async function browse(env: Record<string, string>) {
    const t = await startTestApp({ env });
    apps.push(t);
    const page = await fetch(`${t.url}/graphql`, { headers: { accept: 'text/html' } });
    return {
      t,
      status: page.status,
      type: page.headers.get('content-type'),
      html: await page.text(),
    };
  }

  it('is off in production: a browser gets 406, no page', async () => {
    const { t, status, html } = await browse({ NODE_ENV: 'production' });
    expect(status).toBe(406);
    expect(html).not.toMatch(/<html/i);
    expect(t.app.devToken).toBeUndefined();
    // GraphQL itself is served.
    const answer = await fetch(`${t.url}/graphql?query=${encodeURIComponent('{ __typename }')}`, {
      headers: { accept: 'application/json' },
    });
    expect(await answer.json()).toEqual({ data: { __typename: 'Query' } });
  });

  it('is on in production with GRAPHIQL=true, without a token in the page', async () => {
    const { t, status, type, html } = await browse({ NODE_ENV: 'production', GRAPHIQL: 'true' });
    expect(status).toBe(200);
    expect(type).toMatch(/^text\/html/);
    expect(html).toMatch(/graphiql/i);
    expect(html).not.toContain('Bearer ');
    expect(t.app.devToken).toBeUndefined();
  });

  it('is on in development, pre-filled with a working token for principal dev', async () => {
    const { t, status, html } = await browse({ NODE_ENV: 'development', AUTH_JWT_SECRET: '' });
    expect(status).toBe(200);
    const token = t.app.devToken!;
    expect(token).toBeDefined();
    expect(html).toContain(`Bearer ${token}`);
    const answer = await t.gql('{ tasks(owner: "someone") { edges { cursor } } }', {}, token);
    // Every scope, admin included.
    expect(answer.errors).toBeUndefined();
  });

  it('mints no development token when a secret is configured outside production', async () => {
    const { t } = await browse({});
    expect(t.app.devToken).toBeUndefined();
  });
});

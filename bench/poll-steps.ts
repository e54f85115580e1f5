import { type ExecutionResult, execute, getOperationAST, parse } from 'graphql';
import pino from 'pino';
import { createApp } from '../src/app.js';
import { mintToken } from '../src/auth/mint.js';
import { loadConfig } from '../src/config/config.js';
import { schema } from '../src/faces/graphql/index.js';
import { createYogaServer } from '../src/faces/graphql/yoga.js';
import { POLL_HANDLE } from '../test/helpers/operations.js';

/**
 * Where a poll's time goes inside the GraphQL pipeline, with no HTTP: the steps the direct
 * POST path (src/faces/graphql/fast-post.ts) takes, each timed over N polls of one unchanged
 * task (from the row cache), on the real schema and plugins, PGlite in memory, logs off.
 * Two passes; the second is the warmed one. The process's CPU time a poll (process.cpuUsage,
 * robust to other work on the machine) and each step's wall time; beside it, graphql-js's
 * `execute` alone.
 * `npx tsx bench/poll-steps.ts` (N=20000 by default).
 */
const N = Number(process.env.N ?? 20_000);
const SECRET = 'taskhandle-bench-secret-0123456789abcdef0123';
const config = loadConfig({
  NODE_ENV: 'production',
  AUTH_JWT_SECRET: SECRET,
  DATA_DIR: 'memory://',
  ROLE: 'api',
  PORT: '0',
  LOG_LEVEL: 'silent',
});
const log = pino({ level: 'silent' });
const app = await createApp({ config, log });
const scopes = new Set(['tasks:read', 'tasks:write']);
const token = await mintToken(SECRET, { sub: 'alice', scopes: [...scopes], ttl: '1h' });
const { task } = await app.tasks.start(
  { id: 'alice', admin: false, scopes },
  {
    kind: 'sleep',
    input: { ms: 3_600_000 },
  },
);
const yoga = createYogaServer({
  schema,
  tasks: app.tasks,
  schedules: app.schedules,
  verifier: app.verifier,
  log,
  production: true,
  limits: config.limits,
  observer: app.metrics,
});
const params = { query: POLL_HANDLE, variables: { id: task.id } };
const headers = {
  host: '127.0.0.1',
  accept: 'application/graphql-response+json,application/json;q=0.9',
  authorization: `Bearer ${token}`,
  'content-type': 'application/json',
};

const spent: Record<string, number> = {};
const lap = (step: string, since: number) => {
  const now = performance.now();
  spent[step] = (spent[step] ?? 0) + now - since;
  return now;
};
const show = (label: string) => {
  const total = Object.values(spent).reduce((a, b) => a + b, 0);
  const steps = Object.entries(spent).map(([k, v]) => `${k} ${((v * 1000) / N).toFixed(1)}`);
  console.log(`${label}: ${steps.join('  ')}  total ${((total * 1000) / N).toFixed(1)} µs`);
};

for (let pass = 1; pass <= 2; pass++) {
  for (const step of Object.keys(spent)) delete spent[step];
  const cpu = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    let at = performance.now();
    const body = JSON.parse(JSON.stringify(params)) as typeof params;
    at = lap('json-in', at);
    const request = new yoga.fetchAPI.Request('http://127.0.0.1/graphql', {
      method: 'POST',
      headers,
    });
    const enveloped = yoga.getEnveloped({ request, params: body } as never);
    at = lap('envelop', at);
    const document = enveloped.parse(body.query);
    at = lap('parse', at);
    enveloped.validate(enveloped.schema, document);
    getOperationAST(document, undefined);
    at = lap('validate', at);
    const contextValue = await enveloped.contextFactory();
    at = lap('context', at);
    const result = (await enveloped.execute({
      schema: enveloped.schema,
      document,
      contextValue,
      variableValues: body.variables,
      operationName: null,
    })) as ExecutionResult;
    at = lap('execute', at);
    JSON.stringify(result);
    lap('json-out', at);
  }
  const used = process.cpuUsage(cpu);
  show(`pass ${pass}, CPU ${((used.user + used.system) / N).toFixed(1)} µs a poll; wall`);
}

const document = parse(POLL_HANDLE);
const enveloped = yoga.getEnveloped({
  request: new yoga.fetchAPI.Request('http://127.0.0.1/graphql', { method: 'POST', headers }),
  params,
} as never);
const context = await enveloped.contextFactory();
for (let pass = 1; pass <= 2; pass++) {
  const cpu = process.cpuUsage();
  for (let i = 0; i < N; i++)
    await execute({
      schema,
      document,
      contextValue: { ...context },
      variableValues: params.variables,
    });
  const used = process.cpuUsage(cpu);
  console.log(
    `pass ${pass}: graphql-js execute alone, CPU ${((used.user + used.system) / N).toFixed(1)} µs`,
  );
}
await app.stop();
process.exit(0);

import {
  alternate,
  CONCURRENCY,
  DURATION_MS,
  fmt,
  out,
  row,
  START,
  server,
  targets,
  truncate,
  verdict,
  WARMUP_MS,
} from './common.js';
import { cpuOf } from './cpu-split.js';
import { type LoadOptions, type LoadResult, load } from './load.js';
import type { Child } from './processes.js';

/**
 * `tools/call` with `task` on /mcp beside `startTask` over GraphQL, on one api process in the
 * same run: both validate, insert and commit a task before answering. Beside the rate, the
 * api process's CPU a request (over the measured stretch): on two shared cores
 * the rate swings with the load of the machine, the CPU a request much less.
 */

const PROTOCOL = '2025-11-25';

async function openSession(url: string, token: string): Promise<string> {
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${token}`,
  };
  const init = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: PROTOCOL,
        capabilities: {},
        clientInfo: { name: 'bench', version: '1' },
      },
    }),
  });
  const session = init.headers.get('mcp-session-id');
  await init.text();
  if (!session) throw new Error(`initialize failed: ${init.status}`);
  const initialized = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  await initialized.text();
  return session;
}

/** `load` with the api process's CPU a request over the measured stretch (bench/cpu-split.ts). */
function measured(api: Child, options: LoadOptions): Promise<LoadResult> {
  return load({ ...options, cpu: cpuOf(api) });
}

export async function mcp(token: string): Promise<void> {
  out('## MCP: `tools/call` with `task` against `startTask` over GraphQL, 16 concurrent clients');
  out();
  const api = await server('mcp-api', { ROLE: 'api' });
  try {
    const input = { ms: 1000 };
    const session = await openSession(api.url, token);
    let id = 1;
    const results = await alternate(
      [
        [
          'graphql',
          () =>
            measured(api, {
              url: `${api.url}/graphql`,
              method: 'POST',
              headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
              body: JSON.stringify({
                query: START,
                variables: { input: { kind: 'sleep', input } },
              }),
              concurrency: CONCURRENCY,
              warmupMs: WARMUP_MS,
              durationMs: DURATION_MS,
              check: (status, text) => status === 200 && !text.includes('"errors"'),
            }),
        ],
        [
          'mcp',
          () =>
            measured(api, {
              url: `${api.url}/mcp`,
              method: 'POST',
              headers: {
                'content-type': 'application/json',
                accept: 'application/json, text/event-stream',
                authorization: `Bearer ${token}`,
                'mcp-session-id': session,
                'mcp-protocol-version': PROTOCOL,
              },
              // One session, many requests in flight: each needs its own JSON-RPC id.
              body: () =>
                JSON.stringify({
                  jsonrpc: '2.0',
                  id: id++,
                  method: 'tools/call',
                  params: { name: 'sleep', arguments: input, task: {} },
                }),
              concurrency: CONCURRENCY,
              warmupMs: WARMUP_MS,
              durationMs: DURATION_MS,
              check: (status, text) => status === 200 && text.includes('"status":"working"'),
            }),
        ],
      ],
      truncate,
    );
    const g = results.get('graphql')!;
    const m = results.get('mcp')!;
    const cpu = (r: LoadResult) =>
      ` ${fmt(r.cpu!.server, 3)} | ${(r.cpu!.server / g.cpu!.server).toFixed(2)}× |`;
    out(
      '| contender | requests/s | p50 ms | p99 ms | vs GraphQL | api CPU ms a request | vs GraphQL |',
    );
    out('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
    out(row('`startTask` over GraphQL (taskhandle, ROLE=api)', g, g) + cpu(g));
    out(row('`tools/call` with `task` on /mcp, one session (taskhandle, ROLE=api)', m, g) + cpu(m));
    out();
    out(
      'Both answer once the task is committed. The MCP answer is a Server-Sent Events stream (the transport keeps the response stream open for questions to the client), read to its end.',
    );
    out();
    const r = results.get('mcp')!.perSecond / g.perSecond;
    targets.push(
      `| MCP tools/call with task ≥ 0.9× startTask | ${r.toFixed(2)}× | ${verdict(r >= 0.9)} |`,
    );
  } finally {
    await api.stop();
  }
}

import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

/** A failure the command reports as one line on stderr, exiting with `exitCode`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
  }
}

/** Which server to talk to, and as whom. */
export interface Target {
  url: string;
  token: string | undefined;
}

/** What the commands read of a task: everything the owner may see. */
export const TASK_FIELDS = `id kind status statusMessage progress createdAt lastUpdatedAt ttlMs
  expiresAt pollIntervalMs version input result error { code message }
  inputRequest { key message schema }`;

export interface CliTask {
  id: string;
  kind: string;
  status: 'WORKING' | 'INPUT_REQUIRED' | 'COMPLETED' | 'CANCELLED' | 'FAILED';
  statusMessage: string | null;
  progress: number | null;
  createdAt: string;
  expiresAt: string;
  version: number;
  result: unknown;
  error: { code: string; message: string } | null;
  inputRequest: { key: string; message: string; schema: unknown } | null;
}

interface GraphQLError {
  message: string;
  extensions?: { code?: string };
}

const TOKEN_HINT =
  'Pass --token or set TASKHANDLE_TOKEN (`taskhandle token --sub NAME` mints one).';

function refusal(errors: readonly GraphQLError[]): CliError {
  const first = errors[0];
  const code = first?.extensions?.code ?? 'ERROR';
  if (code === 'UNAUTHENTICATED')
    return new CliError(`the server refused the token: ${first?.message} ${TOKEN_HINT}`);
  return new CliError(`${code}: ${first?.message ?? 'the server refused the request'}`);
}

function unreachable(url: string, cause: unknown): CliError {
  const inner = (cause as { cause?: { code?: string; message?: string } })?.cause;
  const reason =
    inner?.code ??
    inner?.message ??
    (cause as { code?: string })?.code ??
    (cause as Error)?.message ??
    'no answer';
  return new CliError(
    `cannot reach the server at ${url} (${reason}). Is it running? Pass --url or set TASKHANDLE_URL.`,
  );
}

/** One GraphQL operation over HTTP; any failure becomes a CliError with one clear line. */
export async function request<T>(
  target: Target,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<T> {
  let response: Response;
  try {
    response = await fetch(new URL('/graphql', target.url), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        ...(target.token ? { authorization: `Bearer ${target.token}` } : {}),
      },
      body: JSON.stringify({ query, variables }),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    throw unreachable(target.url, err);
  }
  let body: { data?: T; errors?: GraphQLError[] };
  try {
    body = (await response.json()) as typeof body;
  } catch {
    throw new CliError(`${target.url} answered ${response.status}, not GraphQL. Is --url right?`);
  }
  if (body.errors?.length) throw refusal(body.errors);
  if (!body.data) throw new CliError(`${target.url} answered ${response.status} without data.`);
  return body.data;
}

/**
 * Follows task `id` over graphql-ws: `onTask` gets the current state, then every change.
 * Resolves with the last state seen once the server completes the stream.
 */
export function follow(
  target: Target,
  id: string,
  onTask: (task: CliTask) => void,
): Promise<CliTask | undefined> {
  const wsUrl = new URL('/graphql', target.url);
  wsUrl.protocol = wsUrl.protocol === 'https:' ? 'wss:' : 'ws:';
  const client = createClient({
    url: wsUrl.href,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    connectionParams: target.token ? { authorization: `Bearer ${target.token}` } : {},
  });
  let last: CliTask | undefined;
  return new Promise<CliTask | undefined>((resolve, reject) => {
    client.subscribe<{ taskUpdated: CliTask }>(
      {
        query: `subscription($id: ID!) { taskUpdated(id: $id) { ${TASK_FIELDS} } }`,
        variables: { id },
      },
      {
        next: (value) => {
          if (value.errors?.length) return reject(refusal(value.errors as GraphQLError[]));
          if (!value.data) return;
          last = value.data.taskUpdated;
          onTask(last);
        },
        error: (err) => {
          const code = (err as { code?: number }).code;
          if (code === 4403)
            reject(
              new CliError(`the server refused the token (socket closed 4403). ${TOKEN_HINT}`),
            );
          else if (code !== undefined)
            reject(new CliError(`the server closed the socket (${code}).`));
          else reject(unreachable(target.url, (err as { error?: unknown }).error ?? err));
        },
        complete: () => resolve(last),
      },
    );
  }).finally(() => client.dispose());
}

import { createClient as createWsClient, type Client as WsClient } from 'graphql-ws';
import WebSocket from 'ws';
import { ClientError } from './errors.js';

/** A bearer token, or a function giving the current one (called for every request). */
export type TokenSource = string | (() => string | undefined | Promise<string | undefined>);

interface GraphQLError {
  message: string;
  extensions?: { code?: string };
}

function refusal(errors: readonly GraphQLError[]): ClientError {
  const first = errors[0];
  return new ClientError(
    first?.extensions?.code ?? 'GRAPHQL_ERROR',
    first?.message ?? 'the server refused the request',
  );
}

/** Why nothing answered, in a word: ECONNREFUSED, ENOTFOUND, the timeout… */
function reason(cause: unknown): string {
  const inner = (cause as { cause?: { code?: string; message?: string } })?.cause;
  return (
    inner?.code ??
    inner?.message ??
    (cause as { code?: string })?.code ??
    (cause as Error)?.message ??
    'no answer'
  );
}

/** GraphQL over HTTP for queries and mutations, graphql-ws for subscriptions; one server. */
export class Transport {
  private ws: WsClient | undefined;

  constructor(
    readonly url: string,
    private readonly token: TokenSource | undefined,
    private readonly timeoutMs: number,
  ) {}

  private async bearer(): Promise<string | undefined> {
    const token = typeof this.token === 'function' ? await this.token() : this.token;
    return token?.replace(/^Bearer\s+/i, '') || undefined;
  }

  /** One operation over HTTP. @throws ClientError, or `signal`'s reason once it aborts */
  async request<T>(
    query: string,
    variables: Record<string, unknown> = {},
    signal?: AbortSignal,
  ): Promise<T> {
    const token = await this.bearer();
    const timeout = AbortSignal.timeout(this.timeoutMs);
    let response: Response;
    try {
      response = await fetch(new URL('/graphql', this.url), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify({ query, variables }),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (err) {
      signal?.throwIfAborted();
      throw new ClientError(
        'UNREACHABLE',
        `cannot reach the server at ${this.url} (${reason(err)})`,
        { cause: err },
      );
    }
    let body: { data?: T; errors?: GraphQLError[] };
    try {
      body = (await response.json()) as typeof body;
    } catch (err) {
      signal?.throwIfAborted();
      throw new ClientError(
        'BAD_RESPONSE',
        `${this.url} answered ${response.status}, not GraphQL`,
        { cause: err, status: response.status },
      );
    }
    if (body.errors?.length) throw refusal(body.errors);
    if (!body.data)
      throw new ClientError(
        'BAD_RESPONSE',
        `${this.url} answered ${response.status} without data`,
        {
          status: response.status,
        },
      );
    return body.data;
  }

  /**
   * A subscription's values until the server completes it. One WebSocket serves every
   * subscription of this transport; it opens with the first and closes after the last.
   * @throws ClientError for refusals (a GraphQL error, or a 44xx close such as 4403 for a
   * bad token); anything else thrown (a dropped or refused connection) may be retried
   */
  async *subscribe<T>(
    query: string,
    variables: Record<string, unknown>,
    signal?: AbortSignal,
  ): AsyncGenerator<T> {
    const queue: T[] = [];
    let ended = false;
    let failure: unknown;
    let wake: (() => void) | undefined;
    const notify = () => {
      wake?.();
      wake = undefined;
    };
    const unsubscribe = this.socket().subscribe<T>(
      { query, variables },
      {
        next: (value) => {
          if (value.errors?.length) {
            failure = refusal(value.errors as GraphQLError[]);
            ended = true;
          } else if (value.data) queue.push(value.data);
          notify();
        },
        error: (err) => {
          failure = this.closeError(err);
          ended = true;
          notify();
        },
        complete: () => {
          ended = true;
          notify();
        },
      },
    );
    signal?.addEventListener('abort', notify);
    try {
      for (;;) {
        signal?.throwIfAborted();
        if (queue.length) yield queue.shift()!;
        else if (failure !== undefined) throw failure;
        else if (ended) return;
        else await new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      signal?.removeEventListener('abort', notify);
      unsubscribe();
    }
  }

  /** A 44xx close is the server refusing (4403: the token); other failures are transient. */
  private closeError(err: unknown): unknown {
    if (err instanceof ClientError) return err;
    const code = (err as { code?: unknown })?.code;
    if (typeof code === 'number' && code >= 4400 && code < 4500) {
      const why = (err as { reason?: string }).reason;
      return code === 4403
        ? new ClientError('UNAUTHENTICATED', `the server refused the token (socket closed 4403)`)
        : new ClientError('SOCKET_CLOSED', `the server closed the socket (${code} ${why ?? ''})`);
    }
    return err;
  }

  private socket(): WsClient {
    if (this.ws) return this.ws;
    const url = new URL('/graphql', this.url);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    this.ws = createWsClient({
      url: url.href,
      webSocketImpl: WebSocket,
      // Reconnecting is the caller's loop, which also polls meanwhile (TaskHandle.updates).
      retryAttempts: 0,
      connectionParams: async () => {
        const token = await this.bearer();
        return token ? { authorization: `Bearer ${token}` } : {};
      },
    });
    return this.ws;
  }

  /** Closes the WebSocket, ending its subscriptions. */
  async close(): Promise<void> {
    const ws = this.ws;
    this.ws = undefined;
    await ws?.dispose();
  }
}

/** Codes that say "later", not "no": following a task keeps trying through them. */
const TRANSIENT = new Set(['UNREACHABLE', 'SERVICE_UNAVAILABLE', 'RATE_LIMITED']);

/** A failure worth waiting out: no answer, a dropped connection, a server saying "later". */
export function isTransient(err: unknown): boolean {
  if (!(err instanceof ClientError)) return true;
  return TRANSIENT.has(err.code) || (err.code === 'BAD_RESPONSE' && (err.status ?? 0) >= 500);
}

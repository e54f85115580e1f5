import { ListTasksRequest, SendMessageRequest, type StreamResponse } from '@a2a-js/sdk';
import {
  type Client,
  type ClientConfig,
  ClientFactory,
  ClientFactoryOptions,
  createAuthenticatingFetchWithRetry,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import { type RestResponse, rest } from './rest.js';

export { UNKNOWN_ID } from './rest-jobs.js';

/**
 * An A2A client as users build one with the SDK: the card fetched from the server, the
 * JSON-RPC transport, the bearer token sent by the SDK's authenticating fetch.
 */
export async function a2aClient(
  baseUrl: string,
  token: string,
  clientConfig: ClientConfig = {},
): Promise<Client> {
  const fetchImpl = createAuthenticatingFetchWithRetry(fetch, {
    headers: async () => ({ authorization: `Bearer ${token}` }),
    shouldRetryWithHeaders: async () => undefined,
  });
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      preferredTransports: ['JSONRPC'],
      clientConfig,
    }),
  );
  return factory.createFromUrl(baseUrl);
}

let counter = 0;
/** A fresh messageId. */
export const messageId = () => `m-${process.pid}-${Date.now()}-${++counter}`;

export interface StartOptions {
  messageId?: string;
  ttlMs?: number;
  returnImmediately?: boolean;
  contextId?: string;
}

/** `SendMessage` params that start a task of `skill` with `input` (DESIGN §10). */
export function startRequest(
  skill: string | undefined,
  input?: unknown,
  options: StartOptions = {},
): SendMessageRequest {
  const metadata: Record<string, unknown> = {};
  if (skill !== undefined) metadata.skill = skill;
  if (options.ttlMs !== undefined) metadata.ttlMs = options.ttlMs;
  return SendMessageRequest.fromJSON({
    message: {
      messageId: options.messageId ?? messageId(),
      role: 'ROLE_USER',
      parts: input === undefined ? [] : [{ data: input }],
      metadata,
      ...(options.contextId ? { contextId: options.contextId } : {}),
    },
    configuration: { returnImmediately: options.returnImmediately ?? true },
  });
}

export interface PlainOptions {
  messageId?: string;
  taskId?: string;
  contextId?: string;
  metadata?: Record<string, unknown>;
  /** Without it the call waits, as generic clients call (A2A's default). */
  returnImmediately?: boolean;
}

/**
 * A message as generic A2A clients send one: `parts` in A2A's JSON (a string is a text part),
 * naming no skill unless `metadata` does.
 */
export function plainRequest(
  parts: Array<string | Record<string, unknown>>,
  options: PlainOptions = {},
): SendMessageRequest {
  return SendMessageRequest.fromJSON({
    message: {
      messageId: options.messageId ?? messageId(),
      role: 'ROLE_USER',
      parts: parts.map((part) => (typeof part === 'string' ? { text: part } : part)),
      ...(options.taskId ? { taskId: options.taskId } : {}),
      ...(options.contextId ? { contextId: options.contextId } : {}),
      ...(options.metadata ? { metadata: options.metadata } : {}),
    },
    configuration: { returnImmediately: options.returnImmediately ?? false },
  });
}

/** `SendMessage` params that answer the question of task `taskId` with `value`. */
export function answerRequest(
  taskId: string,
  value: unknown,
  options: { returnImmediately?: boolean; contextId?: string } = {},
): SendMessageRequest {
  return SendMessageRequest.fromJSON({
    message: {
      messageId: messageId(),
      role: 'ROLE_USER',
      taskId,
      parts: value === undefined ? [] : [{ data: value }],
      ...(options.contextId ? { contextId: options.contextId } : {}),
    },
    configuration: { returnImmediately: options.returnImmediately ?? true },
  });
}

/** The error a promise rejects with (fails the test if it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

/** The JSON-RPC code an SDK client error carries. */
export const codeOf = (err: any): number | undefined => err?.envelopeCode ?? err?.code;

/** Every event of a stream, in order, until it ends. */
export async function drain(stream: AsyncIterable<StreamResponse>): Promise<StreamResponse[]> {
  const events: StreamResponse[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

/** `ListTasks` params: the SDK's defaults (no filter) with `fields` on top. */
export const list = (fields: Partial<ListTasksRequest> = {}): ListTasksRequest => ({
  ...ListTasksRequest.fromJSON({}),
  ...fields,
});

/**
 * POSTs `body` to `baseUrl`'s /a2a, JSON-RPC written by hand for what the SDK client will not
 * send; `headers` replace the defaults (A2A-Version 1.0, JSON).
 */
export function postA2A(
  baseUrl: string,
  token: string | null,
  body: unknown,
  headers: Record<string, string> = { 'a2a-version': '1.0' },
): Promise<RestResponse> {
  return rest(baseUrl, 'POST', '/a2a', { token, body, headers });
}

/** GetTask of `id` as a JSON-RPC request (id 7). */
export const getTaskCall = (id: string) => ({
  jsonrpc: '2.0',
  id: 7,
  method: 'GetTask',
  params: { id },
});

/** SendMessage params, as JSON, that start a `sleep` of 0 ms and answer at once. */
export function startRequestJson() {
  return {
    message: {
      messageId: `http-${Math.random()}`,
      role: 'ROLE_USER',
      parts: [{ data: { ms: 0 } }],
      metadata: { skill: 'sleep' },
    },
    configuration: { returnImmediately: true },
  };
}

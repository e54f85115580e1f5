import { randomFillSync, randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import type { DeliveryRow, WebhookRow } from '../../db/types.js';
import { ServiceError } from '../../errors.js';
import { refusedAddress } from './address-guard.js';
import type { NewWebhook } from './store.js';

/** What a caller asks for (DESIGN §11); `token` and `authentication` come from A2A configs. */
export interface WebhookRequest {
  url: string;
  secret?: string | null;
  token?: string | null;
  authentication?: { scheme: string; credentials?: string | null } | null;
  /** The body's shape: Standard Webhooks `task.status` events, or A2A StreamResponses. */
  format?: 'standard' | 'a2a';
  /**
   * A2A: the id the client proposed for its config, which the config then answers to; a
   * config of the task with that id already is replaced. None (or `""`): the webhook's id.
   */
  configId?: string | null;
}

export interface Webhook {
  id: string;
  taskId: string;
  url: string;
  secret: string;
  format: 'standard' | 'a2a';
  token: string | null;
  authentication: { scheme: string; credentials: string | null } | null;
  /** The id an A2A client proposed for it (see {@link configIdOf}); null when none. */
  configId: string | null;
  createdAt: Date;
  /** Set once a `410 Gone` disabled it. */
  disabledAt: Date | null;
}

export type DeliveryState = 'PENDING' | 'DELIVERED' | 'FAILED';

export interface Delivery {
  id: string;
  webhookId: string;
  version: number;
  status: string;
  state: DeliveryState;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  nextAttemptAt: Date | null;
  deliveredAt: Date | null;
}

export const MAX_WEBHOOK_URL_LENGTH = 2048;
export const MAX_DELIVERIES_PAGE = 100;
const SECRET = /^whsec_([A-Za-z0-9+/]+={0,2})$/;
const HEADER_VALUE = /^[\x20-\x7e]{1,4096}$/;
const CONFIG_ID = /^[\x20-\x7e]{1,255}$/;
const SCHEME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;

export const bad = (message: string) => new ServiceError('BAD_USER_INPUT', message);

const SECRET_BYTES = 32;
/**
 * Random bytes drawn from the system in bulk and handed out once each, as `randomUUID` does
 * for ids: one call for every 128 secrets, where a call each cost more than the rest of
 * checking a webhook.
 */
const pool = Buffer.alloc(SECRET_BYTES * 128);
let poolOffset = pool.length;

/** A Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export function generateSecret(): string {
  if (poolOffset === pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const bytes = pool.subarray(poolOffset, poolOffset + SECRET_BYTES);
  poolOffset += SECRET_BYTES;
  const secret = `whsec_${bytes.toString('base64')}`;
  bytes.fill(0);
  return secret;
}

/**
 * The attach-time rules of DESIGN §11: http(s), at most 2 048 characters, no credentials,
 * and — unless `allowPrivate` — no literal loopback, private, link-local… address (names are
 * checked at every attempt, once resolved).
 */
export function checkWebhookUrl(raw: unknown, allowPrivate: boolean): string {
  if (typeof raw !== 'string' || raw === '') throw bad('webhook.url must be a non-empty string.');
  if (raw.length > MAX_WEBHOOK_URL_LENGTH)
    throw bad(`webhook.url is longer than ${MAX_WEBHOOK_URL_LENGTH} characters.`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw bad('webhook.url is not a URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw bad('webhook.url must be an http or https URL.');
  if (url.username !== '' || url.password !== '')
    throw bad('webhook.url must not carry credentials.');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const reason = isIP(host) ? refusedAddress(host) : null;
  if (reason && !allowPrivate)
    throw bad(`webhook.url names a ${reason} address (${host}); webhooks reach public addresses.`);
  return url.href;
}

export function checkSecret(raw: unknown): string {
  if (raw === undefined || raw === null) return generateSecret();
  const match = typeof raw === 'string' ? SECRET.exec(raw) : null;
  const bytes = match ? Buffer.from(match[1]!, 'base64') : undefined;
  // Buffer.from ignores bad base64; a round trip proves the text was canonical base64.
  if (
    !match ||
    !bytes ||
    bytes.toString('base64') !== match[1] ||
    bytes.length < 24 ||
    bytes.length > 64
  )
    throw bad('webhook.secret must be "whsec_" followed by the base64 of 24 to 64 bytes.');
  return raw as string;
}

function optionalHeader(raw: unknown, what: string): string | null {
  if (raw === undefined || raw === null) return null;
  if (typeof raw !== 'string' || !HEADER_VALUE.test(raw))
    throw bad(`${what} must be 1 to 4 096 printable ASCII characters.`);
  return raw;
}

/**
 * A proposed config id: 1 to 255 printable ASCII characters, as a message id (the idempotency
 * key) is, so that what is stored is what the client sent, byte for byte.
 */
function checkConfigId(raw: unknown): string | null {
  if (raw === undefined || raw === null || raw === '') return null;
  if (typeof raw !== 'string' || !CONFIG_ID.test(raw))
    throw bad('A push config id must be 1 to 255 printable ASCII characters.');
  return raw;
}

/**
 * The id a config answers to: the one its client proposed, else the webhook's. One rule for
 * showing a config, finding it and replacing it.
 */
export const configIdOf = (webhook: Pick<Webhook, 'id' | 'configId'>): string =>
  webhook.configId ?? webhook.id;

/**
 * Whether `webhook` is the config `id` names: a proposed id as written, the webhook's own
 * (a UUID) in any case.
 */
export const answersTo = (webhook: Pick<Webhook, 'id' | 'configId'>, id: string): boolean =>
  webhook.configId !== null ? webhook.configId === id : webhook.id === id.toLowerCase();

/** Validates a request into the row to store. @throws ServiceError BAD_USER_INPUT */
export function prepareWebhook(request: WebhookRequest, allowPrivate: boolean): NewWebhook {
  if (request === null || typeof request !== 'object') throw bad('webhook must be an object.');
  const auth = request.authentication;
  if (auth != null && (typeof auth !== 'object' || !SCHEME.test(String(auth.scheme))))
    throw bad('authentication.scheme must be an HTTP authentication scheme, such as Bearer.');
  return {
    id: randomUUID(),
    url: checkWebhookUrl(request.url, allowPrivate),
    secret: checkSecret(request.secret),
    format: request.format ?? 'standard',
    token: optionalHeader(request.token, 'token'),
    authScheme: auth ? auth.scheme : null,
    authCredentials: auth ? optionalHeader(auth.credentials, 'authentication.credentials') : null,
    configId: checkConfigId(request.configId),
  };
}

export function toWebhook(row: WebhookRow): Webhook {
  return {
    id: row.id,
    taskId: row.task_id,
    url: row.url,
    secret: row.secret,
    format: row.format,
    token: row.token,
    authentication: row.auth_scheme
      ? { scheme: row.auth_scheme, credentials: row.auth_credentials }
      : null,
    configId: row.config_id,
    createdAt: row.created_at,
    disabledAt: row.disabled_at,
  };
}

export function toDelivery(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    version: row.version,
    status: row.status,
    state: row.state.toUpperCase() as DeliveryState,
    attempts: row.attempts,
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    nextAttemptAt: row.state === 'pending' ? row.next_attempt_at : null,
    deliveredAt: row.delivered_at,
  };
}

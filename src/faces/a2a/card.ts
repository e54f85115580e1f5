import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../../http/problem.js';
import type { TaskKind } from '../../tasks/kinds.js';

/** The path clients fetch the card from (A2A's well-known URI). */
export const AGENT_CARD_PATH = '/.well-known/agent-card.json';
/** Where the JSON-RPC binding listens. */
export const A2A_PATH = '/a2a';
/** The one protocol version served; a request without `A2A-Version` counts as 0.3. */
export const A2A_VERSION = '1.0';

/**
 * The version a request's `A2A-Version` asks for, as it is matched: major.minor, a patch number
 * aside (A2A 1.0: `1.0.1` is 1.0). Anything else stays as sent, and is not served.
 */
export function requestedVersionOf(header: string | string[] | undefined): string {
  const raw = (Array.isArray(header) ? header[0] : header)?.trim() || '0.3';
  const matched = /^(\d+)\.(\d+)(?:\.\d+)?$/.exec(raw);
  return matched ? `${Number(matched[1])}.${Number(matched[2])}` : raw;
}

const { version } = JSON.parse(
  readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'),
) as { version: string };

const JSON_MODE = ['application/json'];
/** What the default skill reads: data parts, and text parts (none, or marked text/plain). */
const JSON_AND_TEXT_MODES = ['application/json', 'text/plain'];
const HOST = /^(?:\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::\d{1,5})?$/i;

/**
 * The scheme and host the request came to, which clients use to reach the endpoint the card
 * names. A Host header that is not a host (and port) is not echoed: the server's own address is.
 */
export function baseUrlOf(req: IncomingMessage): string {
  const scheme = (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
  const host = req.headers.host;
  if (host && HOST.test(host)) return `${scheme}://${host}`;
  const { localAddress, localPort } = req.socket;
  const address = localAddress?.includes(':') ? `[${localAddress}]` : localAddress;
  return `${scheme}://${address ?? '127.0.0.1'}:${localPort ?? ''}`;
}

export interface CardOptions {
  kinds: readonly TaskKind[];
  /** `<scheme>://<host>` the card's interface URL starts with; empty for a relative one. */
  baseUrl: string;
  pushNotifications: boolean;
  /** `A2A_DEFAULT_SKILL`: the kind a plain message starts, which reads text as well as data. */
  defaultSkill?: string | undefined;
}

/**
 * The agent card (DESIGN §10), as JSON: one skill per task kind, bearer JWTs required. With a
 * default skill the agent takes plain text too, and the card says so for it and as the
 * default input modes; a named skill reads its data part only.
 */
export function agentCard({ kinds, baseUrl, pushNotifications, defaultSkill }: CardOptions) {
  const modesOf = (kind: string | undefined) =>
    kind !== undefined && kind === defaultSkill ? JSON_AND_TEXT_MODES : JSON_MODE;
  return {
    name: 'taskhandle',
    description:
      'Long work as task handles: a message naming a skill starts a task and is answered at ' +
      'once; poll it, subscribe to it, answer its questions, cancel it. Input and results ' +
      'are JSON data parts.',
    version,
    supportedInterfaces: [
      { url: `${baseUrl}${A2A_PATH}`, protocolBinding: 'JSONRPC', protocolVersion: A2A_VERSION },
    ],
    capabilities: { streaming: true, pushNotifications },
    securitySchemes: {
      bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'JWT' } },
    },
    securityRequirements: [{ schemes: { bearer: {} } }],
    defaultInputModes: modesOf(defaultSkill),
    defaultOutputModes: JSON_MODE,
    skills: kinds.map((kind) => ({
      id: kind.name,
      name: kind.name,
      description: kind.description,
      tags: ['taskhandle'],
      inputModes: modesOf(kind.name),
      outputModes: JSON_MODE,
    })),
  };
}

/** How long clients and caches may keep the card: it changes only with a deployment. */
export const CARD_MAX_AGE_S = 300;

/** Whether an If-None-Match header names `etag` (weak or strong) or is `*`. */
function matches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === '*' || tag === etag);
}

/** The card changes only when the server does: it is as new as this process. */
const LOADED = new Date(Math.floor(Date.now() / 1000) * 1000);

/** Whether If-Modified-Since names a time no earlier than the card's (ignored with an ETag). */
function unmodifiedSince(req: IncomingMessage): boolean {
  const since = req.headers['if-modified-since'];
  if (!since || req.headers['if-none-match']) return false;
  const time = Date.parse(since);
  return !Number.isNaN(time) && time >= LOADED.getTime();
}

/**
 * Sends the card with the caching headers A2A 1.0 asks for (8.6.1): `Cache-Control` with a
 * `max-age`, an `ETag` of its content and a `Last-Modified` of the process's start, so a
 * client that sends either back (`If-None-Match`, else `If-Modified-Since`) gets `304`
 * without a body. The ETag is the same from every process; the time is not, so it only
 * spares a download from the same process.
 */
export function sendCard(req: IncomingMessage, res: ServerResponse, card: unknown): void {
  const text = JSON.stringify(card);
  const etag = `"${createHash('sha256').update(text).digest('base64url').slice(0, 27)}"`;
  const headers = {
    'cache-control': `public, max-age=${CARD_MAX_AGE_S}`,
    etag,
    'last-modified': LOADED.toUTCString(),
  };
  const condition = req.headers['if-none-match'];
  if (
    matches(Array.isArray(condition) ? condition.join(',') : condition, etag) ||
    unmodifiedSince(req)
  ) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  sendJson(res, 200, card, headers);
}

import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
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
}

/** The agent card (DESIGN §10), as JSON: one skill per task kind, bearer JWTs required. */
export function agentCard({ kinds, baseUrl, pushNotifications }: CardOptions) {
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
    defaultInputModes: JSON_MODE,
    defaultOutputModes: JSON_MODE,
    skills: kinds.map((kind) => ({
      id: kind.name,
      name: kind.name,
      description: kind.description,
      tags: ['taskhandle'],
      inputModes: JSON_MODE,
      outputModes: JSON_MODE,
    })),
  };
}

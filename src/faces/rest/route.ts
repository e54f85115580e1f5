import type { IncomingHttpHeaders } from 'node:http';
import type { ErrorCode } from '../../errors.js';
import type { ScheduleService } from '../../schedules/service.js';
import type { Operation } from '../../tasks/scopes.js';
import type { Actor, TaskService } from '../../tasks/service.js';
import type { JsonSchema } from './json-schema.js';

/**
 * One route of the REST face, as the table declares it (table.ts): what the router needs to
 * serve it (scope, body schema, handler) and what the OpenAPI document says of it (answers,
 * headers, errors). Both read this one declaration, so the document cannot drift from what is
 * served: the body schema is the one the router validates with, and the test suite checks
 * every answer it receives against the declared ones.
 */

/** What a handler may use: the services the face translates to. */
export interface RestServices {
  tasks: TaskService;
  schedules: ScheduleService;
}

/** A response header an answer may carry, as the document names it (openapi.ts says what each is). */
export type AnswerHeader = 'Location' | 'Retry-After' | 'Link' | 'WWW-Authenticate';

/** A success answer: its status, body schema (none: no body) and headers. */
export interface Answer {
  description: string;
  schema?: JsonSchema;
  /** Always sent. */
  headers?: readonly AnswerHeader[];
  /** Sent when it applies (`Retry-After` while a task is not terminal, `Link` with a next page). */
  optionalHeaders?: readonly AnswerHeader[];
}

/** A path parameter: its schema for the document, and how the router reads the raw segment. */
export interface PathParam {
  description: string;
  schema: JsonSchema;
  /**
   * The value the handler gets, from the raw (still percent-encoded) segment.
   * @throws ServiceError when the segment cannot be one (NOT_FOUND: it names nothing)
   */
  read(segment: string): string;
}

/** A query or request-header parameter, for the document; the domain checks its values. */
export interface Parameter {
  name: string;
  in: 'query' | 'header';
  description: string;
  schema: JsonSchema;
}

export interface RequestBody {
  description: string;
  schema: JsonSchema;
  /**
   * What a request without a body reads as (then it is optional); without it the body is
   * required.
   */
  empty?: unknown;
  /** How a refusal names the body's root ("The body" when unset). */
  name?: string;
  /**
   * The member whose entries are named by index in a refusal ("entry 37: …", with `index`),
   * as a batch's `jobs`.
   */
  entries?: string;
}

/** What a handler answers; the router sends it as JSON (no body: nothing, as for a 204). */
export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface RestCall<A extends Actor | null> {
  services: RestServices;
  /** The caller (null on a route that takes no token). */
  actor: A;
  /** The path parameters, as their `read` returned them. */
  params: Record<string, string>;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** The body, valid against the route's schema (undefined for a route without one). */
  body: unknown;
  /** The request's URL (its path and query), for a page's `Link`. */
  url: URL;
}

interface RouteBase {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** An OpenAPI path template: `/v1/jobs/{taskId}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: readonly string[];
  params?: Record<string, PathParam>;
  parameters?: readonly Parameter[];
  body?: RequestBody;
  /** Success statuses; the router adds the refusals every route shares (route-errors.ts). */
  answers: Record<number, Answer>;
  /** This route's own refusals: status → the codes it is sent with. */
  refusals?: Record<number, readonly (ErrorCode | 'METHOD_NOT_ALLOWED')[]>;
  /**
   * Answers without the task service (the document): no rate limit, no database to be down.
   * @default false
   */
  offline?: boolean;
  /** The log line of an unexpected error: who served it, and a path that hides a credential. */
  logAs?: { where: string; path: string };
}

/** A route that needs a bearer token with the scope of `operation`. */
export interface GuardedRoute extends RouteBase {
  operation: Operation;
  serve(call: RestCall<Actor>): Promise<Reply>;
}

/** A route without a token: the document itself, and capability URLs. */
export interface OpenRoute extends RouteBase {
  operation: null;
  serve(call: RestCall<null>): Promise<Reply>;
}

export type RestRoute = GuardedRoute | OpenRoute;

import { SCOPE_OF, SCOPES } from '../../tasks/scopes.js';
import { type JsonSchema, ref } from './json-schema.js';
import { type RefusalAnswer, refusalsOf } from './refusals.js';
import type { Answer, AnswerHeader, RestRoute } from './route.js';
import { COMPONENT_SCHEMAS } from './schemas.js';

/**
 * The OpenAPI 3.1 document of the REST face, made from its route table: the same body schemas
 * the router validates with, the answers each route declares, and the refusals the router and
 * the server make (refusals.ts). Served at `GET /v1/openapi.json`, committed as openapi.json.
 */

const HEADERS: Record<AnswerHeader, { description: string; schema: JsonSchema }> = {
  Location: {
    description: 'The status monitor of the task: `/v1/jobs/{taskId}`.',
    schema: { type: 'string' },
  },
  'Retry-After': {
    description:
      'Seconds to wait before the next request: a task’s poll interval, rounded up (never 0), ' +
      'sent while it is not terminal; on 429 and 503, when to try again.',
    schema: { type: 'string', pattern: '^[1-9][0-9]*$' },
  },
  Link: {
    description: 'The next page: `<…?cursor=…>; rel="next"`, the request’s query kept.',
    schema: { type: 'string' },
  },
  'WWW-Authenticate': {
    description:
      'The bearer challenge (RFC 6750): `invalid_token`, or `insufficient_scope` naming it.',
    schema: { type: 'string' },
  },
};

const DESCRIPTION = `Task handles over plain HTTP (\`202 Accepted\`): the same tasks, store, authorization and
error codes as the GraphQL, MCP and A2A faces. Statuses are lower-case. Every answer carries
\`Cache-Control: no-store\`. Refusals are \`application/problem+json\` (RFC 9457) with a stable
\`code\`. A method a path does not take is \`405\` with \`Allow\`; a path that is no route, \`404\`.

\`input\`, \`result\` and signal payloads are JSON of the kind's own shape (each kind declares
an input schema); here they are any JSON.`;

function headersOf(answer: Answer): Record<string, unknown> | undefined {
  const entries = [
    ...(answer.headers ?? []).map((name) => [name, { ...HEADERS[name], required: true }]),
    ...(answer.optionalHeaders ?? []).map((name) => [name, { ...HEADERS[name], required: false }]),
  ];
  return entries.length ? Object.fromEntries(entries) : undefined;
}

function responseOf(answer: Answer, type: string, schema?: JsonSchema): Record<string, unknown> {
  const headers = headersOf(answer);
  return {
    description: answer.description,
    ...(headers ? { headers } : {}),
    ...(schema ? { content: { [type]: { schema } } } : {}),
  };
}

/**
 * A refusal as a shared response (`components.responses`), one for each status and set of
 * codes, so the many operations that share one refer to it.
 */
function refusalRef(
  responses: Record<string, unknown>,
  status: string,
  refusal: RefusalAnswer,
): JsonSchema {
  const name = `${status}_${refusal.codes.join('_')}`;
  responses[name] ??= responseOf(
    { ...refusal, description: `${refusal.codes.join(', ')}: ${refusal.description}` },
    'application/problem+json',
    {
      allOf: [ref('Problem')],
      properties: { status: { const: Number(status) }, code: { enum: refusal.codes } },
    },
  );
  return { $ref: `#/components/responses/${name}` };
}

function operationOf(route: RestRoute, shared: Record<string, unknown>): Record<string, unknown> {
  const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const pathParameters = names.map((name) => {
    const param = route.params?.[name];
    if (!param) throw new Error(`${route.operationId}: path parameter {${name}} is not declared`);
    return {
      name,
      in: 'path',
      required: true,
      description: param.description,
      schema: param.schema,
    };
  });
  const responses: Record<string, unknown> = {};
  for (const [status, answer] of Object.entries(route.answers))
    responses[status] = responseOf(answer, 'application/json', answer.schema);
  for (const [status, refusal] of Object.entries(refusalsOf(route)))
    responses[status] = refusalRef(shared, status, refusal);
  return {
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: route.tags,
    security: route.operation === null ? [] : [{ bearer: [SCOPE_OF[route.operation]] }],
    ...(pathParameters.length || route.parameters?.length
      ? { parameters: [...pathParameters, ...(route.parameters ?? [])] }
      : {}),
    ...(route.body
      ? {
          requestBody: {
            description: route.body.description,
            required: !('empty' in route.body),
            content: { 'application/json': { schema: route.body.schema } },
          },
        }
      : {}),
    responses,
  };
}

/** The document for these routes; `version` is the package's. */
export function openApiDocument(routes: readonly RestRoute[], version: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  const responses: Record<string, unknown> = {};
  for (const route of routes) {
    paths[route.path] ??= {};
    paths[route.path]![route.method.toLowerCase()] = operationOf(route, responses);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'taskhandle REST',
      version,
      description: DESCRIPTION,
      license: { name: 'MIT', identifier: 'MIT' },
    },
    tags: [
      { name: 'jobs', description: 'Tasks: start, poll, list, cancel, answer, retry, signal.' },
      { name: 'signals', description: 'Signal URLs, for outside systems without a token.' },
      { name: 'schedules', description: 'Cron schedules that start tasks.' },
      { name: 'document', description: 'This document.' },
    ],
    paths,
    components: {
      schemas: COMPONENT_SCHEMAS,
      responses: Object.fromEntries(
        Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)),
      ),
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            `A JWT whose \`sub\` is the principal and whose \`scope\` (space-separated) or ` +
            `\`scp\` (array) holds its scopes: \`${SCOPES.read}\` (read, list), ` +
            `\`${SCOPES.write}\` (start, cancel, answer, retry, signal, schedules), ` +
            `\`${SCOPES.admin}\` (any principal's tasks, never their payloads).`,
        },
      },
    },
  };
}

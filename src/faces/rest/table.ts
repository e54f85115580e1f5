import { readFileSync } from 'node:fs';
import { JOB_ROUTES } from './jobs.js';
import { MANY_ROUTES } from './many.js';
import { openApiDocument } from './openapi.js';
import type { OpenRoute, RestRoute } from './route.js';
import { SCHEDULE_ROUTES } from './schedules.js';
import { SIGNAL_URL_ROUTE } from './signal-urls.js';
import { SIGNAL_ROUTE } from './steps.js';

/**
 * Every route of the REST face, the one table the router serves from and the document is made
 * from. A route not listed here is not served.
 */

const { version } = JSON.parse(
  readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'),
) as { version: string };

let document: ReturnType<typeof openApiDocument> | undefined;

/** The OpenAPI document of REST_ROUTES (made once). */
export function restDocument() {
  document ??= openApiDocument(REST_ROUTES, version);
  return document;
}

const DOCUMENT_ROUTE: OpenRoute = {
  method: 'GET',
  path: '/v1/openapi.json',
  operationId: 'openApiDocument',
  summary: 'This document (OpenAPI 3.1)',
  tags: ['document'],
  operation: null,
  offline: true,
  answers: {
    200: { description: 'The OpenAPI document of `/v1`.', schema: { type: 'object' } },
  },
  serve: async () => ({ status: 200, body: restDocument() }),
};

export const REST_ROUTES: readonly RestRoute[] = [
  ...JOB_ROUTES,
  ...MANY_ROUTES,
  SIGNAL_ROUTE,
  SIGNAL_URL_ROUTE,
  ...SCHEDULE_ROUTES,
  DOCUMENT_ROUTE,
];

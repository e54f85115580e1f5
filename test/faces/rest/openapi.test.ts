import { readFileSync } from 'node:fs';
import SwaggerParser from '@apidevtools/swagger-parser';
import { describe, expect, it } from 'vitest';
import { ALL_SCOPES } from '../../../src/tasks/scopes.js';
import { rest } from '../../helpers/rest.js';
import { t, useRestApp } from '../../helpers/rest-jobs.js';

useRestApp();

/** The OpenAPI document of the REST face (issue 42): served, committed, valid, and true. */

const committedText = () => readFileSync(new URL('../../../openapi.json', import.meta.url), 'utf8');

type Operation = { security: Array<Record<string, string[]>>; operationId: string };
type Document = { paths: Record<string, Record<string, Operation>> };

async function served(): Promise<Document> {
  const res = await rest(t.url, 'GET', '/v1/openapi.json');
  expect(res.status, res.text).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  return res.body;
}

/** The operations of the document, with a path whose parameters are filled in. */
function operationsOf(doc: Document) {
  return Object.entries(doc.paths).flatMap(([template, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({
      method: method.toUpperCase(),
      template,
      body: method === 'post' || method === 'put' ? {} : undefined,
      path: template
        .replace('{taskId}', '5b8c1e2a-3f4d-4e6f-8a9b-0c1d2e3f4a5b')
        .replace(/\{\w+\}/g, 'x'),
      operation,
    })),
  );
}

describe('GET /v1/openapi.json', () => {
  it('serves the committed openapi.json without a token (run `npm run openapi` after a change)', async () => {
    const doc = await served();
    expect(committedText()).toBe(`${JSON.stringify(doc, null, 2)}\n`);
  });

  it('is a valid OpenAPI 3.1 document to a real validator', async () => {
    const doc = await served();
    expect(doc).toMatchObject({ openapi: '3.1.0' });
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
  });

  it('is refused by the same validator once broken, so the check above can fail', async () => {
    const broken = structuredClone(await served()) as any;
    broken.paths['/v1/jobs'].post.responses['202'].content['application/json'].schema.$ref =
      '#/components/schemas/NoSuchSchema';
    await expect(SwaggerParser.validate(broken)).rejects.toThrow(/NoSuchSchema|resolve/i);
    const noDescription = structuredClone(await served()) as any;
    delete noDescription.paths['/v1/jobs'].get.responses['200'].description;
    await expect(SwaggerParser.validate(noDescription)).rejects.toThrow();
  });

  it('describes every /v1 route the face serves, and each is served', async () => {
    const operations = operationsOf(await served());
    expect(operations.map((o) => `${o.method} ${o.template}`).sort()).toEqual(
      [
        'POST /v1/jobs',
        'GET /v1/jobs',
        'GET /v1/jobs/{taskId}',
        'DELETE /v1/jobs/{taskId}',
        'POST /v1/jobs/{taskId}/input',
        'POST /v1/jobs/batch',
        'POST /v1/jobs/cancel',
        'POST /v1/jobs/{taskId}/retry',
        'POST /v1/jobs/{taskId}/signals/{name}',
        'POST /v1/signals/{token}',
        'GET /v1/schedules',
        'GET /v1/schedules/{key}',
        'PUT /v1/schedules/{key}',
        'DELETE /v1/schedules/{key}',
        'POST /v1/schedules/{key}/trigger',
        'GET /v1/openapi.json',
      ].sort(),
    );
    for (const { method, path, body } of operations) {
      const res = await rest(t.url, method, path, { body });
      expect(res.status, `${method} ${path}`).not.toBe(405);
      expect(res.body?.detail, `${method} ${path}`).not.toBe('No such route.');
    }
  });

  it('names the scope each operation needs, and the server refuses a token without it', async () => {
    for (const { method, path, body, operation } of operationsOf(await served())) {
      const [requirement] = operation.security;
      if (!requirement) continue; // the document and signal URLs take no token
      const [scope] = requirement.bearer!;
      expect(ALL_SCOPES).toContain(scope);
      const token = await t.token(
        'scopeless',
        ALL_SCOPES.filter((s) => s !== scope && s !== 'tasks:admin'),
      );
      const res = await rest(t.url, method, path, { token, body });
      expect(res.status, `${method} ${path} without ${scope}`).toBe(403);
      expect(res.body.code).toBe('FORBIDDEN');
    }
  });
});

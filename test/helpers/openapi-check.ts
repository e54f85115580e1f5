import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

/**
 * Checks a REST answer against the OpenAPI document: its status is declared for the operation,
 * its body matches the declared schema (objects closed: a member the document does not name is
 * a mismatch, though the published document leaves them open for clients), its content type is
 * the declared one, and the headers it must carry are there while those it may not are absent.
 */

export interface RestAnswer {
  method: string;
  /** Absolute, or a path with its query. */
  url: string;
  status: number;
  headers: Headers;
  text: string;
}

type Schema = Record<string, any>;
interface Response {
  description: string;
  headers?: Record<string, { required?: boolean; schema?: Schema }>;
  content?: Record<string, { schema: Schema }>;
}
interface Document {
  paths: Record<string, Record<string, { responses: Record<string, Response | { $ref: string }> }>>;
  components: { schemas: Record<string, Schema>; responses?: Record<string, Response> };
}

/** Headers the document describes: one sent where it is not declared is a mismatch too. */
const DESCRIBED_HEADERS = ['location', 'retry-after', 'link', 'www-authenticate'];

/** A deep copy where every object schema that lists its members admits no other. */
function closed(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(closed);
  if (value === null || typeof value !== 'object') return value;
  const copy: Schema = Object.fromEntries(
    Object.entries(value).map(([key, member]) => [key, closed(member)]),
  );
  if (
    copy.properties &&
    typeof copy.properties === 'object' &&
    !('additionalProperties' in copy) &&
    !('unevaluatedProperties' in copy)
  )
    copy.unevaluatedProperties = false;
  return copy;
}

const PROBLEM = { $ref: '#/components/schemas/Problem' };

const essence = (type: string | null) => (type ?? '').split(';')[0]!.trim().toLowerCase();

export class OpenApiChecker {
  private readonly ajv = new Ajv2020({
    allErrors: true,
    strict: false,
    validateFormats: false,
  });
  private readonly components: Schema;
  private readonly templates: Array<{ template: string; pattern: RegExp }>;
  private readonly roots: Set<string>;
  private readonly validators = new Map<Schema, ValidateFunction>();

  constructor(private readonly doc: Document) {
    this.components = closed(doc.components) as Schema;
    this.ajv.addVocabulary(['components']);
    // Concrete paths before templates, as OpenAPI matches them (`/v1/jobs/batch` first).
    this.templates = Object.keys(doc.paths)
      .sort((a, b) => Number(a.includes('{')) - Number(b.includes('{')))
      .map((template) => ({
        template,
        pattern: new RegExp(`^${template.replace(/\./g, '\\.').replace(/\{\w+\}/g, '[^/]+')}$`),
      }));
    this.roots = new Set(Object.keys(doc.paths).map((p) => p.split('/')[2]!));
  }

  /** Whether the answer is to a path the document speaks for (its roots under `/v1`). */
  covers(url: string): boolean {
    const [v1, root] = this.pathOf(url).split('/').slice(1);
    return v1 === 'v1' && root !== undefined && this.roots.has(root);
  }

  /** What is wrong with the answer; empty when it conforms or is not the document's to judge. */
  check(answer: RestAnswer): string[] {
    // A CORS preflight is the server's, answered before any route (docs/limits.md).
    if (!this.covers(answer.url) || answer.method.toUpperCase() === 'OPTIONS') return [];
    const path = this.pathOf(answer.url);
    const method = answer.method.toLowerCase();
    const at = `${answer.method.toUpperCase()} ${path} → ${answer.status}`;
    const matching = this.templates.filter((t) => t.pattern.test(path));
    const found = matching.find((t) => this.doc.paths[t.template]![method]);
    if (!found) {
      // No operation: the router answers 405 with Allow for a known path, else 404.
      const expected = matching.length ? 405 : 404;
      const problems = this.problemShape(answer, at);
      if (answer.status !== expected) problems.unshift(`${at}: no such operation, so ${expected}`);
      if (expected === 405 && !answer.headers.has('allow')) problems.push(`${at}: no Allow`);
      return problems;
    }
    const operation = this.doc.paths[found.template]![method]!;
    const declared = operation.responses[String(answer.status)];
    const where = `${answer.method.toUpperCase()} ${found.template} → ${answer.status}`;
    if (!declared) return [`${where}: status ${answer.status} is not declared (${answer.text})`];
    const response = this.resolve(declared);
    return [
      ...this.checkHeaders(response, answer, where),
      ...this.checkBody(response, answer, where),
    ];
  }

  /** The path as the router reads it: under `/v1/`, empty segments dropped. */
  private pathOf(url: string): string {
    const { pathname } = new URL(url, 'http://localhost');
    if (!pathname.startsWith('/v1/')) return pathname;
    return `/${pathname.split('/').filter(Boolean).join('/')}`;
  }

  private resolve(response: Response | { $ref: string }): Response {
    if (!('$ref' in response)) return response;
    return this.doc.components.responses![response.$ref.split('/').pop()!]!;
  }

  private validatorOf(schema: Schema): ValidateFunction {
    let validate = this.validators.get(schema);
    if (!validate) {
      validate = this.ajv.compile({ ...(closed(schema) as Schema), components: this.components });
      this.validators.set(schema, validate);
    }
    return validate;
  }

  private checkHeaders(response: Response, answer: RestAnswer, where: string): string[] {
    const problems: string[] = [];
    const declared = Object.fromEntries(
      Object.entries(response.headers ?? {}).map(([name, h]) => [name.toLowerCase(), h]),
    );
    for (const [name, header] of Object.entries(declared)) {
      const value = answer.headers.get(name);
      if (value === null) {
        if (header.required) problems.push(`${where}: header ${name} is required but missing`);
      } else if (header.schema?.pattern && !new RegExp(header.schema.pattern).test(value)) {
        problems.push(`${where}: header ${name}: ${value} does not match ${header.schema.pattern}`);
      }
    }
    for (const name of DESCRIBED_HEADERS)
      if (answer.headers.has(name) && !declared[name])
        problems.push(`${where}: header ${name} is sent but not declared`);
    return problems;
  }

  private checkBody(response: Response, answer: RestAnswer, where: string): string[] {
    if (answer.method.toUpperCase() === 'HEAD') return []; // an answer to HEAD has no body
    const type = essence(answer.headers.get('content-type'));
    if (!response.content)
      return answer.text === '' ? [] : [`${where}: a body where none is declared`];
    const media = response.content[type];
    if (!media) return [`${where}: content type ${type || '(none)'} is not declared`];
    let body: unknown;
    try {
      body = JSON.parse(answer.text);
    } catch {
      return [`${where}: the body is not JSON`];
    }
    const validate = this.validatorOf(media.schema);
    if (validate(body)) return [];
    return (validate.errors ?? []).map(
      (e) => `${where}: body${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`,
    );
  }

  /** An answer with no operation is still a problem document. */
  private problemShape(answer: RestAnswer, at: string): string[] {
    if (essence(answer.headers.get('content-type')) !== 'application/problem+json')
      return [`${at}: not a problem document`];
    if (answer.method.toUpperCase() === 'HEAD') return [];
    const validate = this.validatorOf(PROBLEM);
    try {
      return validate(JSON.parse(answer.text)) ? [] : [`${at}: not a problem document`];
    } catch {
      return [`${at}: the body is not JSON`];
    }
  }
}

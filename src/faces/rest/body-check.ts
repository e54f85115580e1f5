import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { ServiceError } from '../../errors.js';
import type { JsonSchema } from './json-schema.js';
import type { RequestBody } from './route.js';
import { COMPONENT_SCHEMAS } from './schemas.js';

/**
 * Request bodies checked against the schemas the document publishes (draft 2020-12, Ajv), and a
 * refusal that names the member at fault as the domain would ("retry.factor must be a number.").
 * Formats (date-time, uuid, uri) are annotations here: whether a text is a date is the domain's
 * to say, in its own words.
 */

const ajv = new Ajv2020({
  allErrors: false,
  verbose: true, // each error carries its schema, which the refusal describes
  validateFormats: false,
  allowUnionTypes: true,
});
// A body schema is compiled with the components beside it, so `#/components/schemas/X` resolves
// as it does in the document.
ajv.addVocabulary(['components']);

const compiled = new WeakMap<RequestBody, ValidateFunction>();

function validatorOf(body: RequestBody): ValidateFunction {
  let validate = compiled.get(body);
  if (!validate) {
    validate = ajv.compile({ ...body.schema, components: { schemas: COMPONENT_SCHEMAS } });
    compiled.set(body, validate);
  }
  return validate;
}

/** Compiles every body schema now, so a broken one fails at boot, not at its first request. */
export function compileBodies(bodies: Iterable<RequestBody>): void {
  for (const body of bodies) validatorOf(body);
}

/**
 * The body, if it is valid against the route's schema.
 * @throws ServiceError BAD_USER_INPUT naming the member at fault (with `index`, an entry's)
 */
export function checkBody(body: RequestBody, value: unknown): unknown {
  const validate = validatorOf(body);
  if (validate(value)) return value;
  throw refusalOf(validate.errors ?? [], body);
}

function resolve(schema: JsonSchema): JsonSchema {
  const target = schema.$ref;
  if (typeof target !== 'string') return schema;
  return COMPONENT_SCHEMAS[target.slice(target.lastIndexOf('/') + 1)] ?? {};
}

const unique = (list: string[]) => [...new Set(list)];

/** What a value must be, in words: "an integer", "one of skip, once, all"; '' for anything. */
function describe(given: unknown): string {
  if (given === null || typeof given !== 'object') return '';
  const schema = resolve(given as JsonSchema);
  if (Array.isArray(schema.anyOf))
    return unique(schema.anyOf.map(describe).filter((d) => d && d !== 'null')).join(' or ');
  if ('const' in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) {
    const values = schema.enum.filter((v): v is string => typeof v === 'string');
    return `one of ${unique(values.map((v) => v.toLowerCase())).join(', ')}`;
  }
  const types = (Array.isArray(schema.type) ? schema.type : [schema.type]).filter(
    (t) => typeof t === 'string' && t !== 'null',
  );
  return types
    .map((type) => {
      if (type === 'string')
        return schema.format === 'date-time' ? 'a date and time (ISO 8601)' : 'a string';
      if (type === 'array') {
        const items = describe(schema.items);
        return items === 'a string' ? 'a list of strings' : 'a list';
      }
      return (
        { integer: 'an integer', number: 'a number', boolean: 'true or false' }[type as string] ??
        'a JSON object'
      );
    })
    .join(' or ');
}

/**
 * The error to report: one at the deepest member; there, one of a shape whose type matched
 * (a missing or unknown member, a value not listed) before a type error or an `anyOf` that
 * lists every type the member may have.
 */
function chosen(errors: ErrorObject[]): ErrorObject | undefined {
  const depth = Math.max(...errors.map((e) => e.instancePath.length));
  const deepest = errors.filter((e) => e.instancePath.length === depth);
  return deepest.find((e) => e.keyword !== 'type' && e.keyword !== 'anyOf') ?? deepest.at(-1);
}

/** A member's name as sent, cut short: a refusal names it without echoing a megabyte back. */
const shown = (name: string) => (name.length > 80 ? `${name.slice(0, 80)}…` : name);

/** JSON pointer segments as a member's name: `retry.factor`, `status[1]`, after `start`. */
function nameOf(start: string, segments: readonly string[]): string {
  let name = start;
  for (const segment of segments.map(shown))
    name = /^\d+$/.test(segment) ? `${name}[${segment}]` : name ? `${name}.${segment}` : segment;
  return name;
}

function refusalOf(errors: ErrorObject[], body: RequestBody): ServiceError {
  const error = chosen(errors);
  let path = (error?.instancePath ?? '')
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  let prefix = '';
  let details: Record<string, unknown> | undefined;
  let start = body.name ?? '';
  // A batch's entry is named by its index, as the domain names it (DESIGN §15).
  if (body.entries && path[0] === body.entries && /^\d+$/.test(path[1] ?? '')) {
    const index = Number(path[1]);
    prefix = `entry ${index}: `;
    details = { index };
    path = path.slice(2);
    start = '';
  }
  const refuse = (subject: string, rest: string) =>
    new ServiceError(
      'BAD_USER_INPUT',
      `${prefix}${subject ? `${subject} ` : prefix ? '' : 'The body '}${rest}`,
      details,
    );

  if (!error) return refuse(start, 'is not valid.');
  const { keyword, params, parentSchema } = error;
  if (keyword === 'required') {
    const missing = String(params.missingProperty);
    const wanted = describe((parentSchema?.properties as Record<string, unknown>)?.[missing]);
    return refuse(
      nameOf(start, [...path, missing]),
      wanted ? `must be ${wanted}.` : 'is required.',
    );
  }
  const subject = nameOf(start, path);
  if (keyword === 'additionalProperties')
    return refuse(
      subject,
      `has no member ${JSON.stringify(shown(String(params.additionalProperty)))}.`,
    );
  const wanted = describe(parentSchema);
  return refuse(subject, wanted ? `must be ${wanted}.` : `${error.message}.`);
}

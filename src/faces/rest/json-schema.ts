/**
 * Small builders for the JSON Schemas (draft 2020-12, as OpenAPI 3.1 reads them) the REST face
 * validates with and documents. Types only: ranges, patterns and what a value means are the
 * domain's to check, in its own words, so a rule is never written twice; descriptions state
 * them for the reader.
 */

/** A JSON Schema object. */
export type JsonSchema = { [keyword: string]: unknown };

/** A named schema of the document's `components.schemas`. */
export const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

export const string = (description?: string, more: JsonSchema = {}): JsonSchema => ({
  type: 'string',
  ...more,
  ...(description ? { description } : {}),
});

export const integer = (description?: string): JsonSchema => ({
  type: 'integer',
  ...(description ? { description } : {}),
});

export const dateTime = (description?: string): JsonSchema =>
  string(description, { format: 'date-time' });

export const uuid = (description?: string): JsonSchema => string(description, { format: 'uuid' });

export const listOf = (items: JsonSchema, description?: string): JsonSchema => ({
  type: 'array',
  items,
  ...(description ? { description } : {}),
});

/** An object with these members, `required` among them; others are let through. */
export function object(
  properties: Record<string, JsonSchema>,
  required: readonly string[] = [],
  description?: string,
): JsonSchema {
  return {
    type: 'object',
    ...(required.length ? { required } : {}),
    properties,
    ...(description ? { description } : {}),
  };
}

/** The schema, or JSON null (an optional request field may be sent as null: it reads as absent). */
export function orNull(schema: JsonSchema): JsonSchema {
  const { type, enum: values } = schema;
  if (typeof type === 'string')
    return {
      ...schema,
      type: [type, 'null'],
      ...(Array.isArray(values) ? { enum: [...values, null] } : {}),
    };
  const { description, ...rest } = schema;
  return {
    anyOf: [rest, { type: 'null' }],
    ...(description === undefined ? {} : { description }),
  };
}

/** Any JSON value. */
export const anyJson = (description: string): JsonSchema => ({ description });

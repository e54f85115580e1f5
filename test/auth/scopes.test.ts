import {
  type GraphQLField,
  type GraphQLNamedType,
  GraphQLObjectType,
  GraphQLSchema,
  getNamedType,
  isObjectType,
} from 'graphql';
import { describe, expect, it } from 'vitest';
import { builder } from '../../src/faces/graphql/builder.js';
import { schema } from '../../src/faces/graphql/index.js';
import { SCOPE_OF, SCOPES } from '../../src/tasks/scopes.js';

/**
 * Authorization is declared on the schema (Pothos scope-auth), so the schema itself can be
 * audited: every root field must carry `authScopes`, and those that reach a Task must require
 * a task scope, not merely a valid token.
 */

type AnyField = GraphQLField<unknown, unknown>;

function authScopesOf(field: AnyField): unknown {
  return (field.extensions as { pothosOptions?: { authScopes?: unknown } }).pothosOptions
    ?.authScopes;
}

/** Whether values of `type` can contain a Task, through any chain of object fields. */
function reachesTask(type: GraphQLNamedType, seen = new Set<string>()): boolean {
  if (type.name === 'Task') return true;
  if (!isObjectType(type) || seen.has(type.name)) return false;
  seen.add(type.name);
  return Object.values(type.getFields()).some((field) =>
    reachesTask(getNamedType(field.type), seen),
  );
}

function rootFields(s: GraphQLSchema): Array<{ path: string; field: AnyField }> {
  return [s.getQueryType(), s.getMutationType(), s.getSubscriptionType()]
    .filter((type): type is GraphQLObjectType => type != null)
    .flatMap((type) =>
      Object.values(type.getFields()).map((field) => ({
        path: `${type.name}.${field.name}`,
        field,
      })),
    );
}

const TASK_SCOPES = ['read', 'write', 'admin'];

/** Root fields left open, or reaching tasks with no task scope required. Empty when all is declared. */
function unguardedRootFields(s: GraphQLSchema): string[] {
  const problems: string[] = [];
  for (const { path, field } of rootFields(s)) {
    const scopes = authScopesOf(field);
    if (scopes === undefined) {
      problems.push(`${path}: no authScopes`);
      continue;
    }
    if (!reachesTask(getNamedType(field.type))) continue;
    const required = typeof scopes === 'object' && scopes !== null ? Object.keys(scopes) : [];
    if (!required.some((scope) => TASK_SCOPES.includes(scope)))
      problems.push(`${path}: reaches Task without a task scope`);
  }
  return problems;
}

/** The same schema, with `authScopes` dropped from one root field's declaration. */
function withoutAuthScopes(s: GraphQLSchema, path: string): GraphQLSchema {
  const [typeName, fieldName] = path.split('.') as [string, string];
  const root = s.getType(typeName) as GraphQLObjectType;
  const config = root.toConfig();
  const field = config.fields[fieldName]!;
  const { authScopes: _dropped, ...pothosOptions } = (
    field.extensions as { pothosOptions: Record<string, unknown> }
  ).pothosOptions;
  const stripped = new GraphQLObjectType({
    ...config,
    fields: {
      ...config.fields,
      [fieldName]: { ...field, extensions: { ...field.extensions, pothosOptions } },
    },
  });
  const schemaConfig = s.toConfig();
  return new GraphQLSchema({
    ...schemaConfig,
    query: typeName === 'Query' ? stripped : schemaConfig.query,
    mutation: typeName === 'Mutation' ? stripped : schemaConfig.mutation,
    subscription: typeName === 'Subscription' ? stripped : schemaConfig.subscription,
    types: schemaConfig.types.filter((type) => type.name !== typeName),
  });
}

/** Root fields that are no task operation, and what they ask instead. */
const NOT_OPERATIONS: Record<string, unknown> = { 'Query.taskKinds': { authenticated: true } };
/** Root fields that are another operation under Relay's name: they read as it does, audited as it. */
const ALIASES: Record<string, keyof typeof SCOPE_OF> = {
  'Query.node': 'task',
  'Query.nodes': 'task',
};

/**
 * Where a root field's declared scope and the one table (`SCOPE_OF`, which REST, MCP and A2A
 * ask through the gate) disagree; a root field that is neither an operation of the table nor
 * listed above is one too. Empty when they agree.
 */
function scopeMismatches(s: GraphQLSchema): string[] {
  const problems: string[] = [];
  const nameOf: Record<string, string> = {
    [SCOPES.read]: 'read',
    [SCOPES.write]: 'write',
    [SCOPES.admin]: 'admin',
  };
  for (const { path, field } of rootFields(s)) {
    const declared = authScopesOf(field);
    const scope = SCOPE_OF[ALIASES[path] ?? (field.name as keyof typeof SCOPE_OF)];
    const expected = scope === undefined ? NOT_OPERATIONS[path] : { [nameOf[scope]!]: true };
    if (expected === undefined) problems.push(`${path}: no operation in SCOPE_OF`);
    else if (JSON.stringify(declared) !== JSON.stringify(expected))
      problems.push(`${path}: declares ${JSON.stringify(declared)}, SCOPE_OF says ${scope}`);
  }
  return problems;
}

describe('the schema declares authorization', () => {
  it('declares on each root field the scope SCOPE_OF gives its operation', () => {
    expect(scopeMismatches(schema)).toEqual([]);
  });

  it('flags a root field whose declared scope drifts from SCOPE_OF', () => {
    const s = withoutAuthScopes(schema, 'Mutation.cancelTask');
    const field = s.getMutationType()!.getFields().cancelTask!;
    (field.extensions as { pothosOptions: Record<string, unknown> }).pothosOptions.authScopes = {
      read: true,
    };
    expect(scopeMismatches(s)).toEqual([
      'Mutation.cancelTask: declares {"read":true}, SCOPE_OF says tasks:write',
    ]);
  });

  it('puts authScopes on every root field, with a task scope on each that reaches a Task', () => {
    expect(rootFields(schema).length).toBeGreaterThanOrEqual(7);
    expect(unguardedRootFields(schema)).toEqual([]);
  });

  it('flags each root field whose authScopes is removed', () => {
    for (const { path } of rootFields(schema)) {
      expect(unguardedRootFields(withoutAuthScopes(schema, path))).toEqual([
        `${path}: no authScopes`,
      ]);
    }
  });

  it('flags a root field reaching a Task that needs only a valid token', () => {
    const s = withoutAuthScopes(schema, 'Query.task');
    const field = s.getQueryType()!.getFields().task!;
    (field.extensions as { pothosOptions: Record<string, unknown> }).pothosOptions.authScopes = {
      authenticated: true,
    };
    expect(unguardedRootFields(s)).toEqual(['Query.task: reaches Task without a task scope']);
  });

  it('requires read to query and subscribe, write to change, and any valid token for taskKinds', () => {
    const declared = Object.fromEntries(
      rootFields(schema).map(({ path, field }) => [path, authScopesOf(field)]),
    );
    expect(declared).toEqual({
      'Query.task': { read: true },
      'Query.node': { read: true },
      'Query.nodes': { read: true },
      'Query.tasks': { read: true },
      'Query.taskKinds': { authenticated: true },
      'Mutation.startTask': { write: true },
      'Mutation.cancelTask': { write: true },
      'Mutation.provideTaskInput': { write: true },
      'Mutation.startTasks': { write: true },
      'Mutation.cancelTasks': { write: true },
      'Mutation.retryTask': { write: true },
      'Query.schedule': { read: true },
      'Query.schedules': { read: true },
      'Mutation.upsertSchedule': { write: true },
      'Mutation.deleteSchedule': { write: true },
      'Mutation.pauseSchedule': { write: true },
      'Mutation.triggerSchedule': { write: true },
      'Mutation.signalTask': { write: true },
      'Subscription.taskUpdated': { read: true },
      'Subscription.tasksUpdated': { read: true },
    });
  });

  it('guards the payload fields and owner on Task, and authorizes subscriptions when they start', () => {
    const task = schema.getType('Task') as GraphQLObjectType;
    const guarded = Object.values(task.getFields())
      .filter((field) => authScopesOf(field) !== undefined)
      .map((field) => field.name)
      .sort();
    // DESIGN §11 adds the webhooks and deliveries to the owner's payload fields.
    expect(guarded).toEqual([
      'deliveries',
      'input',
      'inputRequest',
      'inputRequests',
      'owner',
      'result',
      'webhooks',
    ]);
    for (const name of [
      'input',
      'result',
      'inputRequest',
      'inputRequests',
      'webhooks',
      'deliveries',
    ])
      expect(typeof authScopesOf(task.getFields()[name]!)).toBe('function');
    expect(authScopesOf(task.getFields().owner!)).toEqual({ admin: true });
    expect(
      (builder.options as { scopeAuth?: { authorizeOnSubscribe?: boolean } }).scopeAuth
        ?.authorizeOnSubscribe,
    ).toBe(true);
  });
});

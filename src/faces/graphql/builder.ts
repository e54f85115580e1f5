import SchemaBuilder from '@pothos/core';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import { GraphQLError, type GraphQLResolveInfo, getArgumentValues } from 'graphql';
import { hasScope, type Principal, SCOPES } from '../../auth/principal.js';
import type { ServiceError } from '../../errors.js';
import type { ScheduleService } from '../../schedules/service.js';
import { type Operation, SCOPE_OF } from '../../tasks/scopes.js';
import type { TaskService } from '../../tasks/service.js';

/** Per-request (per-operation over WebSocket) context. */
export interface Context {
  /** The verified caller; null when no token, or a bad one, was sent. */
  principal: Principal | null;
  /** Why `principal` is null when a token was sent but refused. */
  authError: ServiceError | null;
  tasks: TaskService;
  /** DESIGN §17. */
  schedules: ScheduleService;
  /**
   * When a subscription over this request must end: the token's expiry over HTTP (SSE).
   * Unset over WebSocket, whose socket is closed with 4403 at that moment instead.
   */
  streamUntil?: number | undefined;
}

export interface AuthScopes {
  /** Any valid token. */
  authenticated: boolean;
  read: boolean;
  write: boolean;
  admin: boolean;
}

/** Each token scope as `AuthScopes` names it. */
const SCOPE_NAME = {
  [SCOPES.read]: 'read',
  [SCOPES.write]: 'write',
  [SCOPES.admin]: 'admin',
} as const satisfies Record<string, keyof AuthScopes>;

/**
 * The `authScopes` of the root field that is task operation `operation`: the scope the one
 * table (`SCOPE_OF`, tasks/scopes.ts) gives it, as every other face asks it of the gate.
 */
export function scopeOf(operation: Operation): Partial<AuthScopes> {
  return { [SCOPE_NAME[SCOPE_OF[operation]]]: true };
}

/** The `id` argument of the field being resolved, for the audit line of a refusal. */
function idArgument(info: GraphQLResolveInfo): string | null {
  const field = info.parentType.getFields()[info.fieldName];
  const node = info.fieldNodes[0];
  if (!field || !node) return null;
  const { id } = getArgumentValues(field, node, info.variableValues);
  return typeof id === 'string' ? id : null;
}

/** Configuration only: types and fields live in their own files (see index.ts). */
export const builder = new SchemaBuilder<{
  Context: Context;
  AuthScopes: AuthScopes;
  DefaultFieldNullability: false;
  Scalars: {
    DateTime: { Input: Date; Output: Date };
    JSON: { Input: unknown; Output: unknown };
    ID: { Input: string; Output: string };
  };
}>({
  plugins: [ScopeAuthPlugin],
  defaultFieldNullability: false,
  scopeAuth: {
    authorizeOnSubscribe: true,
    authScopes: (context) => ({
      authenticated: context.principal !== null,
      read: hasScope(context.principal, SCOPES.read),
      write: hasScope(context.principal, SCOPES.write),
      admin: hasScope(context.principal, SCOPES.admin),
    }),
    // A refused field says why with a contract code: no identity at all, or missing scope.
    // (scope-auth's default error reaches clients with no extensions.code at all.)
    unauthorizedError: (_parent, context, info) => {
      const code = context.principal === null ? 'UNAUTHENTICATED' : 'FORBIDDEN';
      // A refused root field is a refused operation, audited. A refused nested field (a payload an
      // admin may not read) also passes here, but resolves to null: that is no refusal to log.
      if (!info.path.prev)
        context.tasks.gate.refused(
          context.principal?.sub ?? null,
          info.fieldName,
          idArgument(info),
          code,
        );
      return code === 'UNAUTHENTICATED'
        ? new GraphQLError(
            context.authError?.message ??
              'Authentication required: send "Authorization: Bearer <token>".',
            {
              extensions: { code },
            },
          )
        : new GraphQLError('The token lacks the scope this field needs.', { extensions: { code } });
    },
  },
});

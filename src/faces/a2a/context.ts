import { ServerCallContext, type User } from '@a2a-js/sdk/server';
import { type Principal, toActor } from '../../auth/principal.js';
import type { Actor } from '../../tasks/service.js';

/** The bearer of a verified token, as the SDK's call context carries its user. */
export class Caller implements User {
  readonly actor: Actor;

  constructor(
    readonly principal: Principal,
    /** Aborted when the client goes away: waits and streams stop. */
    readonly signal: AbortSignal,
  ) {
    this.actor = toActor(principal);
  }

  get isAuthenticated(): boolean {
    return true;
  }

  get userName(): string {
    return this.principal.sub;
  }
}

export function callContext(caller: Caller, requestedVersion: string): ServerCallContext {
  return new ServerCallContext({ user: caller, requestedVersion });
}

/** The caller of a call the route built; anything else is a programming error. */
export function callerOf(context: ServerCallContext): Caller {
  const user = context.user;
  if (!(user instanceof Caller)) throw new Error('A2A call without an authenticated caller');
  return user;
}

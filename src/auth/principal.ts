import { SCOPES } from '../tasks/scopes.js';
import type { Actor } from '../tasks/service.js';

export { ALL_SCOPES, SCOPES } from '../tasks/scopes.js';

/** Who a verified bearer token speaks for. */
export interface Principal {
  /** The token's `sub`: owner of the tasks it starts. */
  sub: string;
  scopes: ReadonlySet<string>;
  /** Epoch milliseconds of the token's `exp`, if it has one. */
  expiresAt: number | undefined;
}

export function hasScope(principal: Principal | null | undefined, scope: string): boolean {
  return principal?.scopes.has(scope) ?? false;
}

export function toActor(principal: Principal): Actor {
  return {
    id: principal.sub,
    admin: principal.scopes.has(SCOPES.admin),
    scopes: principal.scopes,
  };
}

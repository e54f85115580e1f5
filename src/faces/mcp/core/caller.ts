import type { Principal } from '../../../auth/principal.js';
import { type Actor, ownerActor } from '../../../tasks/requests.js';

/**
 * The actor an MCP call acts as: `tasks:admin` grants nothing more over MCP (DESIGN §9), so
 * every caller sees, waits on and changes its own tasks only, on both revisions.
 */
export const callerOf = (principal: Principal): Actor => ownerActor(principal.sub);

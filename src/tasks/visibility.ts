import { ServiceError } from '../errors.js';
import type { Actor } from './service.js';
import type { Task } from './task.js';

/**
 * Who may read which field of a task they can see (DESIGN §2), the one statement of it every
 * face calls: the payloads (`input`, `result`, `inputRequest`, and later its webhooks and
 * deliveries) are the owner's alone — an admin sees metadata and status, not payloads — and
 * the owner's name is for admins only (the `tasks:admin` scope, which is `Actor.admin`).
 */
export function mayReadPayloads(task: Pick<Task, 'owner'>, viewer: Actor | null): boolean {
  return viewer !== null && viewer.id === task.owner;
}

/**
 * Whose tasks an operation is about: `named` when it is the actor or the actor is an admin.
 * @throws ServiceError FORBIDDEN when a non-admin names another principal
 */
export function ownerFor(actor: Actor, named: string | null | undefined, verb: string): string {
  if (named != null && named !== actor.id && !actor.admin)
    throw new ServiceError('FORBIDDEN', `Only admins may ${verb} the tasks of another principal.`);
  return named ?? actor.id;
}

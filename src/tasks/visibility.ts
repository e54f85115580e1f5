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

import type { Logger } from 'pino';
import type { TaskEvents } from './events/hub.js';
import { subscribeToOwner } from './events/owner-subscription.js';
import { type Pullable, subscribeToTask } from './events/subscription.js';
import { checkFilter } from './filter.js';
import type { Gate } from './gate.js';
import type { Actor, ListRequest } from './requests.js';
import type { Task } from './task.js';
import { checkId } from './validation.js';
import { ownerFor } from './visibility.js';

/**
 * Following tasks as they change (DESIGN §4): one task's versions, or every change of an
 * owner's tasks, each scoped to its actor and audited through the service's gate, as every
 * task operation is. The faces reach it as the service's `subscriptions`.
 */
export class TaskSubscriptions {
  constructor(
    private readonly events: TaskEvents,
    private readonly gate: Gate,
    private readonly log: Logger,
  ) {}

  private scope(actor: Actor): string | null {
    return actor.admin ? null : actor.id;
  }

  /**
   * The task's current state, then every later version in increasing order; ends after the
   * final state, or when the task expires or is deleted, or at `until` (epoch ms).
   * @throws ServiceError NOT_FOUND, before anything is sent, for a task the actor cannot see
   */
  toTask(
    actor: Actor,
    id: string,
    until?: number,
  ): Promise<AsyncIterableIterator<Task> & Pullable<Task>> {
    return this.gate.around(
      actor,
      'taskUpdated',
      id,
      () => subscribeToTask(this.events, checkId(id), this.scope(actor), until),
      () => [null, 'subscribed'],
    );
  }

  /**
   * Every later change of the actor's tasks (admins: of `owner`'s) in version order per task,
   * filtered by status; ends at `until` (epoch ms).
   * @throws ServiceError FORBIDDEN when a non-admin names another principal
   */
  toOwner(
    actor: Actor,
    request: Pick<ListRequest, 'statuses' | 'owner' | 'filter'>,
    until?: number,
  ): Promise<AsyncIterableIterator<Task>> {
    return this.gate.around(
      actor,
      'tasksUpdated',
      null,
      async () => {
        const owner = ownerFor(actor, request.owner ?? request.filter?.owner, 'follow');
        return subscribeToOwner(
          this.events,
          { owner, statuses: request.statuses, filter: checkFilter(request.filter), until },
          this.log,
        );
      },
      () => [null, 'subscribed'],
    );
  }
}

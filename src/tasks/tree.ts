import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import type { Gate } from './gate.js';
import { listChildrenFor } from './listing.js';
import type { Actor, ListRequest, TaskPage } from './requests.js';
import { checkId } from './validation.js';

/** A task's children as the faces read them (DESIGN §16 `Task.children`). */
export class TaskTree {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly gate: Gate,
    /** The service's `list`: children are a list with `filter.parentId`. */
    private readonly list: (actor: Actor, request: ListRequest) => Promise<TaskPage>,
  ) {}

  /**
   * One page of a task's children, newest first: `list` with `filter.parentId`, so the same
   * rules and filters apply.
   */
  children(actor: Actor, id: string, request: ListRequest = {}): Promise<TaskPage> {
    return this.list(actor, {
      ...request,
      filter: { ...request.filter, parentId: checkId(id) },
    });
  }

  /**
   * `children` of several tasks at once, in one statement, one audit line and one take of the
   * rate limit (a page of tasks, each asked for its children). The request applies to every
   * parent (admins name the parents' owner in `owner`).
   * @returns each parent's page, in the order of `ids`
   */
  childrenOfMany(actor: Actor, ids: readonly string[], request: ListRequest): Promise<TaskPage[]> {
    return this.gate.around(
      actor,
      'tasks',
      null,
      () => listChildrenFor(this.db, actor, ids, request),
      (pages) => [null, `ok:${pages.reduce((n, page) => n + page.tasks.length, 0)}`],
    );
  }
}

import type { Kysely } from 'kysely';
import type { Database } from '../../db/types.js';
import type { TaskEvents } from '../events/hub.js';
import type { Gate } from '../gate.js';
import type { Actor } from '../requests.js';
import { type Task, toTask, visible } from '../task.js';
import { checkId } from '../validation.js';
import { mayReadPayloads } from '../visibility.js';
import { sendSignal } from './signals.js';
import { listSteps, listStepsOf, type TaskStep, toTaskStep } from './view.js';

/** Who sends a signal through a signal URL, in the audit trail: a caller without a token. */
const SIGNAL_URL_ACTOR: Actor = Object.freeze({ id: 'signal-url', admin: false });

/**
 * A task's journal as the faces reach it (DESIGN §16): the signals sent to it and its steps,
 * each call scoped to its actor and audited through the service's gate, as every task
 * operation is.
 */
export class TaskJournals {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly events: TaskEvents,
    private readonly gate: Gate,
  ) {}

  private scope(actor: Actor): string | null {
    return actor.admin ? null : actor.id;
  }

  /**
   * Sends the signal `name` to a task of the actor (admins: anyone's) (DESIGN §16): kept,
   * and the task woken if it waits for it.
   * @returns the task after the signal, and whether this call was the first with this payload
   *   (false: a repeat of the same payload, answered as the first)
   * @throws ServiceError NOT_FOUND, TASK_TERMINAL, BAD_USER_INPUT (a bad name or payload, or
   *   one that fails the waiting handler's schema), SIGNAL_ALREADY_SENT (another payload)
   */
  signal(
    actor: Actor,
    id: string,
    name: string,
    payload: unknown,
  ): Promise<{ task: Task; first: boolean }> {
    return this.gate.around(
      actor,
      'signalTask',
      id,
      async () => {
        const sent = await sendSignal(
          this.db,
          { by: 'id', id: checkId(id), name, owner: this.scope(actor) },
          payload,
        );
        this.events.committed(sent.row.id, sent.row.version);
        return { task: toTask(sent.row), first: sent.first };
      },
      ({ first }) => [null, first ? 'sent' : 'repeated', { name }],
    );
  }

  /**
   * Sends the signal a signal URL's `token` is bound to (`ctx.signalUrl`, DESIGN §16), for a
   * caller without a token: it learns nothing of the task. Audited as principal `signal-url`.
   * @returns whether this call was the first with this payload
   * @throws ServiceError NOT_FOUND for a token unknown, used up (its signal was sent with
   *   another payload) or whose task ended, alike; BAD_USER_INPUT for a payload that fails the
   *   waiting handler's schema
   */
  signalByUrl(token: string, payload: unknown): Promise<{ first: boolean }> {
    return this.gate
      .around(
        SIGNAL_URL_ACTOR,
        'signalTask',
        null,
        async () => {
          const sent = await sendSignal(this.db, { by: 'token', token }, payload);
          this.events.committed(sent.row.id, sent.row.version);
          return { taskId: sent.row.id, name: sent.name, first: sent.first };
        },
        ({ taskId, first, name }) => [taskId, first ? 'sent' : 'repeated', { name }],
      )
      .then(({ first }) => ({ first }));
  }

  /**
   * The task's journal (DESIGN §16 `Task.steps`), in the order the steps first ran, for its
   * owner and admins (results and signal URLs for the owner only).
   * @returns null for a task the actor cannot see
   */
  steps(actor: Actor, id: string): Promise<TaskStep[] | null> {
    return this.gate.around(
      actor,
      'task',
      id,
      async () => {
        const row = await this.events.read(checkId(id));
        if (!visible(row, this.scope(actor))) return null;
        const payloads = mayReadPayloads({ owner: row.owner }, actor);
        return (await listSteps(this.db, row.id)).map((step) => toTaskStep(step, payloads));
      },
      (steps) => [null, steps ? `ok:${steps.length}` : 'not_found'],
    );
  }

  /**
   * The journals of tasks the actor has just read through an operation that had its audit
   * line and rate limit (a page of tasks, each asked for its `steps`), in one statement and
   * without either of their own; as `steps` shows them. null for a task the actor may not see.
   */
  async stepsOf(actor: Actor, tasks: readonly Task[]): Promise<Array<TaskStep[] | null>> {
    const sees = (task: Task) => actor.admin || task.owner === actor.id;
    const journals = await listStepsOf(
      this.db,
      tasks.filter(sees).map((task) => task.id),
    );
    return tasks.map((task) => {
      if (!sees(task)) return null;
      const payloads = mayReadPayloads(task, actor);
      return (journals.get(task.id) ?? []).map((step) => toTaskStep(step, payloads));
    });
  }
}

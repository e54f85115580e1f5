import type { TaskRow } from '../../db/types.js';
import { coerceError } from '../../errors.js';
import { claimWork } from '../sql/claim.js';
import { failLostTasks, releaseLeases } from '../sql/leases.js';
import { ChildStarts } from '../steps/child-starts.js';
import { ClaimWaker } from './claim-waker.js';
import { LeaseKeeper } from './lease-keeper.js';
import { LocalQueue } from './local-queue.js';
import { OutcomeRecorder } from './outcome.js';
import { Prefetch } from './prefetch.js';
import { giveBack, type Reservation, Reservations, type ReservedSlots } from './reservations.js';
import { DEFAULT_RETENTION, type RunnerOptions } from './runner-options.js';
import { RunningTask } from './running-task.js';
import type { RunningTaskOptions, TaskHost } from './task-host.js';
import { recordClaim } from './trace.js';
import { claimInFlight, windDown } from './wind-down.js';

export { type AbortCause, TaskAbortedError } from './aborted.js';

/**
 * Runs tasks in this process: woken by NOTIFY (and a backstop poll), claims with
 * `FOR UPDATE SKIP LOCKED` under a lease the LeaseKeeper renews, and runs each claimed task as
 * a RunningTask, whose writes are fenced by the lease. A claim takes the free slots and a
 * prefetch: what does not start at once waits in the local queue, and the next claim is sent
 * while the queue still feeds the slots. A slot frees when its handler returns; the outcome is
 * written in a batch meanwhile (see `OutcomeWriter`).
 *
 * A task reaches a slot by one of two paths:
 * - a claim ({@link claimLoop}), when the waker (`ClaimWaker`, which also decides whether a
 *   claim is worth sending) says so;
 * - an insert that is its own claim ({@link reserve}): the task service, starting a task of a
 *   kind run here while a slot is free, inserts it leased to this runner, and the reservation
 *   calls back {@link runInserted}, {@link slotUnused} or {@link giveBackLost}.
 * A running task tells the runner of its slot through {@link slotFreed}, {@link ended} and
 * {@link dueAt} (`TaskHost`).
 */
export class Runner implements ReservedSlots, TaskHost {
  /** Every task this process holds, running or waiting for input, by id. */
  private readonly tasks = new Map<string, RunningTask>();
  /**
   * The held tasks that take a slot: running, not waiting for input, not returned. Kept as they
   * change rather than counted, since every freed slot asks how many are taken.
   */
  private readonly busy = new Set<RunningTask>();
  private readonly waker = new ClaimWaker(() => this.claimLoop());
  private stopping = false;
  private backstopTimer: NodeJS.Timeout | undefined;
  private unsubscribe: Array<() => void> = [];
  private readonly kindNames: string[];
  private readonly leases: LeaseKeeper;
  private readonly queue: LocalQueue;
  private readonly prefetch: Prefetch;
  private readonly taskOptions: RunningTaskOptions;
  /** Slots promised to tasks this process is inserting already leased (see `reserve`). */
  private readonly reservations: Reservations;
  /** The owner the last fair claim stopped after: the next goes on from there. */
  private ownerCursor = '';

  constructor(private readonly options: RunnerOptions) {
    const { db, events, log, workerId, leaseMs } = options;
    this.kindNames = options.kinds.names();
    this.prefetch = new Prefetch(
      options.prefetch ?? Math.min(3 * options.concurrency, 1_000),
      options.concurrency,
    );
    this.queue = new LocalQueue({ workerId, leaseMs, events, log });
    this.reservations = new Reservations({ workerId, leaseMs }, this);
    this.leases = new LeaseKeeper({
      db,
      log,
      workerId,
      leaseMs,
      held: () => [...this.tasks.values(), ...this.queue.held()],
    });
    this.taskOptions = {
      db,
      events,
      log,
      leaseMs,
      progressThrottleMs: options.progressThrottleMs ?? 100,
      outcomes: new OutcomeRecorder(db, leaseMs, events),
      observer: options.observer,
      host: this,
      children: new ChildStarts(db, options.kinds, options.retention ?? DEFAULT_RETENTION),
      publicUrl: options.publicUrl ?? (() => 'http://127.0.0.1:4000'),
    };
  }

  start(): void {
    const { events, leaseMs } = this.options;
    this.unsubscribe.push(
      events.onReady((kind) => this.kindNames.includes(kind) && this.announced()),
    );
    this.unsubscribe.push(events.onReconnect(() => this.announced()));
    const backstopMs = this.options.backstopMs ?? Math.min(2_000, Math.max(50, leaseMs / 3));
    this.backstopTimer = setInterval(() => this.backstop(), backstopMs);
    this.leases.start();
    this.wake();
  }

  /** Tasks this process holds, running or waiting for input (not those queued to start). */
  get held(): number {
    return this.tasks.size;
  }

  /** True while this process runs (or holds, waiting for input) task `id`. */
  holds(id: string): boolean {
    return this.tasks.has(id);
  }

  /** Tasks claimed and leased, waiting in the local queue for a slot. */
  get queued(): number {
    return this.queue.length;
  }

  /**
   * A free slot for a task of `kind` that this process is about to insert, when it may run it
   * at once (see `StartsHere`): it runs that kind, has a slot free, and knows of no task waiting
   * for one (none queued, no claim in flight, and the last one found all there were). A task
   * queued before keeps its turn: the next claim takes it as it would have.
   * @returns undefined when the task is to wait for a claim
   */
  reserve(kind: string): Reservation | undefined {
    if (this.stopping || this.waker.pass || !this.waker.exhausted || this.queue.length > 0)
      return undefined;
    if (!this.kindNames.includes(kind) || this.active >= this.options.concurrency) return undefined;
    return this.reservations.take();
  }

  /** A reserved insert stored its task leased here: it runs now (`ReservedSlots`). */
  runInserted(row: TaskRow, sentAt: number): void {
    if (this.stopping) {
      // Too late to run it here: given back for another worker, the attempt uncounted.
      const { db, workerId } = this.options;
      void releaseLeases(db, workerId, [{ id: row.id, attempt: row.attempt }]).catch(() => 0);
      return;
    }
    this.options.observer?.claimed([row], 0);
    this.run(row, sentAt, sentAt);
  }

  /** A reserved insert stored nothing: claims if a task was announced meanwhile. */
  slotUnused(): void {
    this.waker.slotUnused();
  }

  /** A reserved insert's answer was lost: the task, if stored, is given back (`giveBack`). */
  giveBackLost(id: string): void {
    const { db, workerId, leaseMs } = this.options;
    void giveBack(db, { workerId, leaseMs }, id, () => this.stopping);
    this.waker.slotUnused();
  }

  /** A running task gave up its slot (`TaskHost`): queued tasks take it, then a claim may. */
  slotFreed(task: RunningTask, returned: boolean): void {
    this.busy.delete(task);
    if (returned) this.prefetch.ran(performance.now() - task.startedAt);
    this.startQueued();
    if (!this.stopping) this.waker.slotFreed(returned);
  }

  /** A task waiting for input resumed (`TaskHost`): it takes a slot again. */
  slotTaken(task: RunningTask): void {
    if (task.busy) this.busy.add(task);
  }

  /** A task's handler is done and the task lets go of everything (`TaskHost`). */
  ended(task: RunningTask): void {
    this.busy.delete(task);
    if (this.tasks.get(task.id) === task) this.tasks.delete(task.id);
    if (task.keyed && !this.stopping) this.waker.keySlotFreed();
  }

  /** A task held here is due again at `at` (`TaskHost`): the waker claims then. */
  dueAt(at: number): void {
    this.waker.wakeAt(at);
  }

  /** Handlers running now, or promised a slot: held tasks not waiting for input nor returned. */
  private get active(): number {
    return this.reservations.count + this.busy.size;
  }

  /** Starts queued tasks while slots are free. */
  private startQueued(): void {
    if (this.stopping) return;
    for (let free = this.options.concurrency - this.active; free > 0; free--) {
      const next = this.queue.shift(Date.now());
      if (!next) return;
      this.run(next.row, next.claimedAt, next.leaseFrom);
    }
  }

  /** More tasks may be claimable than the last claim found: claims now. */
  private announced(): void {
    if (!this.stopping) this.waker.announced();
  }

  /** Starts a claim pass now (or right after the one in progress). */
  wake(): void {
    if (!this.stopping) this.waker.wake();
  }

  private async claimLoop(): Promise<void> {
    const { db, workerId, concurrency, leaseMs, log } = this.options;
    // Let the code running now finish first (the handlers returning, the notifications read
    // from one packet): slots freed together are claimed together. Not a whole turn of the event
    // loop: that would also wait for every other callback ready in it.
    await new Promise<void>((resolve) => process.nextTick(resolve));
    // Claim for free slots, or to refill a draining queue. A wake while every slot is busy
    // claims nothing more: a task started meanwhile is claimed by priority with the others
    // once a slot frees, not queued behind what happened to be ready first.
    for (;;) {
      const free = concurrency - this.active;
      const room = free + this.prefetch.now - this.queue.length;
      const draining =
        this.waker.refilling && this.queue.length <= Math.floor(this.prefetch.now / 2);
      if (this.stopping || room <= 0 || (free <= 0 && !draining)) return;
      this.waker.claiming();
      let rows: TaskRow[];
      let waiting: boolean;
      const claimedAt = Date.now();
      try {
        const claim = await claimWork(db, workerId, this.kindNames, room, leaseMs, {
          fair: this.options.fairness !== 'fifo',
          // What starts at once: the free slots, less what the queue hands them first.
          free: Math.max(0, free - this.queue.length),
          cursor: this.ownerCursor,
        });
        rows = claim.rows;
        this.ownerCursor = claim.cursor;
        waiting = claim.waiting;
        if (claim.nextDue) this.waker.wakeAt(claim.nextDue.getTime());
      } catch (err) {
        log.warn({ err: coerceError(err) }, 'claiming tasks failed; the backstop will retry');
        return;
      }
      if (this.stopping) {
        await releaseLeases(
          db,
          workerId,
          rows.map((r) => ({ id: r.id, attempt: r.attempt })),
        ).catch(() => 0);
        return;
      }
      this.options.observer?.claimed(rows, (Date.now() - claimedAt) / 1000);
      this.waker.claimed(rows.length, room, waiting);
      this.prefetch.claimed(rows.length >= room);
      this.queue.push(rows, claimedAt);
      this.startQueued();
      if (this.waker.exhausted) return;
    }
  }

  private backstop(): void {
    void failLostTasks(this.options.db).catch((err: unknown) =>
      this.options.log.warn({ err: coerceError(err) }, 'failing lost tasks failed'),
    );
    this.announced();
  }

  /** @param leaseFrom when the lease's last renewal (or its claim) was sent */
  private run(row: TaskRow, claimedAt: number, leaseFrom: number): void {
    const kind = this.options.kinds.require(row.kind);
    recordClaim(row, this.options.workerId, claimedAt);
    const task = new RunningTask(row, this.options.workerId, leaseFrom, this.taskOptions);
    this.tasks.set(row.id, task);
    this.busy.add(task);
    task.start(kind);
  }

  /** Stops claiming, then winds down what this process holds (see `windDown`). */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    clearInterval(this.backstopTimer);
    this.waker.stop();
    for (const off of this.unsubscribe) off();
    await claimInFlight(this.waker.pass);
    const { db, log, workerId } = this.options;
    await windDown(
      {
        db,
        log,
        workerId,
        queue: this.queue,
        tasks: () => [...this.tasks.values()],
        leases: this.leases,
      },
      graceMs,
    );
  }
}

import type { PostgresPool, PostgresPoolClient } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import { DatabaseUnavailable, isReadOnlyFault } from './faults.js';
import { clientConfig } from './pg-pool.js';
import { ensureWritableNow } from './writable.js';

/**
 * The database's one fail-fast rule (DESIGN §12). A black-holed server answers nothing, so a
 * request would wait out DB_STATEMENT_TIMEOUT_MS (or DB_CONNECT_TIMEOUT_MS) on it. Instead,
 * once something has waited on the database for SUSPECT_AFTER_MS, a probe (`select 1` on a
 * connection of its own) asks whether it is there at all. When the probe fails within
 * PROBE_TIMEOUT_MS the breaker opens: everything waiting on the database fails then, and
 * everything new at once, as DatabaseUnavailable (SERVICE_UNAVAILABLE on every face), until a
 * probe, repeated every REPROBE_MS, succeeds again. A slow query on a live database is left
 * alone: its probe succeeds, and the statement timeout bounds it as before.
 *
 * A database that answers but does not take writes (during a failover, a standby not yet
 * promoted behind the database's name) is as unavailable: a read-only refusal or connection
 * probes at once, on a new connection (what the pool would open next), and opens the breaker
 * when that one is read-only too. Writes, claims, LISTEN and readiness then fail at once until
 * a probe reaches a writable primary. A refusal on an old connection while the name already
 * points at a writable primary opens nothing: the pool drops that connection.
 */

const SUSPECT_AFTER_MS = 750;
const PROBE_TIMEOUT_MS = 1_250;
const REPROBE_MS = 1_000;
/** How often waits are looked over while any is pending. */
const WATCH_EVERY_MS = 250;

interface Wait {
  readonly since: number;
  fail(err: Error): void;
}

/**
 * Asks the database whether it takes writes (`SHOW transaction_read_only`), on a connection of
 * its own, kept between probes: on a live but busy machine a query on an open connection
 * answers in milliseconds where a new connection may take longer than the probe may. A probe
 * that fails drops the connection; the next one opens another.
 */
export class DatabaseProbe {
  private client: pg.Client | undefined;

  constructor(private readonly databaseUrl: string) {}

  /**
   * Resolves once the database answered within `timeoutMs` and takes writes; rejects otherwise.
   * @param fresh on a new connection: where the database's name points now
   */
  async run(timeoutMs: number, fresh = false): Promise<void> {
    if (fresh) this.close();
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('database probe timed out')), timeoutMs);
    });
    const attempt = (async () => {
      if (!this.client) {
        const client = new pg.Client(
          clientConfig(this.databaseUrl, {
            statementTimeoutMs: timeoutMs,
            connectTimeoutMs: timeoutMs,
          }),
        );
        client.on('error', () => {}); // a probe's failure is its answer
        this.client = client;
        await client.connect();
      }
      // Asked, never taken from what the session reported: the probe is the breaker's truth.
      await ensureWritableNow(this.client);
    })();
    attempt.catch(() => {});
    try {
      await Promise.race([attempt, gaveUp]);
    } catch (err) {
      this.close();
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    const client = this.client;
    this.client = undefined;
    void client?.end().catch(() => {});
  }
}

export class DatabaseBreaker {
  private outage: Error | undefined;
  private readonly waits = new Set<Wait>();
  private probing = false;
  private watch: NodeJS.Timeout | undefined;
  private reprobe: NodeJS.Timeout | undefined;
  private stopped = false;
  /** When the last probe that succeeded began. */
  private lastAnswer = 0;
  /** When the last probe on a new connection succeeded. */
  private lastFreshAnswer = 0;

  constructor(
    private readonly probe: DatabaseProbe,
    private readonly log: Logger,
  ) {}

  /** True while the database is known to be unreachable. */
  get open(): boolean {
    return this.outage !== undefined;
  }

  /** Calls `then` each time the breaker closes: the database answers, and takes writes, again. */
  onClose(then: () => void): void {
    this.closed.push(then);
  }
  private readonly closed: Array<() => void> = [];

  /** `pool` with every connect and query under the breaker. */
  guard(pool: PostgresPool): PostgresPool {
    return {
      connect: async () => {
        const client = await this.wait(
          () => pool.connect(),
          (late) => late.then((c) => release(c, true)).catch(() => {}),
        );
        return this.guardClient(client);
      },
      end: async () => {
        this.stop();
        await pool.end();
      },
    };
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.watch);
    clearTimeout(this.reprobe);
    this.watch = this.reprobe = undefined;
    this.probe.close();
  }

  /** One guard a connection, kept while it lives: kysely keeps per-connection state by it. */
  private readonly guarded = new WeakMap<PostgresPoolClient, PostgresPoolClient>();

  private guardClient(client: PostgresPoolClient): PostgresPoolClient {
    let guarded = this.guarded.get(client);
    if (guarded) return guarded;
    // A connection whose query was given up on may still have it out: it is not reused.
    let abandoned = false;
    guarded = {
      query: ((sql: string, parameters: readonly unknown[]) =>
        this.wait(
          () => client.query(sql, parameters),
          (late) => {
            abandoned = true;
            late.catch(() => {});
          },
        )) as PostgresPoolClient['query'],
      release: () => release(client, abandoned),
    };
    this.guarded.set(client, guarded);
    return guarded;
  }

  /**
   * Starts `start`, unless the breaker is open, and fails it should the breaker open before
   * it is done; `abandon` then gets the work still under way.
   */
  private wait<T>(start: () => Promise<T>, abandon: (late: Promise<T>) => void): Promise<T> {
    if (this.outage) return Promise.reject(new DatabaseUnavailable(this.outage));
    const work = start();
    return new Promise<T>((resolve, reject) => {
      const wait: Wait = {
        since: Date.now(),
        fail: (err) => {
          abandon(work);
          reject(err);
        },
      };
      this.waits.add(wait);
      this.watch ??= setInterval(() => this.look(), WATCH_EVERY_MS).unref();
      work.then(
        (value) => {
          if (this.waits.delete(wait)) resolve(value);
        },
        (err: unknown) => {
          if (err instanceof DatabaseUnavailable && isReadOnlyFault(err.cause)) this.readOnly();
          if (this.waits.delete(wait)) reject(err);
        },
      );
    });
  }

  /**
   * Probes when a wait has gone on too long. A wait that began before the last probe that
   * succeeded is explained (a slow query on a live database) and does not probe again.
   */
  private look(): void {
    if (this.waits.size === 0) {
      clearInterval(this.watch);
      this.watch = undefined;
      return;
    }
    for (const wait of this.waits) {
      if (wait.since < this.lastAnswer) continue;
      if (Date.now() - wait.since >= SUSPECT_AFTER_MS) void this.check();
      return; // later waits are younger
    }
  }

  /**
   * A read-only refusal: probes where the database's name points now, unless a probe there
   * found a writable primary within the last REPROBE_MS (this refusal came on an older
   * connection, which the pool drops).
   */
  private readOnly(): void {
    if (this.outage || Date.now() - this.lastFreshAnswer < REPROBE_MS) return;
    void this.check(true);
  }

  private async check(fresh = false): Promise<void> {
    if (this.probing || this.stopped) return;
    this.probing = true;
    const started = Date.now();
    try {
      await this.probe.run(PROBE_TIMEOUT_MS, fresh);
      this.lastAnswer = started;
      if (fresh) this.lastFreshAnswer = started;
      const outage = this.outage;
      this.outage = undefined;
      if (outage) {
        this.log.info(
          isReadOnlyFault(outage) ? 'database writable again' : 'database reachable again',
        );
        for (const then of this.closed) then();
      }
    } catch (err) {
      this.trip(err instanceof Error ? err : new Error(String(err)));
      if (!this.stopped) this.reprobe = setTimeout(() => void this.check(), REPROBE_MS).unref();
    } finally {
      this.probing = false;
    }
  }

  private trip(cause: Error): void {
    if (!this.outage)
      this.log.warn(
        { err: cause, waiting: this.waits.size },
        isReadOnlyFault(cause)
          ? 'database read-only (a standby, or a failover under way): failing requests at once until a writable primary answers'
          : 'database unreachable: failing requests at once until it answers again',
      );
    this.outage = cause;
    const failed = [...this.waits];
    this.waits.clear();
    for (const wait of failed) wait.fail(new DatabaseUnavailable(cause));
  }
}

function release(client: PostgresPoolClient, destroy: boolean): void {
  (client.release as (destroy?: boolean) => void)(destroy);
}

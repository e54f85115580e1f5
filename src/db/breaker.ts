import type { PostgresPool, PostgresPoolClient } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import { DatabaseUnavailable } from './faults.js';
import { clientConfig } from './pg-pool.js';

/**
 * The database's one fail-fast rule (DESIGN §12). A black-holed server answers nothing, so a
 * request would wait out DB_STATEMENT_TIMEOUT_MS (or DB_CONNECT_TIMEOUT_MS) on it. Instead,
 * once something has waited on the database for SUSPECT_AFTER_MS, a probe (`select 1` on a
 * connection of its own) asks whether it is there at all. When the probe fails within
 * PROBE_TIMEOUT_MS the breaker opens: everything waiting on the database fails then, and
 * everything new at once, as DatabaseUnavailable (SERVICE_UNAVAILABLE on every face), until a
 * probe, repeated every REPROBE_MS, succeeds again. A slow query on a live database is left
 * alone: its probe succeeds, and the statement timeout bounds it as before.
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
 * `select 1` on a connection of its own, kept between probes: on a live but busy machine a
 * query on an open connection answers in milliseconds where a new connection may take longer
 * than the probe may. A probe that fails drops the connection; the next one opens another.
 */
export class DatabaseProbe {
  private client: pg.Client | undefined;

  constructor(private readonly databaseUrl: string) {}

  /** Resolves once the database answered within `timeoutMs`; rejects otherwise. */
  async run(timeoutMs: number): Promise<void> {
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
      await this.client.query('select 1');
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

  constructor(
    private readonly probe: DatabaseProbe,
    private readonly log: Logger,
  ) {}

  /** True while the database is known to be unreachable. */
  get open(): boolean {
    return this.outage !== undefined;
  }

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

  private async check(): Promise<void> {
    if (this.probing || this.stopped) return;
    this.probing = true;
    const started = Date.now();
    try {
      await this.probe.run(PROBE_TIMEOUT_MS);
      this.lastAnswer = started;
      if (this.outage) this.log.info('database reachable again');
      this.outage = undefined;
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
        'database unreachable: failing requests at once until it answers again',
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

import type { PGlite } from '@electric-sql/pglite';
import type pg from 'pg';
import type { Logger } from 'pino';
import { clientConfig, type PgTimeouts } from './pg-pool.js';
import { ensureWritable, ReportingClient } from './writable.js';

export interface ListenHandlers {
  notify(channel: string, payload: string): void;
  /** The connection was lost: until `reconnected`, notifications are not arriving. */
  disconnected?(): void;
  /** LISTEN is back in place after the connection was lost: notifications may have been missed. */
  reconnected(): void;
}

/** The process's one listening connection. */
export interface Listener {
  start(channels: readonly string[], handlers: ListenHandlers): Promise<void>;
  stop(): Promise<void>;
}

export interface PgListenerOptions {
  /** How often an idle connection proves it is alive. @default 10_000 */
  heartbeatMs?: number;
  /** Backoff bounds for reconnecting, jittered. @default [100, 5_000] */
  backoffMs?: readonly [number, number];
  /** Bounds on connecting and on each query (LISTEN, the heartbeat). @default 10 s and 3 s */
  timeouts?: PgTimeouts;
}

/**
 * LISTEN over a dedicated pg client. TCP keepalive and a periodic `select 1` catch a
 * half-open connection, which otherwise looks healthy while no notification ever arrives;
 * any failure reconnects with jittered exponential backoff and then reports `reconnected`.
 * It listens on a writable primary only, where the writes and their NOTIFY happen: a standby
 * (during a failover) refuses LISTEN, and a connection found read-only is dropped and retried.
 */
export class PgListener implements Listener {
  private client: pg.Client | undefined;
  private channels: readonly string[] = [];
  private handlers: ListenHandlers | undefined;
  private stopped = false;
  private failures = 0;
  private heartbeat: NodeJS.Timeout | undefined;
  private pinging = false;
  private retry: NodeJS.Timeout | undefined;
  private readonly heartbeatMs: number;
  private readonly backoffMs: readonly [number, number];
  private readonly timeouts: PgTimeouts;

  constructor(
    private readonly databaseUrl: string,
    private readonly log: Logger,
    options: PgListenerOptions = {},
  ) {
    this.heartbeatMs = options.heartbeatMs ?? 10_000;
    this.backoffMs = options.backoffMs ?? [100, 5_000];
    this.timeouts = options.timeouts ?? { statementTimeoutMs: 10_000, connectTimeoutMs: 3_000 };
  }

  async start(channels: readonly string[], handlers: ListenHandlers): Promise<void> {
    this.channels = channels;
    this.handlers = handlers;
    await this.connect();
  }

  private async connect(): Promise<void> {
    // A black hole must not hold a reconnect (or a LISTEN) forever: both are bounded.
    const client = new ReportingClient(clientConfig(this.databaseUrl, this.timeouts));
    client.on('notification', (msg) => this.handlers?.notify(msg.channel, msg.payload ?? ''));
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('listening connection ended')));
    try {
      await client.connect();
      await ensureWritable(client);
      for (const channel of this.channels) await client.query(`listen "${channel}"`);
    } catch (err) {
      client.removeAllListeners('end');
      client.on('error', () => {});
      void client.end().catch(() => {});
      throw err;
    }
    if (this.stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.failures = 0;
    this.heartbeat = setInterval(() => void this.ping(client), this.heartbeatMs).unref();
  }

  private async ping(client: pg.Client): Promise<void> {
    if (this.pinging) return;
    this.pinging = true;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        client.query('select 1'),
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error('listening connection heartbeat timed out')),
            this.heartbeatMs,
          );
        }),
      ]);
    } catch (err) {
      this.lost(client, err);
    } finally {
      this.pinging = false;
      clearTimeout(timer);
    }
  }

  private lost(client: pg.Client, err: unknown): void {
    if (this.client !== client || this.stopped) return;
    this.client = undefined;
    clearInterval(this.heartbeat);
    this.log.warn({ err }, 'listening connection lost; reconnecting');
    client.removeAllListeners('end');
    client.on('error', () => {});
    void client.end().catch(() => {});
    this.handlers?.disconnected?.();
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    const [min, max] = this.backoffMs;
    const delay = Math.min(max, min * 2 ** this.failures) * (0.5 + Math.random() / 2);
    this.failures++;
    this.retry = setTimeout(() => void this.reconnect(), delay);
  }

  private async reconnect(): Promise<void> {
    this.retry = undefined;
    if (this.stopped) return;
    try {
      await this.connect();
      if (this.stopped) return;
      this.log.info('listening connection restored');
      this.handlers?.reconnected();
    } catch (err) {
      this.log.warn({ err }, 'listening connection could not be restored; retrying');
      this.scheduleReconnect();
    }
  }

  /**
   * Reconnects now if a reconnect is waiting out its backoff: the database is known to be back
   * (the breaker closed), so notifications resume without waiting up to the longest backoff.
   */
  retryNow(): void {
    if (this.stopped || this.retry === undefined) return;
    clearTimeout(this.retry);
    this.failures = 0;
    void this.reconnect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.heartbeat);
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
    }
  }
}

/** PGlite delivers NOTIFY in process; its one backend never disconnects. */
export class PGliteListener implements Listener {
  private unlisten: Array<() => Promise<void>> = [];

  constructor(private readonly pglite: PGlite) {}

  async start(channels: readonly string[], handlers: ListenHandlers): Promise<void> {
    for (const channel of channels) {
      this.unlisten.push(
        await this.pglite.listen(channel, (payload) => handlers.notify(channel, payload)),
      );
    }
  }

  async stop(): Promise<void> {
    const unlisten = this.unlisten;
    this.unlisten = [];
    await Promise.all(unlisten.map((fn) => fn().catch(() => {})));
  }
}

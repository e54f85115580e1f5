import { randomUUID } from 'node:crypto';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Logger } from 'pino';
import { coerceError } from '../../../errors.js';
import { Shutdown } from '../core/shutdown.js';
import { SessionTransport } from './transport.js';

/** One MCP session: its transport and server, the principal that opened it, and its use. */
export class Session {
  /** Requests in flight, other than the standalone GET stream. */
  private busy = 0;
  private lastUsed = Date.now();

  constructor(
    readonly owner: string,
    readonly transport: SessionTransport,
    readonly server: Server,
  ) {}

  get id(): string | undefined {
    return this.transport.sessionId;
  }

  /** Marks a request as begun; call the returned function when its response has ended. */
  use(counts: boolean): () => void {
    this.lastUsed = Date.now();
    if (!counts) return () => {};
    this.busy++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.busy--;
      this.lastUsed = Date.now();
    };
  }

  /** Epoch ms at which this session becomes idle-closable; Infinity while a request is in flight. */
  idleAt(idleMs: number): number {
    return this.busy > 0 ? Number.POSITIVE_INFINITY : this.lastUsed + idleMs;
  }
}

export interface SessionOptions {
  idleMs: number;
  max: number;
  log: Logger;
  /** A fresh MCP server for a new session. */
  createServer(shutdown: Shutdown): Server;
}

/**
 * The sessions this process holds (they live where they were opened: see docs/mcp.md on
 * affinity). A session with no request for `idleMs` is closed — an open GET stream alone does
 * not count as use, a waiting `tasks/result` does — and at most `max` are held at once.
 */
export class Sessions {
  private readonly open = new Map<string, Session>();
  private readonly shutdown = new Shutdown();
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly options: SessionOptions) {
    const every = Math.max(25, Math.min(options.idleMs / 2, 30_000));
    this.sweeper = setInterval(() => this.sweep(), every).unref();
  }

  get size(): number {
    return this.open.size;
  }

  get full(): boolean {
    return this.open.size >= this.options.max;
  }

  /** Milliseconds until the first held session may be closed for idleness. */
  retryAfterMs(): number {
    let soonest = Number.POSITIVE_INFINITY;
    for (const session of this.open.values()) {
      soonest = Math.min(soonest, session.idleAt(this.options.idleMs));
    }
    return Number.isFinite(soonest) ? soonest - Date.now() : this.options.idleMs;
  }

  /** `id`'s session if `owner` opened it: another principal's reads like an unknown one. */
  find(id: string, owner: string): Session | undefined {
    const session = this.open.get(id);
    return session?.owner === owner ? session : undefined;
  }

  /** A session for `owner`, held once its `initialize` has been answered a session id. */
  async create(owner: string): Promise<Session> {
    if (this.closed) throw new Error('MCP sessions are closed');
    const { log } = this.options;
    let session: Session | undefined;
    const transport = new SessionTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => {
        if (session) this.open.set(id, session);
        log.info({ session: id, principal: owner }, 'MCP session opened');
      },
    });
    transport.onclose = () => {
      const id = transport.sessionId;
      if (id && this.open.get(id) === session) {
        this.open.delete(id);
        log.info({ session: id, principal: owner }, 'MCP session closed');
      }
    };
    const server = this.options.createServer(this.shutdown);
    session = new Session(owner, transport, server);
    await server.connect(transport);
    return session;
  }

  private sweep(): void {
    const now = Date.now();
    for (const session of this.open.values()) {
      if (session.idleAt(this.options.idleMs) <= now) {
        this.options.log.info({ session: session.id }, 'MCP session idle: closing it');
        this.end(session);
      }
    }
  }

  private end(session: Session): Promise<void> {
    return session.server.close().catch((err: unknown) => {
      this.options.log.warn(
        { err: coerceError(err), session: session.id },
        'closing an MCP session failed',
      );
    });
  }

  /** Answers every waiting request, closes every session and stops the idle sweep. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    await this.shutdown.begin();
    await Promise.all([...this.open.values()].map((session) => this.end(session)));
    this.open.clear();
  }
}

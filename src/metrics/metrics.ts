import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from '../db/types.js';
import { coerceError } from '../errors.js';
import type { GraphQLObserver } from '../faces/graphql/metrics-plugin.js';
import { sendProblem } from '../http/problem.js';
import { sendMethodNotAllowed } from '../http/refusal.js';
import { routeOf } from '../http/route-name.js';
import type { RouteHandler } from '../http/server.js';
import type { RunOutcome, TaskObserver, WebhookOutcome } from '../tasks/observer.js';
import { heldNow, queueNow, tasksByKindAndStatus } from '../tasks/sql/stats.js';

/** Tasks by kind and status, and the queue, are read from the database at most this often. */
const DB_REFRESH_MS = 5_000;
/** Seconds: from a fast cache hit to a slow export. */
const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const RUN_BUCKETS = [0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600];

/** Node's own series are per process, not per app: one registry for the process. */
let nodeRegistry: Registry | undefined;

export interface MetricsOptions {
  db: Kysely<Database>;
  log: Logger;
  /** When set, `/metrics` needs `Authorization: Bearer <token>`. */
  token: string | undefined;
}

/**
 * The process's Prometheus series (DESIGN §13), served on `GET /metrics` in every role. The
 * domain reports through TaskObserver, GraphQL through its plugin, HTTP through `request`;
 * what the database knows (tasks by status, the queue) is read when scraped, cached 5 s.
 */
export class Metrics implements TaskObserver, GraphQLObserver {
  readonly registry = new Registry();
  private readonly httpRequests: Histogram<'method' | 'route' | 'status'>;
  private readonly graphqlOperations: Histogram<'operation' | 'type' | 'result'>;
  private readonly subscriptions: Gauge;
  private readonly claims: Histogram;
  private readonly queueWait: Histogram<'kind'>;
  private readonly runs: Histogram<'kind' | 'outcome'>;
  private readonly leasesLost: Counter;
  private readonly listenReconnects: Counter;
  private readonly purgeBatches: Counter;
  private readonly purgedRows: Counter;
  private readonly webhookDeliveries: Counter<'outcome'>;
  private readonly database: {
    byStatus: Gauge<'kind' | 'status'>;
    depth: Gauge;
    oldest: Gauge;
    held: Gauge<'reason'>;
  };
  private sockets: () => number = () => 0;
  private snapshot: Promise<void> | undefined;
  private snapshotAt = 0;

  constructor(private readonly options: MetricsOptions) {
    const registers = [this.registry];
    this.httpRequests = new Histogram({
      name: 'taskhandle_http_request_duration_seconds',
      help: 'HTTP requests by method, route and status, and how long they took',
      labelNames: ['method', 'route', 'status'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.graphqlOperations = new Histogram({
      name: 'taskhandle_graphql_operation_duration_seconds',
      help: 'GraphQL operations executed, by operation name, type and result (ok or error)',
      labelNames: ['operation', 'type', 'result'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.subscriptions = new Gauge({
      name: 'taskhandle_graphql_subscriptions',
      help: 'GraphQL subscriptions open (WebSocket and SSE)',
      registers,
    });
    const sockets = () => this.sockets();
    new Gauge({
      name: 'taskhandle_websockets',
      help: 'WebSocket connections open',
      registers,
      collect() {
        this.set(sockets());
      },
    });
    this.claims = new Histogram({
      name: 'taskhandle_claim_duration_seconds',
      help: 'How long one claim statement took (it claims up to the free slots)',
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.queueWait = new Histogram({
      name: 'taskhandle_task_queue_wait_seconds',
      help: 'From a task being started to its first claim, by kind',
      labelNames: ['kind'],
      buckets: RUN_BUCKETS,
      registers,
    });
    this.runs = new Histogram({
      name: 'taskhandle_task_run_duration_seconds',
      help: "A handler's run in this process, from claim to end, by kind and outcome",
      labelNames: ['kind', 'outcome'],
      buckets: RUN_BUCKETS,
      registers,
    });
    this.leasesLost = new Counter({
      name: 'taskhandle_leases_lost_total',
      help: 'Leases this process lost while running the task (another worker may run it)',
      registers,
    });
    this.listenReconnects = new Counter({
      name: 'taskhandle_listen_reconnects_total',
      help: 'Times the LISTEN connection was lost and restored',
      registers,
    });
    this.purgeBatches = new Counter({
      name: 'taskhandle_purge_batches_total',
      help: 'Purge DELETE batches run',
      registers,
    });
    this.purgedRows = new Counter({
      name: 'taskhandle_purged_tasks_total',
      help: 'Expired tasks deleted by the purge',
      registers,
    });
    this.webhookDeliveries = new Counter({
      name: 'taskhandle_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome (delivered, retry, failed: given up, gone: 410)',
      labelNames: ['outcome'],
      registers,
    });
    const refresh = () => this.refresh();
    const byStatus = new Gauge({
      name: 'taskhandle_tasks',
      help: 'Unexpired tasks by kind and status (read from the database, at most every 5 s)',
      labelNames: ['kind', 'status'],
      registers,
      async collect() {
        await refresh();
      },
    });
    const depth = new Gauge({
      name: 'taskhandle_queue_depth',
      help: 'Tasks waiting for a worker: working, unleased (or lease lapsed), unexpired',
      registers,
      async collect() {
        await refresh();
      },
    });
    const oldest = new Gauge({
      name: 'taskhandle_queue_oldest_age_seconds',
      help: 'Age of the oldest task waiting for a worker (0 when none waits)',
      registers,
      async collect() {
        await refresh();
      },
    });
    const held = new Gauge({
      name: 'taskhandle_tasks_held',
      help: 'Tasks that wait to be claimed, by reason: concurrency (its key at its limit), rate_limit (its key started its limit in the period), time (its runAt not come)',
      labelNames: ['reason'],
      registers,
      async collect() {
        await refresh();
      },
    });
    this.database = { byStatus, depth, oldest, held };
    nodeRegistry ??= (() => {
      const registry = new Registry();
      collectDefaultMetrics({ register: registry });
      return registry;
    })();
  }

  /** Where the open WebSockets are counted. */
  countSockets(count: () => number): void {
    this.sockets = count;
  }

  /** Times an HTTP request; call when it arrives. */
  request(req: IncomingMessage, res: ServerResponse): void {
    const end = this.httpRequests.startTimer();
    res.once('close', () =>
      end({
        method: req.method ?? 'GET',
        route: routeOf(req.url, res.statusCode),
        status: String(res.statusCode),
      }),
    );
  }

  /** `GET /metrics`. */
  readonly handler: RouteHandler = async (req, res) => {
    if ((req.url ?? '/').split('?')[0] !== '/metrics') return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendMethodNotAllowed(res, 'GET, HEAD', 'Use GET.');
      return true;
    }
    if (this.options.token !== undefined && !this.authorized(req.headers.authorization)) {
      const detail = 'Send "Authorization: Bearer <METRICS_TOKEN>".';
      sendProblem(res, 401, 'UNAUTHENTICATED', detail, { 'www-authenticate': 'Bearer' });
      return true;
    }
    const merged = Registry.merge([this.registry, nodeRegistry!]);
    const text = await merged.metrics();
    res.writeHead(200, {
      'content-type': merged.contentType,
      'content-length': Buffer.byteLength(text),
      'cache-control': 'no-store',
    });
    res.end(req.method === 'HEAD' ? undefined : text);
    return true;
  };

  private authorized(header: string | undefined): boolean {
    const sent = Buffer.from(/^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1] ?? '');
    const expected = Buffer.from(this.options.token!);
    return sent.length === expected.length && timingSafeEqual(sent, expected);
  }

  /** Reads tasks by kind and status, the queue and the held, unless a read is under 5 s old. */
  private refresh(): Promise<void> {
    if (this.snapshot && Date.now() - this.snapshotAt < DB_REFRESH_MS) return this.snapshot;
    this.snapshotAt = Date.now();
    this.snapshot = this.read().catch((err: unknown) => {
      // The series keep their last values; /readyz says whether the database is reachable.
      this.options.log.warn({ err: coerceError(err) }, 'metrics: could not read tasks');
    });
    return this.snapshot;
  }

  private async read(): Promise<void> {
    const { db } = this.options;
    const counts = await tasksByKindAndStatus(db);
    const queue = await queueNow(db);
    const waiting = await heldNow(db);
    const { byStatus, depth, oldest, held } = this.database;
    byStatus.reset();
    for (const row of counts) byStatus.set({ kind: row.kind, status: row.status }, row.n);
    depth.set(queue.depth);
    oldest.set(Math.max(0, queue.oldestSeconds ?? 0));
    for (const [reason, n] of Object.entries(waiting)) held.set({ reason }, n);
  }

  // TaskObserver

  claimed(rows: readonly { kind: string; created_at: Date; attempt: number }[], seconds: number) {
    this.claims.observe(seconds);
    const now = Date.now();
    for (const row of rows)
      if (row.attempt === 1)
        this.queueWait.observe({ kind: row.kind }, (now - row.created_at.getTime()) / 1000);
  }

  ran(kind: string, outcome: RunOutcome, seconds: number) {
    this.runs.observe({ kind, outcome }, seconds);
  }

  leaseLost() {
    this.leasesLost.inc();
  }

  listenReconnected() {
    this.listenReconnects.inc();
  }

  purgeBatch(rows: number) {
    this.purgeBatches.inc();
    this.purgedRows.inc(rows);
  }

  webhookDelivery(outcome: WebhookOutcome) {
    this.webhookDeliveries.inc({ outcome });
  }

  // GraphQLObserver

  operation(operation: string, type: string, ok: boolean, seconds: number) {
    this.graphqlOperations.observe({ operation, type, result: ok ? 'ok' : 'error' }, seconds);
  }

  subscriptionOpened() {
    this.subscriptions.inc();
  }

  subscriptionClosed() {
    this.subscriptions.dec();
  }
}

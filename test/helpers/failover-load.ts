import { EventEmitter, once } from 'node:events';
import type { FailoverRig } from './failover.js';

/**
 * Steady load on a failover rig's processes, every answer kept and judged as DESIGN §12
 * allows during a database fault: served, or SERVICE_UNAVAILABLE / 503 with Retry-After.
 */

/** How one request was answered. `other` is anything §12 does not allow for a fault. */
export interface Answer {
  sentAt: number;
  at: number;
  on: 'api' | 'all';
  face: 'graphql' | 'rest' | 'a2a';
  outcome: 'ok' | 'unavailable' | 'other';
  /** The task a start acknowledged. */
  id?: string;
  detail?: string;
}

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id } }`;
const LIST = 'query { tasks(first: 5) { edges { node { id status } } } }';
/** What the load asks of which process, in turn. */
const SERVED = [
  ['api', 'graphql'],
  ['all', 'rest'],
  ['all', 'graphql'],
  ['api', 'a2a'],
] as const;
/** Each client's pace: a steady load, not a busy loop on a refusal that costs nothing. */
const PACE_MS = 40;

/**
 * `clients` loops, each sending in turn: startTask over GraphQL to api, POST /v1/jobs to all,
 * a GraphQL list to all and A2A ListTasks to api. Every answer is kept.
 */
export class Load {
  readonly answers: Answer[] = [];
  private readonly changes = new EventEmitter();
  private running = true;
  private readonly loops: Promise<void>[];

  constructor(
    private readonly rig: FailoverRig,
    clients = 4,
  ) {
    this.changes.setMaxListeners(0);
    this.loops = Array.from({ length: clients }, (_, i) => this.loop(i));
  }

  /** Tasks whose start was acknowledged. */
  get acknowledged(): string[] {
    return this.answers.flatMap((a) => (a.id ? [a.id] : []));
  }

  /** Resolves once `condition()` holds, checked after every answer; rejects after `timeoutMs`. */
  async until(condition: () => boolean, timeoutMs = 60_000): Promise<void> {
    const signal = AbortSignal.timeout(timeoutMs);
    while (!condition())
      await once(this.changes, 'answer', { signal }).catch((err: unknown) => {
        throw new Error(`the load did not see what was awaited within ${timeoutMs} ms`, {
          cause: err,
        });
      });
  }

  /**
   * True once every process and face answered a request sent at or after `since` as it
   * would without a fault; the time that took, from `since`.
   */
  recoveredAfter(since: number): number | undefined {
    let latest = since;
    for (const [on, face] of SERVED) {
      const first = this.answers.find(
        (a) => a.on === on && a.face === face && a.sentAt >= since && a.outcome === 'ok',
      );
      if (!first) return undefined;
      latest = Math.max(latest, first.at);
    }
    return latest - since;
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  private async loop(client: number): Promise<void> {
    for (let n = client; this.running; n++) {
      const sentAt = Date.now();
      const answer = await this.send(n % 4).catch(
        (err: Error): Omit<Answer, 'sentAt' | 'at'> => ({
          on: 'api',
          face: 'graphql',
          outcome: 'other',
          detail: String(err),
        }),
      );
      this.answers.push({ ...answer, sentAt, at: Date.now() });
      this.changes.emit('answer');
      await new Promise((resolve) => setTimeout(resolve, PACE_MS));
    }
  }

  private async send(which: number): Promise<Omit<Answer, 'sentAt' | 'at'>> {
    const { api, all } = this.rig.servers;
    const authorization = `Bearer ${this.rig.token}`;
    const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization, ...headers },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    const input = { kind: 'sleep', input: { ms: 300, steps: 3 } };
    switch (which) {
      case 0:
        return graphqlAnswer(
          'api',
          await post(`${api.url}/graphql`, { query: START, variables: { input } }),
        );
      case 1:
        return httpAnswer('all', 'rest', await post(`${all.url}/v1/jobs`, input));
      case 2:
        return graphqlAnswer('all', await post(`${all.url}/graphql`, { query: LIST }));
      default:
        return httpAnswer(
          'api',
          'a2a',
          await post(
            `${api.url}/a2a`,
            { jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} },
            { 'a2a-version': '1.0' },
          ),
        );
    }
  }
}

async function graphqlAnswer(on: 'api' | 'all', res: Response) {
  const body = (await res.json()) as any;
  const face = 'graphql' as const;
  if (res.status === 200 && !body.errors)
    return { on, face, outcome: 'ok' as const, id: body.data.startTask?.id };
  const codes = (body.errors ?? []).map((e: any) => e.extensions?.code);
  if (codes.length > 0 && codes.every((c: string) => c === 'SERVICE_UNAVAILABLE'))
    return { on, face, outcome: 'unavailable' as const };
  return { on, face, outcome: 'other' as const, detail: `${res.status} ${JSON.stringify(body)}` };
}

async function httpAnswer(on: 'api' | 'all', face: 'rest' | 'a2a', res: Response) {
  const body = (await res.json()) as any;
  if (res.status === 200 || res.status === 202)
    return body.error
      ? { on, face, outcome: 'other' as const, detail: JSON.stringify(body) }
      : { on, face, outcome: 'ok' as const, id: face === 'rest' ? body.taskId : undefined };
  if (
    res.status === 503 &&
    body.code === 'SERVICE_UNAVAILABLE' &&
    Number(res.headers.get('retry-after')) > 0
  )
    return { on, face, outcome: 'unavailable' as const };
  return { on, face, outcome: 'other' as const, detail: `${res.status} ${JSON.stringify(body)}` };
}

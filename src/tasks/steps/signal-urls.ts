import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Executor } from '../../db/types.js';
import type { Lease } from '../sql/leases.js';

/** The token of a signal URL: 256 random bits, URL-safe. */
export function mintSignalToken(): string {
  return randomBytes(32).toString('base64url');
}

/** How a token is kept and looked up: its sha256, never the token itself. */
export function tokenHash(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** The path of the signal URL of `token`, under PUBLIC_URL. */
export const signalPath = (token: string) => `/v1/signals/${token}`;

/**
 * The signal URLs of one run (`ctx.signalUrl`, DESIGN §16). The first call for a name mints a
 * token, stores its hash bound to (task, name) and journals the URL on the wait's entry
 * (owner only, like a step's result), so every later run returns the same URL. `signalUrl` is
 * synchronous, its write is not: every step, child start and suspension of the run waits for
 * the writes begun before it (`written`), so a URL handed out inside a step works before the
 * step's side effect can reach anyone.
 */
export class SignalUrls {
  private readonly minted = new Map<string, string>();
  private pending: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Executor,
    private readonly taskId: string,
    private readonly lease: Lease,
    private readonly publicUrl: string,
  ) {}

  /**
   * @param journalled the URL an earlier run minted, if any
   * @param position the wait's place in the journal, should this create its entry
   */
  url(name: string, journalled: string | null, position: number): string {
    const known = journalled ?? this.minted.get(name);
    if (known) return known;
    const token = mintSignalToken();
    const url = `${this.publicUrl}${signalPath(token)}`;
    this.minted.set(name, url);
    const write = this.write(name, token, url, position);
    // Chained, each failure kept: a URL that was not stored fails what waits for it.
    this.pending = Promise.all([this.pending, write]).then(() => undefined);
    // Handled here (no unhandled rejection); whoever awaits `written` still gets the failure.
    this.pending.catch(() => {});
    return url;
  }

  /** Resolves once every URL minted so far is stored. @throws what a write failed with */
  written(): Promise<void> {
    return this.pending;
  }

  private async write(name: string, token: string, url: string, position: number): Promise<void> {
    const result = await sql<{ ok: number }>`
      with t as (
        update tasks set journaled = true
        where id = ${this.taskId}::uuid and worker_id = ${this.lease.workerId}
          and attempt = ${this.lease.attempt}::int and status = 'working' and expires_at > now()
        returning id
      ), k as (
        insert into task_signal_tokens (token_hash, task_id, name)
        select ${tokenHash(token)}, t.id, ${name} from t
      ), s as (
        insert into task_steps (task_id, name, position, state, signal_url)
        select t.id, ${name}, ${position}::int, 'WAITING_SIGNAL', ${url} from t
        on conflict (task_id, name) do update set signal_url = excluded.signal_url
        where task_steps.signal_url is null
      )
      select 1 as ok from t`.execute(this.db);
    if (result.rows.length === 0)
      throw new Error('The task is no longer held by this run: the signal URL was not stored.');
  }
}

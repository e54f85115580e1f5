/**
 * A record of every first claim of a task (attempt 0 → 1) at its transaction's instant — the
 * instant a rate limit counts it by (DESIGN §17) — written by a trigger into
 * `test_first_claims`: what started when, seen from outside the claim, on any backend and
 * across processes sharing a database.
 */
export const FIRST_CLAIMS_DDL = [
  'create table test_first_claims (task_id uuid, key text, at timestamptz)',
  `create function test_log_first_claim() returns trigger language plpgsql as $$
    begin
      insert into test_first_claims values (new.id, coalesce(new.rate_limit_key, new.owner), now());
      return null;
    end $$`,
  `create trigger test_first_claim after update of attempt on tasks for each row
    when (old.attempt = 0 and new.attempt = 1) execute function test_log_first_claim()`,
];

/** The first claims of a key's tasks, oldest first; `$1` is the key. */
export const FIRST_CLAIMS_OF =
  'select task_id, at from test_first_claims where key = $1 order by at';

/** The most instants of `ats` (ms, ascending) that fall in one window (t - periodMs, t]. */
export function mostInAnyWindow(ats: readonly number[], periodMs: number): number {
  let most = 0;
  for (let end = 0, start = 0; end < ats.length; end++) {
    while (ats[start]! <= ats[end]! - periodMs) start++;
    most = Math.max(most, end - start + 1);
  }
  return most;
}

-- Managing the work (DESIGN §14): retries with backoff, a time to run, priority, and a limit
-- of running tasks per concurrency key.
--
-- `hold` says why a WORKING task without a lease is not a claim candidate now: 'time' (its
-- run_at is in the future: a delayed start or a backoff) or 'key' (its key was at its limit
-- when a claim met it). Each waiting group has its own partial index, so the claim's scan of
-- ready work (tasks_ready) never passes over delayed or held rows, however many there are.
alter table tasks
  add column run_at timestamptz,
  add column priority smallint not null default 0 check (priority between -100 and 100),
  add column concurrency_key text,
  add column concurrency_limit integer check (concurrency_limit between 1 and 1000),
  add column retry_initial_delay_ms integer not null default 1000,
  add column retry_factor double precision not null default 2,
  add column retry_max_delay_ms integer not null default 60000,
  add column last_error jsonb,
  add column hold text check (hold in ('time', 'key'));

update tasks set run_at = created_at;
alter table tasks alter column run_at set not null, alter column run_at set default now();

-- Claimable work, highest priority first, then earliest due: WORKING rows that wait for
-- nothing (running ones included: a lapsed lease is claimable again).
drop index tasks_claimable;
create index tasks_ready on tasks (priority desc, run_at) where status = 'working' and hold is null;
-- Delayed starts and backoffs, earliest first: the claim moves the due ones to tasks_ready,
-- and the first entry is the "next due" time a runner sets its timer by.
create index tasks_scheduled on tasks (run_at) where status = 'working' and hold = 'time';
-- Tasks held by their key, per key in claim order: a freed slot lets the first of them go.
create index tasks_held on tasks (kind, (coalesce(concurrency_key, owner)), priority desc, run_at)
  where status = 'working' and hold = 'key';
-- The tasks of a key that count against its limit: ready or running, held to a limit.
create index tasks_key_active on tasks (kind, (coalesce(concurrency_key, owner)))
  where status = 'working' and hold is null and concurrency_limit is not null;

-- The keys that have held tasks: the claim looks at each (not at each held task) to see
-- whether a slot is free again.
create table task_key_holds (
  kind text not null,
  key text not null,
  primary key (kind, key)
);

-- The worker's claim (DESIGN §4, §14) as one function: one round trip, one statement for the
-- caller. Per-key limits are enforced under a transaction-scoped advisory lock per (kind, key):
-- whoever counts a key's running tasks and claims one holds the lock until its commit, so the
-- next counter sees that claim. A key whose lock another claim holds is skipped for this
-- claim (that claim is deciding for it), which also means no claim ever waits on another.
create function taskhandle_claim_tasks(
  p_worker text,
  p_kinds text[],
  p_limit integer,
  p_lease_ms integer
) returns setof tasks
language plpgsql
as $$
declare
  v_hold record;
  v_cand record;
  v_running integer;
  v_free integer;
  v_claimed integer := 0;
  v_plain uuid[];
  v_skipped uuid[] := '{}';
  v_round integer := 0;
  v_more boolean;
begin
  perform set_config('synchronous_commit', 'off', true);
  if p_limit <= 0 then
    return;
  end if;

  -- Delayed tasks that are due join the ready ones.
  update tasks t set hold = null
  from (
    select id from tasks
    where status = 'working' and hold = 'time' and run_at <= now()
    order by run_at
    limit 1000
    for update skip locked
  ) d
  where t.id = d.id;

  -- Keys with held tasks: as many of them go back to ready as their key has free slots.
  for v_hold in
    select h.kind, h.key from task_key_holds h
    where h.kind = any(p_kinds)
    for update skip locked
  loop
    select count(*) into v_running from tasks
    where status = 'working' and hold is null and concurrency_limit is not null
      and kind = v_hold.kind and coalesce(concurrency_key, owner) = v_hold.key
      and worker_id is not null and lease_expires_at > now();
    select concurrency_limit - v_running into v_free from tasks
    where status = 'working' and hold = 'key'
      and kind = v_hold.kind and coalesce(concurrency_key, owner) = v_hold.key
    order by priority desc, run_at
    limit 1;
    if v_free is null then
      delete from task_key_holds h where h.kind = v_hold.kind and h.key = v_hold.key;
    elsif v_free > 0 then
      update tasks t set hold = null
      from (
        select id from tasks
        where status = 'working' and hold = 'key'
          and kind = v_hold.kind and coalesce(concurrency_key, owner) = v_hold.key
          and concurrency_limit > v_running
        order by priority desc, run_at
        limit v_free
        for update skip locked
      ) f
      where t.id = f.id;
    end if;
  end loop;

  loop
    v_round := v_round + 1;
    v_plain := '{}';
    v_more := false;
    for v_cand in
      select id, kind, coalesce(concurrency_key, owner) as key, concurrency_limit from tasks
      where status = 'working' and hold is null and run_at <= now() and expires_at > now()
        and kind = any(p_kinds) and (lease_expires_at is null or lease_expires_at < now())
        and attempt < max_attempts and id <> all(v_skipped)
      order by priority desc, run_at
      limit p_limit - v_claimed
      for update skip locked
    loop
      if v_cand.concurrency_limit is null then
        v_plain := v_plain || v_cand.id;
        v_claimed := v_claimed + 1;
        continue;
      end if;
      if not pg_try_advisory_xact_lock(hashtextextended(v_cand.kind || E'\x1f' || v_cand.key, 0)) then
        v_skipped := v_skipped || v_cand.id;
        continue;
      end if;
      select count(*) into v_running from tasks
      where status = 'working' and hold is null and concurrency_limit is not null
        and kind = v_cand.kind and coalesce(concurrency_key, owner) = v_cand.key
        and worker_id is not null and lease_expires_at > now();
      if v_running < v_cand.concurrency_limit then
        return query
          update tasks t
          set worker_id = p_worker, attempt = t.attempt + 1,
              lease_expires_at = now() + p_lease_ms * interval '1 millisecond'
          where t.id = v_cand.id
          returning t.*;
        v_claimed := v_claimed + 1;
      else
        -- The key is full: this task, and every ready one of the key held to no more, wait
        -- out of the ready index until a claim finds a slot free.
        update tasks t set hold = 'key'
        from (
          select id from tasks
          where status = 'working' and hold is null and kind = v_cand.kind
            and coalesce(concurrency_key, owner) = v_cand.key
            and concurrency_limit <= v_running
            and (lease_expires_at is null or lease_expires_at < now())
          for update skip locked
        ) h
        where t.id = h.id;
        -- An upsert, not "do nothing": it locks the key's row, so a claim that is about to
        -- drop the row (having seen no held task before these commit) waits, or skips it.
        insert into task_key_holds (kind, key) values (v_cand.kind, v_cand.key)
        on conflict (kind, key) do update set kind = excluded.kind;
        v_more := true;
      end if;
    end loop;
    if cardinality(v_plain) > 0 then
      return query
        update tasks t
        set worker_id = p_worker, attempt = t.attempt + 1,
            lease_expires_at = now() + p_lease_ms * interval '1 millisecond'
        where t.id = any(v_plain)
        returning t.*;
    end if;
    -- Held candidates made room for others: look again, a few times at most.
    exit when not v_more or v_claimed >= p_limit or v_round >= 4;
  end loop;
end
$$;

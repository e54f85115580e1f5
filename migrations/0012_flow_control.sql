-- Flow control and fairness (DESIGN §17): a rate limit per key, and claims that take owners in
-- turn within a priority.
--
-- A rate-limited task is counted once, when it is first claimed (its first attempt starts):
-- the claim records that start in task_rate_starts and counts a key's starts of the last
-- period there, under a transaction-scoped advisory lock per (kind, key), as per-key
-- concurrency does (0004). A first start that would exceed the limit is held ('rate'), with
-- every ready first start of its key held to no more, out of every index the claim walks;
-- task_rate_holds keeps, per key, the instant a start becomes possible again, which the claim
-- looks at (only the keys due) and which the runners set their one timer by.

alter table tasks
  -- As given at start (null: the owner is the key).
  add column rate_limit_key text,
  -- The limit this task's first start is held to (its own, else its kind's), if any.
  add column rate_limit integer check (rate_limit between 1 and 1000),
  add column rate_period_ms integer check (rate_period_ms between 1 and 86400000),
  add constraint tasks_rate_limit_whole check ((rate_limit is null) = (rate_period_ms is null));

alter table tasks drop constraint tasks_hold_check;
alter table tasks add constraint tasks_hold_check check (hold in ('time', 'key', 'wait', 'rate'));

-- Claimable work by owner, for the fair claim: the owners of a priority in name order (one
-- probe each), and an owner's oldest due tasks.
create index tasks_ready_owner on tasks (priority desc, owner, run_at)
  where status = 'working' and hold is null;
-- Tasks held by their rate limit, per key in claim order: a due key lets the first go.
create index tasks_rate_held on tasks (kind, (coalesce(rate_limit_key, owner)), priority desc, run_at)
  where status = 'working' and hold = 'rate';
-- A key's ready rate-limited tasks: what a full window holds at once.
create index tasks_rate_ready on tasks (kind, (coalesce(rate_limit_key, owner)))
  where status = 'working' and hold is null and rate_limit is not null;

-- The first starts of rate-limited tasks, kept for their task's period (`forget_at`): the claim
-- forgets a key's old ones when it records a new one, the purge those of keys no longer used.
create table task_rate_starts (
  kind text not null,
  key text not null,
  started_at timestamptz not null,
  task_id uuid not null,
  forget_at timestamptz not null,
  primary key (kind, key, started_at, task_id)
);
create index task_rate_starts_forget on task_rate_starts (forget_at);

-- The keys with tasks held by their rate limit, and when the next of them may start.
create table task_rate_holds (
  kind text not null,
  key text not null,
  next_at timestamptz not null,
  primary key (kind, key)
);
create index task_rate_holds_next on task_rate_holds (next_at);

-- An instant as JavaScript's toISOString writes it, for status messages.
create function taskhandle_iso(p_at timestamptz) returns text
language sql immutable as $$
  select to_char(p_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- A key's window: its `p_limit` latest starts within the last `p_period_ms`, oldest first. The
-- key is full when it holds `p_limit`; a start is possible again when the first ages out.
create function taskhandle_rate_window(p_kind text, p_key text, p_limit integer, p_period_ms integer)
returns timestamptz[]
language sql stable as $$
  select coalesce(array_agg(s.started_at order by s.started_at), '{}')
  from (
    select started_at from task_rate_starts
    where kind = p_kind and key = p_key
      and started_at > now() - p_period_ms * interval '1 millisecond'
    order by started_at desc
    limit p_limit
  ) s
$$;

-- Holds the ready first starts of a full key (all of them: those of its tasks held to no more
-- than `p_limit` in at least `p_period_ms`), except `p_keep` (this claim's own), each with a
-- status message saying when it may start at the earliest: the q-th task in line starts no
-- sooner than the window's ((q-1) mod limit + 1)-th start ages out, plus a period for every
-- full limit ahead of it. The line counts at most 1 000 tasks held before, so the figure is a
-- lower bound past them, and holding costs the same behind 1 000 or 100 000 held tasks.
-- Records when the key may start again. Every held task is announced (its message changed).
create function taskhandle_rate_hold(
  p_kind text, p_key text, p_limit integer, p_period_ms integer, p_window timestamptz[],
  p_keep uuid[]
) returns void
language plpgsql as $$
declare
  v_ids uuid[];
  v_ahead integer;
  v_period interval := p_period_ms * interval '1 millisecond';
begin
  select coalesce(array_agg(h.id order by h.priority desc, h.run_at), '{}') into v_ids
  from (
    select id, priority, run_at from tasks
    where status = 'working' and hold is null and kind = p_kind
      and coalesce(rate_limit_key, owner) = p_key and rate_limit <= p_limit
      and rate_period_ms >= p_period_ms and attempt = 0
      and (lease_expires_at is null or lease_expires_at < now()) and id <> all(p_keep)
    for update skip locked
  ) h;
  select count(*) into v_ahead from (
    select 1 from tasks
    where status = 'working' and hold = 'rate' and kind = p_kind
      and coalesce(rate_limit_key, owner) = p_key
    limit 1000
  ) a;
  with u as (
    update tasks t set hold = 'rate', version = t.version + 1, last_updated_at = now(),
      status_message = 'Rate limited: next start at ' || taskhandle_iso(
        p_window[(v_ahead + o.q - 1) % p_limit + 1]
          + ((v_ahead + o.q - 1) / p_limit + 1) * v_period)
        || ' (' || p_limit || ' per ' || p_period_ms || ' ms).'
    from unnest(v_ids) with ordinality o(id, q)
    where t.id = o.id
    returning t.id, t.version
  )
  select count(pg_notify('taskhandle_task', u.id::text || ':' || u.version::text)) into v_ahead
  from u;
  insert into task_rate_holds (kind, key, next_at) values (p_kind, p_key, p_window[1] + v_period)
  on conflict (kind, key) do update set next_at = excluded.next_at;
end
$$;

-- Lets the first rate-held tasks of each key whose next start is due go back to ready work, as
-- many as the key's window has room for, each announced, and moves the key's instant on to when
-- its window, once they started, frees again (or forgets the key when none is held any more).
-- At most 100 keys a claim, those due first; a key another claim is releasing is skipped.
create function taskhandle_rate_release(p_kinds text[]) returns void
language plpgsql as $$
declare
  v_hold record;
  v_first record;
  v_window timestamptz[];
  v_free integer;
  v_n integer;
begin
  for v_hold in
    select h.kind, h.key from task_rate_holds h
    where h.kind = any(p_kinds) and h.next_at <= now()
    order by h.next_at
    limit 100
    for update skip locked
  loop
    select rate_limit, rate_period_ms into v_first from tasks
    where status = 'working' and hold = 'rate' and kind = v_hold.kind
      and coalesce(rate_limit_key, owner) = v_hold.key
    order by priority desc, run_at
    limit 1;
    if not found then
      delete from task_rate_holds h where h.kind = v_hold.kind and h.key = v_hold.key;
      continue;
    end if;
    v_window := taskhandle_rate_window(v_hold.kind, v_hold.key, v_first.rate_limit,
      v_first.rate_period_ms);
    v_free := v_first.rate_limit - cardinality(v_window);
    v_n := 0;
    if v_free > 0 then
      with u as (
        update tasks t set hold = null, status_message = null, version = t.version + 1,
          last_updated_at = now()
        from (
          select id from tasks
          where status = 'working' and hold = 'rate' and kind = v_hold.kind
            and coalesce(rate_limit_key, owner) = v_hold.key
          order by priority desc, run_at
          limit v_free
          for update skip locked
        ) f
        where t.id = f.id
        returning t.id, t.version
      )
      select count(pg_notify('taskhandle_task', u.id::text || ':' || u.version::text)) into v_n
      from u;
      if v_n > 0 then
        perform pg_notify('taskhandle_ready', v_hold.kind);
      end if;
    end if;
    if not exists (
      select 1 from tasks
      where status = 'working' and hold = 'rate' and kind = v_hold.kind
        and coalesce(rate_limit_key, owner) = v_hold.key
    ) then
      delete from task_rate_holds h where h.kind = v_hold.kind and h.key = v_hold.key;
    else
      -- Once the released tasks started, the window is full again: it frees when its oldest
      -- start ages out (the window's first, or one of theirs when it was empty). A held task
      -- someone else had locked (a webhook being attached) is let go by the next claim.
      update task_rate_holds h
      set next_at = case when v_n < v_free then now() + interval '100 milliseconds'
        else coalesce(v_window[1], now()) + v_first.rate_period_ms * interval '1 millisecond' end
      where h.kind = v_hold.kind and h.key = v_hold.key;
    end if;
  end loop;
end
$$;

-- The fair claim's walk over owners (RUNNER_FAIRNESS=owner): the (priority, owner) with
-- claimable work that comes after (p_priority, p_owner) in the order the claim takes them —
-- priorities from the highest, and within one the owners after `p_cursor` (the last owner the
-- claimer served) in name order, then, on a second lap (p_lap 1), those up to it: a ring, so
-- that with more owners than a claim takes, the next claim goes on where this one stopped.
-- Also the due time of the owner's first claimable task, where its pick starts. Each branch is
-- a probe of tasks_ready_owner, and the first that finds a row ends the walk; every one orders
-- as that index does (run_at last), so that Postgres reads that index and no other, and each
-- passes at most one owner's entries that are no longer claimable (finished, not yet vacuumed).
-- Start it with (101, '', 1): the first owner of the highest priority with claimable work.
create function taskhandle_next_owner(
  p_priority smallint, p_owner text, p_lap integer, p_cursor text, p_kinds text[]
) returns table (priority smallint, owner text, lap integer, run_at timestamptz)
language sql stable as $$
  select * from (
    -- The next owner of this priority, on this lap.
    (select t.priority, t.owner, p_lap, t.run_at from tasks t
     where t.status = 'working' and t.hold is null and t.priority = p_priority
       and t.owner > p_owner and (p_lap = 0 or t.owner <= p_cursor)
       and t.run_at <= now() and t.expires_at > now() and t.kind = any(p_kinds)
       and (t.lease_expires_at is null or t.lease_expires_at < now()) and t.attempt < t.max_attempts
     order by t.priority desc, t.owner, t.run_at
     limit 1)
    union all
    -- This priority's second lap: its first owner, when that is not after the cursor.
    (select t.priority, t.owner, 1, t.run_at from tasks t
     where p_lap = 0 and t.status = 'working' and t.hold is null and t.priority = p_priority
       and t.owner <= p_cursor
       and t.run_at <= now() and t.expires_at > now() and t.kind = any(p_kinds)
       and (t.lease_expires_at is null or t.lease_expires_at < now()) and t.attempt < t.max_attempts
     order by t.priority desc, t.owner, t.run_at
     limit 1)
    union all
    -- The next priority down: its first owner after the cursor (lap 0), else its first owner.
    (select l.priority, coalesce(a.owner, l.owner),
            case when l.owner > p_cursor or a.owner is not null then 0 else 1 end,
            coalesce(a.run_at, l.run_at)
     from (
       select t.priority, t.owner, t.run_at from tasks t
       where t.status = 'working' and t.hold is null and t.priority < p_priority
         and t.run_at <= now() and t.expires_at > now() and t.kind = any(p_kinds)
         and (t.lease_expires_at is null or t.lease_expires_at < now()) and t.attempt < t.max_attempts
       order by t.priority desc, t.owner, t.run_at
       limit 1
     ) l
     left join lateral (
       select t.owner, t.run_at from tasks t
       where l.owner <= p_cursor and t.status = 'working' and t.hold is null
         and t.priority = l.priority and t.owner > p_cursor
         and t.run_at <= now() and t.expires_at > now() and t.kind = any(p_kinds)
         and (t.lease_expires_at is null or t.lease_expires_at < now()) and t.attempt < t.max_attempts
       order by t.priority desc, t.owner, t.run_at
       limit 1
     ) a on true)
  ) n
  limit 1
$$;

-- The worker's claim (DESIGN §4, §14, §17), replacing 0004's: one round trip, one statement
-- for the caller. What is new:
--
-- - p_fair: within a priority, owners take turns. Each round walks at most 4 owners, and no
--   more than it has tasks left to claim (taskhandle_next_owner, starting after p_cursor),
--   picks each owner's oldest due tasks (an even share of the round), and takes them first of
--   every owner, then second of every owner, and so on. Neither the walk nor the picks read
--   more than the claim's size in rows, however many tasks or owners wait. Without p_fair,
--   §14's order: priority, then due time.
-- - Rate limits: a task's first start is counted against its key's window (see above); a full
--   key holds it. A first start is claimed only among the first `p_free` tasks of the claim
--   (those the caller starts at once), so that it starts running when it is counted rather
--   than waiting in a local queue; one left for that reason is reported (`left_waiting`).
-- - Holding a task, and letting it go, announce it (its status message says why it waits).
-- - The rows come back in claim order, then one more row with no task: the earliest instant a
--   delayed task or a rate-limited key falls due (for the caller's timer), the cursor to pass
--   next time, and whether a claimable task was left for want of a free slot.
drop function taskhandle_claim_tasks(text, text[], integer, integer);

create function taskhandle_claim_tasks(
  p_worker text,
  p_kinds text[],
  p_limit integer,
  p_lease_ms integer,
  p_fair boolean,
  p_free integer,
  p_cursor text
) returns table (claimed tasks, claim_order integer, next_due timestamptz, next_cursor text,
  left_waiting boolean)
language plpgsql
-- Its statements are planned once per connection: Postgres's first five custom plans of the
-- walk over owners cost ~4 ms each to make, ten times a claim's work, and the generic plan
-- reads the same indexes.
set plan_cache_mode = force_generic_plan
as $$
declare
  v_hold record;
  v_cand record;
  v_running integer;
  v_free integer;
  v_n integer;
  v_order uuid[] := '{}';
  v_plain uuid[];
  v_before integer;
  v_skipped uuid[] := '{}';
  v_round integer := 0;
  v_more boolean;
  v_waiting boolean := false;
  v_cursor text := coalesce(p_cursor, '');
  v_want integer;
  -- The most owners one round walks: each is an index probe and a pick. A fair claim (and the
  -- completions of its tasks) cost Postgres 2 % less CPU than a fifo one walking 2 owners, 4 %
  -- more walking 4, 19 % more walking 8. Past 4 owners a round serves 4 of them, an even
  -- share each, and the next round or claim the next 4 (the ring's cursor).
  v_walk constant integer := 4;
  v_priorities smallint[];
  v_owners text[];
  -- Each walked owner's first claimable due time: its pick starts there, past what the owner
  -- has finished and not yet vacuumed.
  v_firsts timestamptz[];
  -- The walk's last step, as taskhandle_next_owner answers it.
  v_priority smallint;
  v_owner text;
  v_lap integer;
  v_first timestamptz;
  v_i integer;
  v_window timestamptz[];
  v_cur refcursor;
begin
  perform set_config('synchronous_commit', 'off', true);
  if p_limit > 0 then
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

    -- Keys with tasks held by concurrency: as many go back to ready as their key has free slots.
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
        with u as (
          update tasks t set hold = null, status_message = null, version = t.version + 1,
            last_updated_at = now()
          from (
            select id from tasks
            where status = 'working' and hold = 'key'
              and kind = v_hold.kind and coalesce(concurrency_key, owner) = v_hold.key
              and concurrency_limit > v_running
            order by priority desc, run_at
            limit v_free
            for update skip locked
          ) f
          where t.id = f.id
          returning t.id, t.version
        )
        select count(pg_notify('taskhandle_task', u.id::text || ':' || u.version::text)) into v_n
        from u;
      end if;
    end loop;

    -- Keys with tasks held by their rate limit whose next start is due.
    perform taskhandle_rate_release(p_kinds);

    loop
      v_round := v_round + 1;
      v_plain := '{}';
      v_more := false;
      v_before := cardinality(v_order);
      v_want := p_limit - v_before;
      if p_fair then
        v_priorities := '{}';
        v_owners := '{}';
        v_firsts := '{}';
        -- The owners this round serves, in turn (see taskhandle_next_owner), one probe each.
        v_priority := 101;
        v_owner := '';
        v_lap := 1;
        for v_i in 1..least(v_want, v_walk) loop
          select n.priority, n.owner, n.lap, n.run_at into v_priority, v_owner, v_lap, v_first
          from taskhandle_next_owner(v_priority, v_owner, v_lap, v_cursor, p_kinds) n;
          exit when not found;
          v_priorities := v_priorities || v_priority;
          v_owners := v_owners || v_owner;
          v_firsts := v_firsts || v_first;
        end loop;
        -- More owners of the first priority than this round walks: the next goes on after the
        -- last one served.
        if cardinality(v_owners) >= least(v_want, v_walk)
          and v_priorities[cardinality(v_priorities)] = v_priorities[1] then
          v_cursor := v_owners[cardinality(v_owners)];
        end if;
        open v_cur for
          select p.id, p.kind, p.attempt, p.key, p.concurrency_limit, p.rate_key, p.rate_limit,
                 p.rate_period_ms
          from (
            select e.priority, e.n, x.*,
                   row_number() over (partition by e.n order by x.run_at, x.id) as rank
            from (
              select u.priority, u.owner, u.first, u.n,
                     ceil(v_want::numeric / count(*) over (partition by u.priority))::int as share
              from unnest(v_priorities, v_owners, v_firsts) with ordinality u(priority, owner, first, n)
            ) e
            cross join lateral (
              select id, run_at, kind, attempt, coalesce(concurrency_key, owner) as key,
                     concurrency_limit, coalesce(rate_limit_key, owner) as rate_key, rate_limit,
                     rate_period_ms
              from tasks
              where status = 'working' and hold is null and priority = e.priority
                and owner = e.owner and run_at >= e.first and run_at <= now() and expires_at > now()
                and kind = any(p_kinds) and (lease_expires_at is null or lease_expires_at < now())
                and attempt < max_attempts and id <> all(v_skipped)
              order by run_at
              limit e.share
              for update skip locked
            ) x
          ) p
          order by p.priority desc, p.rank, p.n
          limit v_want;
      else
        open v_cur for
          select id, kind, attempt, coalesce(concurrency_key, owner) as key, concurrency_limit,
                 coalesce(rate_limit_key, owner) as rate_key, rate_limit, rate_period_ms
          from tasks
          where status = 'working' and hold is null and run_at <= now() and expires_at > now()
            and kind = any(p_kinds) and (lease_expires_at is null or lease_expires_at < now())
            and attempt < max_attempts and id <> all(v_skipped)
          order by priority desc, run_at
          limit v_want
          for update skip locked;
      end if;

      loop
        fetch v_cur into v_cand;
        exit when not found;
        if v_cand.concurrency_limit is not null then
          if not pg_try_advisory_xact_lock(hashtextextended(v_cand.kind || E'\x1f' || v_cand.key, 0)) then
            v_skipped := v_skipped || v_cand.id;
            continue;
          end if;
          select count(*) into v_running from tasks
          where status = 'working' and hold is null and concurrency_limit is not null
            and kind = v_cand.kind and coalesce(concurrency_key, owner) = v_cand.key
            and worker_id is not null and lease_expires_at > now();
          if v_running >= v_cand.concurrency_limit then
            -- The key is full: this task, and every ready one of the key held to no more, wait
            -- out of the ready index until a claim finds a slot free.
            with u as (
              update tasks t set hold = 'key', version = t.version + 1, last_updated_at = now(),
                status_message = 'Concurrency limited: ' || v_running || ' of its key running (limit '
                  || t.concurrency_limit || ').'
              from (
                select id from tasks
                where status = 'working' and hold is null and kind = v_cand.kind
                  and coalesce(concurrency_key, owner) = v_cand.key
                  and concurrency_limit <= v_running
                  and (lease_expires_at is null or lease_expires_at < now())
                  and id <> all(v_order)
                for update skip locked
              ) h
              where t.id = h.id
              returning t.id, t.version
            )
            select count(pg_notify('taskhandle_task', u.id::text || ':' || u.version::text)) into v_n
            from u;
            -- An upsert, not "do nothing": it locks the key's row, so a claim that is about to
            -- drop the row (having seen no held task before these commit) waits, or skips it.
            insert into task_key_holds (kind, key) values (v_cand.kind, v_cand.key)
            on conflict (kind, key) do update set kind = excluded.kind;
            v_more := true;
            continue;
          end if;
        end if;
        if v_cand.rate_limit is not null and v_cand.attempt = 0 then
          if cardinality(v_order) >= p_free then
            -- It would wait in the caller's queue: counted as started, it would start later.
            v_waiting := true;
            v_skipped := v_skipped || v_cand.id;
            continue;
          end if;
          if not pg_try_advisory_xact_lock(hashtextextended(v_cand.kind || E'\x1f' || v_cand.rate_key, 1)) then
            v_skipped := v_skipped || v_cand.id;
            continue;
          end if;
          v_window := taskhandle_rate_window(v_cand.kind, v_cand.rate_key, v_cand.rate_limit,
            v_cand.rate_period_ms);
          if cardinality(v_window) >= v_cand.rate_limit then
            perform taskhandle_rate_hold(v_cand.kind, v_cand.rate_key, v_cand.rate_limit,
              v_cand.rate_period_ms, v_window, v_order);
            v_more := true;
            continue;
          end if;
          delete from task_rate_starts
          where kind = v_cand.kind and key = v_cand.rate_key and forget_at <= now();
          insert into task_rate_starts (kind, key, started_at, task_id, forget_at)
          values (v_cand.kind, v_cand.rate_key, now(), v_cand.id,
            now() + v_cand.rate_period_ms * interval '1 millisecond');
        end if;
        if v_cand.concurrency_limit is not null then
          -- Leased now: the next candidate of its key counts it.
          update tasks t
          set worker_id = p_worker, attempt = t.attempt + 1,
              lease_expires_at = now() + p_lease_ms * interval '1 millisecond'
          where t.id = v_cand.id;
        else
          v_plain := v_plain || v_cand.id;
        end if;
        v_order := v_order || v_cand.id;
      end loop;
      close v_cur;

      if cardinality(v_plain) > 0 then
        update tasks t
        set worker_id = p_worker, attempt = t.attempt + 1,
            lease_expires_at = now() + p_lease_ms * interval '1 millisecond'
        where t.id = any(v_plain);
      end if;
      -- Held candidates made room for others: look again, a few times at most. A fair round
      -- takes an even share of each owner it walked: one that claimed some but not enough
      -- looks again too, for what the shares left.
      exit when cardinality(v_order) >= p_limit or v_round >= 4
        or not (v_more or (p_fair and cardinality(v_order) > v_before));
    end loop;
  end if;

  return query
    select t, o.n::integer, null::timestamptz, null::text, null::boolean
    from unnest(v_order) with ordinality o(id, n)
    join tasks t on t.id = o.id
    order by o.n;
  return query
    select null::tasks, null::integer,
      least(
        (select min(run_at) from tasks where status = 'working' and hold = 'time'),
        (select min(h.next_at) from task_rate_holds h where h.kind = any(p_kinds))),
      v_cursor, v_waiting;
end
$$;

-- A fair claim looks for more only where there may be more.
--
-- A fair round (migration 0012) takes an even share of each owner it walks; when it claimed
-- some tasks but fewer than its limit, the claim ran a second round, walking the owners again
-- for what the shares left. Most claims are of that kind: a worker woken by one start claims
-- that one task with room for eight. The second round then walked the same owners and found
-- nothing, and cost about a sixth of the claim. Timed inside Postgres, 2 000 claims of one
-- queued task, each undone, four runs: 293–354 µs a claim with it, 257–277 µs without (fifo:
-- 176–203 µs); of one task of each of three owners, 502–570 µs with, 433–450 µs without.
--
-- A round now looks again only if it may find more: its walk reached its bound (there may be
-- owners it did not walk), an owner gave its whole share (it may have more), or the round's
-- limit cut the picks. Otherwise it saw every owner with claimable work and all each had, and
-- a second look finds only what other claims locked meanwhile, which the next claim takes.
-- Everything else is migration 0012's function as it was, with 0016's setting.
create or replace function taskhandle_claim_tasks(
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
-- Migration 0016's: with sequential scans ruled out, every statement is planned onto its index
-- whatever the table's size when it was planned. (A replaced function keeps only the settings
-- its new definition states.)
set enable_seqscan = off
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
  -- A fair round's picks: how many each walked owner's gave (by its place in the walk), and
  -- whether one gave its whole share (it may have more) or the round's limit cut them.
  v_picked integer[];
  v_picked_all integer;
  v_share_filled boolean;
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
      v_picked := '{}';
      v_picked_all := 0;
      v_share_filled := false;
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
                 p.rate_period_ms, p.n::integer as n, p.share
          from (
            select e.priority, e.n, e.share, x.*,
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
                 coalesce(rate_limit_key, owner) as rate_key, rate_limit, rate_period_ms,
                 0 as n, 0 as share
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
        if p_fair then
          v_picked[v_cand.n] := coalesce(v_picked[v_cand.n], 0) + 1;
          v_picked_all := v_picked_all + 1;
          v_share_filled := v_share_filled or v_picked[v_cand.n] >= v_cand.share;
        end if;
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
      -- looks again too, for what the shares left, unless it saw everything there was: its
      -- walk ended before its bound (no owner is left to walk), no owner gave its whole share
      -- and the round's limit cut no pick.
      exit when cardinality(v_order) >= p_limit or v_round >= 4
        or not (v_more or (p_fair and cardinality(v_order) > v_before
          and (cardinality(v_owners) >= least(v_want, v_walk) or v_share_filled
            or v_picked_all >= v_want)));
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

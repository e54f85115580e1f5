-- A child that ends and a parent that suspends on its children meet at a lock of the
-- parent's, not at the children's rows.
--
-- Before, the suspension locked the awaited children `for share` while it read them, so that a
-- child ending meanwhile was either seen ended or found its step WAITING_CHILD. Those share
-- locks hid the children from the claim (`for update skip locked`) for as long as the
-- suspension held them: the runner, finding nothing to claim, waited for its next poll, and a
-- fan-out of 1 000 children stalled for a second at a time. They also met the children's
-- outcome batches, which lock the same rows in another order: a deadlock that Postgres broke
-- after deadlock_timeout, failing one side.
--
-- Now each task whose journal holds a child's step has a transaction-scoped advisory lock,
-- keyed by its id: the suspension takes it exclusive (after its own row, before it reads its
-- children, which it no longer locks), and a child that ends takes it shared before it reads
-- its step. A child that ends while its parent suspends waits for the suspension and then
-- finds its step WAITING_CHILD; a suspension that begins while a child's outcome is being
-- written waits for its commit and then reads the child ended. Children's outcomes never wait
-- for each other here (shared locks), and no row is locked, so the claim, the outcomes and the
-- lease renewals never wait for, or skip past, a suspension.
create or replace function taskhandle_child_ended() returns trigger
language plpgsql as $$
declare
  v_task uuid;
  v_state text;
  v_id uuid;
  v_version integer;
  v_kind text;
  v_hold text;
begin
  -- Its parent's entry, and any copy of it in a task run again from a later step (retryTask).
  for v_task in
    select task_id from task_steps where child_id = new.id
  loop
    perform pg_advisory_xact_lock_shared(hashtextextended('taskhandle_children:' || v_task, 0));
    select state into v_state from task_steps
      where task_id = v_task and child_id = new.id for update;
    if not found then
      continue;
    end if;
    update task_steps set
      child_status = new.status,
      state = case when new.status = 'completed' then 'COMPLETED' else 'FAILED' end,
      ended_at = now(),
      result = case when new.status = 'completed' then new.result end,
      error = case when new.status = 'completed' then null else jsonb_build_object(
        'code', 'CHILD_FAILED',
        'message', 'Child task ' || new.id || ' ended ' || upper(new.status) || '.',
        'childId', new.id, 'status', upper(new.status), 'error', new.error) end
    where task_id = v_task and child_id = new.id;
    if v_state = 'WAITING_CHILD' then
      update tasks t set
        children_waiting = greatest(t.children_waiting - 1, 0),
        hold = case when t.children_waiting <= 1 or new.status <> 'completed' then null else t.hold end,
        run_at = case when t.children_waiting <= 1 or new.status <> 'completed'
          then date_trunc('milliseconds', now()) else t.run_at end,
        status_message = case when t.children_waiting <= 1 or new.status <> 'completed'
          then null else t.status_message end,
        version = case when t.children_waiting <= 1 or new.status <> 'completed'
          then t.version + 1 else t.version end,
        last_updated_at = case when t.children_waiting <= 1 or new.status <> 'completed'
          then now() else t.last_updated_at end
      where t.id = v_task and t.status = 'working' and t.worker_id is null
        and t.hold in ('wait', 'time')
      returning t.id, t.version, t.kind, t.hold into v_id, v_version, v_kind, v_hold;
      -- Woken: announced, and the workers told there is work.
      if found and v_hold is null then
        perform pg_notify('taskhandle_task', v_id::text || ':' || v_version::text);
        perform pg_notify('taskhandle_ready', v_kind);
      end if;
    end if;
  end loop;
  return null;
end
$$;

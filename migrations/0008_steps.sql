-- Durable steps, waits and child tasks (DESIGN §16).
--
-- A handler's steps are journalled in task_steps, keyed by (task, name): a later run of the
-- task returns what is there instead of running the step again. A task that waits (a sleep,
-- a signal, its children) is suspended: WORKING, unleased, and out of every index the claim
-- walks. A wait with a wake-up instant is `hold = 'time'` with that instant in `run_at`, so
-- it joins delayed starts and backoffs (tasks_scheduled, and the runner's one timer for the
-- earliest due task); a wait without one is `hold = 'wait'`, which no claim and no index of
-- ready work looks at, so 10 000 waiting tasks cost a claim nothing.

alter table tasks
  -- The task whose handler started this one (ctx.startChild); null for a task started outside.
  add column parent_id uuid,
  -- Something was journalled for this task: a run loads the journal before the handler starts
  -- (a task that never journalled anything costs no read).
  add column journaled boolean not null default false,
  -- Children started so far (at most 10 000), kept here so the limit costs no count.
  add column children_count integer not null default 0,
  -- While suspended on its children: how many of the awaited ones have not ended. The last
  -- one to end, or the first to fail, wakes the task (taskhandle_child_ended below).
  add column children_waiting integer not null default 0;

alter table tasks drop constraint tasks_hold_check;
alter table tasks add constraint tasks_hold_check check (hold in ('time', 'key', 'wait'));

-- A task's children, newest first: Task.children pages and TaskFilter.parentId.
create index tasks_children on tasks (parent_id, created_at desc, id desc)
  where parent_id is not null;

-- The journal. `position` is the order in which each step first ran (1, 2, …, per task);
-- `attempts` counts runs of a step's fn. A wait is a row too: SLEEPING and WAITING_SIGNAL
-- carry their wake-up instant (`wake_at`), a child step its child (`child_id`, and once it
-- ended `child_status` with its result or error). `signal_url` is the capability URL minted
-- for a signal wait (owner only, like any step's result); the lookup goes through the token's
-- hash in task_signal_tokens.
create table task_steps (
  task_id uuid not null,
  name text not null,
  position integer not null,
  state text not null check (state in (
    'RUNNING', 'COMPLETED', 'FAILED', 'SLEEPING', 'WAITING_SIGNAL', 'WAITING_CHILD')),
  attempts integer not null default 0,
  started_at timestamptz not null default now(),
  ended_at timestamptz,
  wake_at timestamptz,
  child_id uuid,
  child_status text,
  signal_url text,
  wait_schema jsonb,
  result jsonb,
  error jsonb,
  primary key (task_id, name)
);
-- A child's step, found when the child ends (the trigger below).
create index task_steps_child on task_steps (child_id) where child_id is not null;

-- Signals, the first payload per (task, name), also when it arrives before the handler waits.
create table task_signals (
  task_id uuid not null,
  name text not null,
  payload jsonb not null,
  received_at timestamptz not null default now(),
  primary key (task_id, name)
);

-- Signal URLs: sha256 of the URL's token (128 random bits), bound to one task and name.
create table task_signal_tokens (
  token_hash bytea primary key,
  task_id uuid not null,
  name text not null
);
create index task_signal_tokens_task on task_signal_tokens (task_id);

-- A child that ends: its step in the parent's journal records how (the parent's later runs
-- read it there, also after the child is gone), and a parent suspended on it is told. The
-- parent, while suspended, counts the awaited children not yet ended (children_waiting); the
-- last to end, or the first to end otherwise than COMPLETED, wakes it: a fan-in over 10 000
-- children wakes the parent once, or once per failure. The parent's suspension locks the
-- awaited children `for share` before it reads them, so a child that ends meanwhile either
-- ended before (the parent sees it, and does not wait for it) or after (this sees the step
-- WAITING_CHILD).
create function taskhandle_child_ended() returns trigger
language plpgsql as $$
declare
  v_step record;
  v_id uuid;
  v_version integer;
  v_kind text;
  v_hold text;
begin
  -- Its parent's entry, and any copy of it in a task run again from a later step (retryTask).
  for v_step in
    select task_id, state from task_steps where child_id = new.id for update
  loop
    update task_steps set
      child_status = new.status,
      state = case when new.status = 'completed' then 'COMPLETED' else 'FAILED' end,
      ended_at = now(),
      result = case when new.status = 'completed' then new.result end,
      error = case when new.status = 'completed' then null else jsonb_build_object(
        'code', 'CHILD_FAILED',
        'message', 'Child task ' || new.id || ' ended ' || upper(new.status) || '.',
        'childId', new.id, 'status', upper(new.status), 'error', new.error) end
    where task_id = v_step.task_id and child_id = new.id;
    if v_step.state = 'WAITING_CHILD' then
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
      where t.id = v_step.task_id and t.status = 'working' and t.worker_id is null
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

create trigger tasks_child_ended
  after update of status on tasks
  for each row when (new.parent_id is not null and new.status is distinct from old.status
    and new.status in ('completed', 'failed', 'cancelled'))
  execute function taskhandle_child_ended();

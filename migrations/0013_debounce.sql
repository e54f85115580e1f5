-- Debounce (DESIGN §17): a start carrying a debounce key joins the task of the same owner, kind
-- and key that has not started yet (replacing its input and labels, moving its run_at), or
-- begins a new burst. One conditional insert decides which (src/tasks/sql/debounce.ts).
--
-- `debounce_key` is set while the burst is open: from the first start until the task first
-- starts (a claim, or any write that gives it a worker). `debounce_max_delay_ms` is the
-- tightest maxDelayMs the burst's starts gave (null: none), counted from created_at, the
-- burst's first start.
alter table tasks
  add column debounce_key text,
  add column debounce_max_delay_ms integer;

-- At most one open burst per owner, kind and key, across every process: the arbiter of the
-- start's `on conflict`. A task leaves it when it starts (below), ends (cancelled before it
-- ran), or is purged; an expired one is let go by the next start of its key.
create unique index tasks_debounce_open on tasks (owner, kind, debounce_key)
  where debounce_key is not null and status = 'working';

-- A task has started once a worker holds it; from then on, the next start of its key begins a
-- new burst. The mark has to be one-way: `attempt` and `worker_id` both go back (a graceful
-- stop gives the lease back and uncounts the attempt), and a started task that came back into
-- the index beside a newer burst would break its uniqueness. So the write that first gives the
-- task a worker closes the burst, whoever writes it (the claim, or a later one): the claim
-- stays as it is, and a start waiting on the claim's row lock sees the burst closed once the
-- claim commits, and begins a new one. Rows without a debounce key never enter the function
-- (the trigger's WHEN).
create function taskhandle_debounce_closed() returns trigger
language plpgsql as $$
begin
  new.debounce_key := null;
  return new;
end
$$;

create trigger tasks_debounce_closed
  before update of worker_id on tasks
  for each row when (new.debounce_key is not null and new.worker_id is not null)
  execute function taskhandle_debounce_closed();

-- Labels were written once with their task (0005); a start that joins a burst replaces them,
-- so the label rows of a task may now be rewritten by that statement too.

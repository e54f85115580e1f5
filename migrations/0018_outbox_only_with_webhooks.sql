-- The outbox trigger runs only for tasks that have a webhook.
--
-- Every status change of every task ran taskhandle_enqueue_deliveries (migration 0002): a
-- plpgsql call and an INSERT … SELECT that, for the many tasks with no webhook, found nothing
-- to write. That cost Postgres about 4 µs a status change (an update of 20 000 tasks' status
-- took 15 µs a row with the call, 11 without), about a sixteenth of a drained task's Postgres
-- time, for a feature most tasks do not use. Now a task row says whether a webhook was ever
-- attached to it, and the trigger's WHEN reads that flag, which the executor checks without
-- calling the function.
--
-- The flag is set by a trigger on task_webhooks, so every way a webhook is attached (at start,
-- later as an A2A push config, with an answer) sets it in the transaction that attaches it,
-- under the lock on the task's row the attaching statement already holds or takes here. A
-- status change committed after the attachment sees the flag; one committed before it is one
-- the webhook does not report (its after_version). A webhook deleted later leaves the flag
-- set: the trigger then runs and finds nothing, as before.
alter table tasks add column has_webhooks boolean not null default false;

update tasks t set has_webhooks = true
where exists (select 1 from task_webhooks w where w.task_id = t.id);

create function taskhandle_task_has_webhooks() returns trigger
language plpgsql as $$
begin
  update tasks set has_webhooks = true where id = new.task_id and not has_webhooks;
  return null;
end
$$;

create trigger task_webhooks_flag_task
  after insert on task_webhooks
  for each row execute function taskhandle_task_has_webhooks();

drop trigger tasks_enqueue_deliveries on tasks;

create trigger tasks_enqueue_deliveries
  after update of status on tasks
  for each row when (new.status is distinct from old.status and new.has_webhooks)
  execute function taskhandle_enqueue_deliveries();

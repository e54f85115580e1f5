-- Webhooks (DESIGN §11): URLs a task's owner wants its status changes pushed to, and the
-- outbox of deliveries to them. Both go with their task: the purge deletes them in the
-- statement that deletes it (src/tasks/purge.ts), and deleting a webhook deletes its
-- deliveries. There are no foreign keys: each would check, and lock for key share, the
-- task or webhook row on every delivery written, in the transaction of the status change,
-- for a guarantee every writer already gives by holding the task's row (a task being
-- changed or attached to is locked, and the purge skips locked tasks).
create table task_webhooks (
  id uuid primary key,
  task_id uuid not null,
  url text not null,
  secret text not null,                -- whsec_…: signs every delivery
  format text not null default 'standard' check (format in ('standard', 'a2a')),
  token text,                          -- A2A: sent back as X-A2A-Notification-Token
  auth_scheme text,                    -- A2A: Authorization: <scheme> <credentials>
  auth_credentials text,
  -- The task's version when the webhook was attached: it reports later changes only.
  after_version integer not null,
  disabled_at timestamptz,             -- set by a 410 Gone: no further deliveries
  created_at timestamptz not null default now()
);
create index task_webhooks_task on task_webhooks (task_id, created_at);

create table task_deliveries (
  id uuid primary key,                 -- the webhook-id header, the same on every attempt
  task_id uuid not null,
  webhook_id uuid not null,
  version integer not null,
  status text not null,                -- the status this delivery reports
  snapshot jsonb not null,             -- the task as of `version`, what the body is made of
  state text not null default 'pending' check (state in ('pending', 'delivered', 'failed')),
  attempts integer not null default 0, -- claims so far; with worker_id, the fencing token
  next_attempt_at timestamptz not null default now(),
  worker_id text,
  lease_expires_at timestamptz,
  last_status_code integer,
  last_error text,
  delivered_at timestamptz,
  created_at timestamptz not null default now()
);
-- Due work: only pending rows are indexed.
create index task_deliveries_due on task_deliveries (next_attempt_at) where state = 'pending';
-- A webhook's pending deliveries in version order: the claim's check that none older waits is
-- one probe here, whatever the statistics say. Pending rows only, so a delivered one leaves it.
create unique index task_deliveries_pending on task_deliveries (webhook_id, version)
  where state = 'pending';
-- A task's deliveries, newest first; and the purge's delete of them.
create index task_deliveries_task on task_deliveries (task_id, version desc);

-- The outbox write: a delivery per live webhook, in the transaction of the status change it
-- reports, so a committed change cannot lose its delivery and a rolled-back one sends none.
-- Progress-only updates do not fire it (the trigger's WHEN), so they cost nothing.
create function taskhandle_enqueue_deliveries() returns trigger
language plpgsql as $$
begin
  insert into task_deliveries (id, task_id, webhook_id, version, status, snapshot)
  select gen_random_uuid(), new.id, w.id, new.version, new.status,
         to_jsonb(new) - array['input', 'answers', 'idempotency_key', 'worker_id', 'lease_expires_at']
  from task_webhooks w
  where w.task_id = new.id and w.disabled_at is null and w.after_version < new.version;
  if found then
    perform pg_notify('taskhandle_delivery', '');
  end if;
  return null;
end
$$;

create trigger tasks_enqueue_deliveries
  after update of status on tasks
  for each row when (new.status is distinct from old.status)
  execute function taskhandle_enqueue_deliveries();

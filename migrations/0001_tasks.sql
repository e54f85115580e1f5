-- The task table: one row per task handle, from startTask until it expires and is purged.
create table tasks (
  id uuid primary key,
  owner text not null,
  kind text not null,
  status text not null default 'working'
    check (status in ('working', 'input_required', 'completed', 'cancelled', 'failed')),
  status_message text,
  progress double precision check (progress is null or (progress >= 0 and progress <= 1)),
  input jsonb,
  result jsonb,
  error jsonb,                         -- { code, message } once failed
  input_request jsonb,                 -- { key, message, schema } while input_required
  answers jsonb not null default '{}', -- key → value given by provideTaskInput, kept for re-runs
  version integer not null default 1,
  ttl_ms integer not null,
  expires_at timestamptz not null,
  poll_interval_ms integer not null,
  idempotency_key text,
  worker_id text,                      -- who holds the lease
  lease_expires_at timestamptz,
  attempt integer not null default 0,  -- claims so far; the fencing token of a lease
  max_attempts integer not null,
  timeout_ms integer not null,
  created_at timestamptz not null default now(),
  last_updated_at timestamptz not null default now(),
  constraint tasks_owner_idempotency_key unique (owner, idempotency_key)
);

-- An owner's tasks, newest first (keyset pagination on (created_at, id)).
create index tasks_owner_created on tasks (owner, created_at desc, id desc);
-- Claimable work: only unfinished rows are indexed, oldest first.
create index tasks_claimable on tasks (created_at) where status = 'working';
-- Purge and expiry scans.
create index tasks_expires_at on tasks (expires_at);

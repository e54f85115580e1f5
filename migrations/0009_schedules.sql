-- Schedules (DESIGN §17): recurring work, each occurrence an ordinary task of the schedule's
-- owner. One row a schedule; `next_run_at` is the occurrence due next, null while paused.
-- Firing an occurrence moves `next_run_at` on in the same transaction that inserts its task,
-- under the row's lock: two processes never start one occurrence twice, and a crash before
-- the commit leaves the occurrence due.
create table schedules (
  owner text not null,
  key text not null,
  cron text not null,
  timezone text not null,
  kind text not null,
  input jsonb not null default '{}',
  missed text not null default 'skip' check (missed in ('skip', 'once', 'all')),
  overlap text not null default 'allow' check (overlap in ('allow', 'skip')),
  paused boolean not null default false,
  -- What each occurrence's task is started with (DESIGN §14), as given: null takes the kind's.
  priority int,
  labels jsonb,
  retry jsonb,
  ttl_ms int,
  concurrency_key text,
  next_run_at timestamptz,
  last_run_at timestamptz,
  last_task_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (owner, key)
);

-- What is due, and the earliest occurrence each process sets its one timer for: one index
-- walk, whatever the number of schedules.
create index schedules_due on schedules (next_run_at) where next_run_at is not null;

-- The schedule an occurrence's task was started by (`Task.scheduleKey`); null for the rest.
alter table tasks add column schedule_key text;

-- Finding and acting on many tasks (DESIGN §15): labels, the link of a re-run to its original,
-- and an ordered index for each filter, so a filtered page walks an index newest first and
-- stops after its page, whatever the owner's number of tasks.

-- What the owner said the task is for ({ "tenant": "acme" }): set at start, never changed.
alter table tasks add column labels jsonb not null default '{}';
-- The task this one runs again (retryTask); no foreign key, the original may be purged first.
alter table tasks add column retry_of uuid;

-- One row per label of a task, in the owner's newest-first order. A GIN index on tasks.labels
-- finds the matching rows but not in created_at order: a page under a label that thousands of
-- tasks carry would read and sort all of them. Walking this index instead reads the page and
-- stops. Labels never change, so the rows are written once, with the task, and deleted with it
-- by the purge.
create table task_labels (
  owner text not null,
  key text not null,
  value text not null,
  created_at timestamptz not null,
  task_id uuid not null,
  primary key (owner, key, value, created_at, task_id)
);
create index task_labels_task on task_labels (task_id);

-- A page filtered by status or kind: one walk per status or kind, merged in order.
create index tasks_owner_status_created on tasks (owner, status, created_at desc, id desc);
create index tasks_owner_kind_created on tasks (owner, kind, created_at desc, id desc);

-- The accept path's indexes (issue 45). Every index on `tasks` is paid by every start, and —
-- since an outcome changes `status`, which some index covers, so it is never a HOT update — by
-- every outcome again. Two did work another index already does:
--
-- * tasks_owner_created (owner, created_at desc, id desc) served the owner's unfiltered list,
--   which now walks each status's part of tasks_owner_status_created and merges them (Merge
--   Append of five index walks, each stopping after the page): as flat, on any owner's count.
-- * The unique constraint on (owner, idempotency_key) put an entry in its index for every task,
--   keyed or not (NULLs are stored, and never conflict). A partial unique index holds the keyed
--   tasks only; ON CONFLICT names its predicate. Its name stays.
--
-- docs/operating.md lists every index on `tasks` with the statements that use it, and the
-- EXPLAIN evidence on a table of 1 000 000 rows.
drop index tasks_owner_created;
alter table tasks drop constraint tasks_owner_idempotency_key;
create unique index tasks_owner_idempotency_key on tasks (owner, idempotency_key)
  where idempotency_key is not null;

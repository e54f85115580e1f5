-- A task's running time across its runs (DESIGN §16: `timeoutMs` counts running time, not
-- waiting time). A durable task runs in pieces: each wake-up is a new run of its handler, and
-- the run-time limit must cover them all, not each alone. The milliseconds its earlier runs of
-- this attempt used are added here when a run suspends, and cleared when a failed attempt is
-- retried (each attempt has the whole limit). A new column with a constant default rewrites
-- nothing.
alter table tasks add column ran_ms integer not null default 0;

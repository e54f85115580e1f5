-- The claim never reads the whole of `tasks`. Its statements are planned once per connection
-- (force_generic_plan, migration 0012) and the plans kept until something invalidates them,
-- such as an ANALYZE of `tasks`. A connection that first claimed while the table was empty or
-- small was given plans for that table: a sequential scan to lease the claimed rows and a hash
-- join over a sequential scan to return them. It kept those plans as the table grew, until
-- autovacuum next analyzed it, and each claim read every row meanwhile: 1.3 ms a claim of one
-- task at 3 000 rows against 0.4 ms, and growing with the table. Every statement of the claim
-- has an index to read; with sequential scans ruled out it is planned onto them whatever the
-- table's size was when it was planned. The setting holds during the claim only (and the
-- functions it calls).
alter function taskhandle_claim_tasks(text, text[], integer, integer, boolean, integer, text)
  set enable_seqscan = off;

-- Tracing (DESIGN §13): the W3C traceparent of the request that started a task
-- ("00-<trace id>-<span id>-<flags>"), so each attempt, in whatever process and after
-- whatever crash, and each webhook delivery of the task are spans of that request's trace.
-- Null when the start was not traced (tracing off, the default).
alter table tasks add column trace_parent text;

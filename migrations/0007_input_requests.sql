-- Several questions outstanding at once (DESIGN §4, §9b `inputRequests`): a handler may ask
-- its owner more than one question in one go, and the task stays INPUT_REQUIRED until every
-- one is answered. Each answer is stored in `answers` as it arrives, so a re-run after a crash
-- gets it back at once, as with a single question.

-- The questions still unanswered, in the order they were asked: [{ key, message, schema }].
-- Set while input_required; `input_request` stays the first of them, for the faces that show
-- one question. A row written before this column (input_request set, this null) waits for
-- that one question alone.
alter table tasks add column input_requests jsonb;

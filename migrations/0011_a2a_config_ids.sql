-- A2A push config ids (DESIGN §10, §11): an A2A client may propose the id of a config it
-- creates, and later reads and deletes the config by that id. The webhook keeps its own id
-- (its deliveries and the signed `webhook-id` name it); the client's is kept beside it, and
-- the config answers to it instead. Null: the client proposed none, and the config's id is
-- the webhook's, as before.
alter table task_webhooks add column config_id text;

-- One config of a task per client id: creating another with the same id replaces it (under
-- the task's row lock, tasks/webhooks/store.ts); this index makes a second impossible.
-- Webhooks without a client id are not indexed, so the attach of any other costs nothing more.
create unique index task_webhooks_config on task_webhooks (task_id, config_id)
  where config_id is not null;

/**
 * The GraphQL documents the tests and the benchmarks send, written once. A test whose
 * document differs (fewer fields, a fixed key) keeps its own beside its assertions.
 */

/** Every field of a task its owner may read. */
export const TASK_FIELDS =
  'id kind status statusMessage progress version createdAt lastUpdatedAt ttlMs expiresAt pollIntervalMs input result error { code message } inputRequest { key message schema }';

export const START_TASK = `mutation($input: StartTaskInput!) { startTask(input: $input) { ${TASK_FIELDS} } }`;
export const GET_TASK = `query($id: ID!) { task(id: $id) { ${TASK_FIELDS} } }`;
export const ANSWER_TASK = `mutation($id: ID!, $key: String!, $value: JSON!) { provideTaskInput(id: $id, key: $key, value: $value) { ${TASK_FIELDS} } }`;
export const CANCEL_TASK = `mutation($id: ID!) { cancelTask(id: $id) { id status version } }`;
export const FOLLOW_VERSIONS = `subscription($id: ID!) { taskUpdated(id: $id) { id status version } }`;

/** What a client holding only the handle sends: start, poll, follow (the benchmarks' load). */
export const START_HANDLE =
  'mutation($input: StartTaskInput!) { startTask(input: $input) { id status pollIntervalMs } }';
export const POLL_HANDLE =
  'query($id: ID!) { task(id: $id) { id status progress statusMessage version pollIntervalMs lastUpdatedAt } }';
export const FOLLOW_PROGRESS =
  'subscription($id: ID!) { taskUpdated(id: $id) { id status version progress } }';

import type { Task } from '../../tasks/task.js';
import { builder } from './builder.js';

/**
 * Relay's `Node`: what a Relay client refetches by id alone, through `node(id)` and
 * `nodes(ids)` (task-operations.ts, beside `task(id)`, whose rules they share). A task is the
 * one node: its id, the taskId every face shares (`/v1/jobs/{id}`, A2A, MCP), is a random
 * UUID, unique across every type already, so it is the node id as it is — no type-tagged global
 * id that would differ between faces.
 */
export const NodeRef = builder.interfaceRef<Task>('Node').implement({
  description: 'An object a Relay client can refetch by its id alone (node, nodes).',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Unique across every type.' }),
  }),
  resolveType: () => 'Task',
});

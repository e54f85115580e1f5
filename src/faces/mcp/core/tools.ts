import type { TaskKind, TaskSupport } from '../../../tasks/kinds.js';
import { INVALID_PARAMS, RpcError } from './errors.js';

/** How the server names itself, on both revisions. */
export const SERVER_INFO = { name: 'taskhandle', version: '0.1.0' };

/** A tool as `tools/list` lists it. */
export interface Tool {
  name: string;
  description: string;
  inputSchema: TaskKind['inputSchema'];
  execution: { taskSupport: TaskSupport };
}

/**
 * One tool per task kind (DESIGN §9): its name, description and input schema. How it may be
 * called is the revision's to say: §9 always `optional`, §9b the kind's own.
 */
export function toolsOf(
  kinds: readonly TaskKind[],
  taskSupport: (kind: TaskKind) => TaskSupport,
): Tool[] {
  return kinds.map((kind) => ({
    name: kind.name,
    description: kind.description,
    inputSchema: kind.inputSchema,
    execution: { taskSupport: taskSupport(kind) },
  }));
}

/**
 * The kind a `tools/call` names.
 * @throws RpcError -32602 naming a tool there is none of
 */
export function kindNamed(kinds: readonly TaskKind[], name: unknown): TaskKind {
  const kind = kinds.find((candidate) => candidate.name === name);
  if (!kind) throw new RpcError(INVALID_PARAMS, `Unknown tool ${JSON.stringify(name)}.`);
  return kind;
}

import type { TaskFilter } from '../../tasks/filter.js';
import type { TaskStatus } from '../../tasks/status.js';
import { builder } from './builder.js';
import { TaskStatusEnum } from './task.js';

/** DESIGN §15's filter, as `tasks`, `tasksUpdated` and `cancelTasks` take it. */
export const TaskFilterInput = builder.inputType('TaskFilter', {
  description: 'Every condition given must hold; a list holds when any of its values does.',
  fields: (t) => ({
    status: t.field({ type: [TaskStatusEnum] }),
    kind: t.stringList(),
    labels: t.field({ type: 'JSON', description: 'Every pair must match.' }),
    createdAfter: t.field({ type: 'DateTime', description: 'Inclusive.' }),
    createdBefore: t.field({ type: 'DateTime', description: 'Exclusive.' }),
    owner: t.string({ description: 'Admins only: another principal’s tasks.' }),
    parentId: t.id({ description: 'The children of this task (ctx.startChild).' }),
  }),
});

type FilterArgument = {
  status?: readonly string[] | null | undefined;
  kind?: readonly string[] | null | undefined;
  labels?: unknown;
  createdAfter?: Date | null | undefined;
  createdBefore?: Date | null | undefined;
  owner?: string | null | undefined;
  parentId?: string | number | null | undefined;
};

/** The domain's filter; its checks are the domain's (checkFilter). */
export function taskFilterOf(filter: FilterArgument | null | undefined): TaskFilter | null {
  if (!filter) return null;
  return {
    statuses: (filter.status as TaskStatus[] | null | undefined) ?? null,
    kinds: filter.kind ?? null,
    labels: (filter.labels as Record<string, string> | null | undefined) ?? null,
    createdAfter: filter.createdAfter ?? null,
    createdBefore: filter.createdBefore ?? null,
    owner: filter.owner ?? null,
    parentId: filter.parentId == null ? null : String(filter.parentId),
  };
}

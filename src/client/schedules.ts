import { TaskHandle } from './handle.js';
import { type ClientTask, TASK_FIELDS, type TaskStatus } from './task.js';
import type { Transport } from './transport.js';

/** What `schedules.set` takes (the server's ScheduleInput); fields added later pass through. */
export interface ScheduleInput {
  /** 1..128 printable characters; one schedule per owner and key. */
  key: string;
  /** Five fields, or @hourly, @daily, @weekly, @monthly. */
  cron: string;
  /** IANA name. @default "UTC" */
  timezone?: string | undefined;
  kind: string;
  input?: unknown;
  /** After a time no process ran: none, the latest, or every occurrence (at most 100). */
  missed?: 'SKIP' | 'ONCE' | 'ALL' | undefined;
  /** SKIP: no new task while the last one is active. */
  overlap?: 'ALLOW' | 'SKIP' | undefined;
  /** Omitted: as it is (false for a new schedule). */
  paused?: boolean | undefined;
  priority?: number | undefined;
  labels?: Record<string, string> | undefined;
  retry?:
    | { maxAttempts?: number; initialDelayMs?: number; factor?: number; maxDelayMs?: number }
    | undefined;
  ttlMs?: number | undefined;
  concurrencyKey?: string | undefined;
  [field: string]: unknown;
}

/** A schedule as its owner sees it. */
export interface ClientSchedule {
  key: string;
  cron: string;
  timezone: string;
  kind: string;
  input: unknown;
  missed: 'SKIP' | 'ONCE' | 'ALL';
  overlap: 'ALLOW' | 'SKIP';
  paused: boolean;
  /** The occurrence due next; null while paused. */
  nextRunAt: string | null;
  /** The occurrence (or trigger) of the last task started. */
  lastRunAt: string | null;
  /** The last task started, while it exists. */
  lastTask: { id: string; status: TaskStatus } | null;
  createdAt: string;
  updatedAt: string;
}

export interface ScheduleList {
  schedules: ClientSchedule[];
  endCursor: string | null;
  hasNextPage: boolean;
}

/** Admins act on another principal's schedules with `owner`. */
export interface OwnerOption {
  owner?: string;
}

/** Recurring work (the server's schedules): each occurrence of a cron starts one task. */
export interface ScheduleClient {
  /** Creates or replaces the schedule `input.key`. */
  set(input: ScheduleInput, options?: OwnerOption): Promise<ClientSchedule>;
  /** The schedule; null when there is none of that key. */
  get(key: string, options?: OwnerOption): Promise<ClientSchedule | null>;
  /** One page of schedules, by key. */
  list(options?: OwnerOption & { first?: number; after?: string }): Promise<ScheduleList>;
  /** Deletes the schedule (its tasks stay). @returns false when there was none */
  delete(key: string, options?: OwnerOption): Promise<boolean>;
  /** Pauses it, or resumes it from its next occurrence after now (`paused` false). */
  pause(key: string, paused: boolean, options?: OwnerOption): Promise<ClientSchedule>;
  /** Starts its task now, out of turn. */
  trigger(key: string, options?: OwnerOption): Promise<TaskHandle>;
}

const SCHEDULE_FIELDS = `key cron timezone kind input missed overlap paused nextRunAt lastRunAt
  lastTask { id status } createdAt updatedAt`;

export function scheduleClient(transport: Transport): ScheduleClient {
  const owner = (options?: OwnerOption) => options?.owner ?? null;
  return {
    async set(input, options) {
      const { upsertSchedule } = await transport.request<{ upsertSchedule: ClientSchedule }>(
        `mutation($input: ScheduleInput!, $owner: String) {
          upsertSchedule(input: $input, owner: $owner) { ${SCHEDULE_FIELDS} } }`,
        { input, owner: owner(options) },
      );
      return upsertSchedule;
    },
    async get(key, options) {
      const { schedule } = await transport.request<{ schedule: ClientSchedule | null }>(
        `query($key: String!, $owner: String) { schedule(key: $key, owner: $owner) {
          ${SCHEDULE_FIELDS} } }`,
        { key, owner: owner(options) },
      );
      return schedule;
    },
    async list(options = {}) {
      const { schedules } = await transport.request<{
        schedules: {
          edges: Array<{ node: ClientSchedule }>;
          pageInfo: { endCursor: string | null; hasNextPage: boolean };
        };
      }>(
        `query($first: Int, $after: String, $owner: String) {
          schedules(first: $first, after: $after, owner: $owner) {
            edges { node { ${SCHEDULE_FIELDS} } } pageInfo { endCursor hasNextPage } } }`,
        { first: options.first ?? null, after: options.after ?? null, owner: owner(options) },
      );
      return {
        schedules: schedules.edges.map((edge) => edge.node),
        endCursor: schedules.pageInfo.endCursor,
        hasNextPage: schedules.pageInfo.hasNextPage,
      };
    },
    async delete(key, options) {
      const { deleteSchedule } = await transport.request<{ deleteSchedule: boolean }>(
        'mutation($key: String!, $owner: String) { deleteSchedule(key: $key, owner: $owner) }',
        { key, owner: owner(options) },
      );
      return deleteSchedule;
    },
    async pause(key, paused, options) {
      const { pauseSchedule } = await transport.request<{ pauseSchedule: ClientSchedule }>(
        `mutation($key: String!, $paused: Boolean!, $owner: String) {
          pauseSchedule(key: $key, paused: $paused, owner: $owner) { ${SCHEDULE_FIELDS} } }`,
        { key, paused, owner: owner(options) },
      );
      return pauseSchedule;
    },
    async trigger(key, options) {
      const { triggerSchedule } = await transport.request<{ triggerSchedule: ClientTask }>(
        `mutation($key: String!, $owner: String) {
          triggerSchedule(key: $key, owner: $owner) { ${TASK_FIELDS} } }`,
        { key, owner: owner(options) },
      );
      return new TaskHandle(triggerSchedule.id, transport, triggerSchedule);
    },
  };
}

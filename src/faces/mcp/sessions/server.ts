import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  CancelTaskRequestSchema,
  type CreateTaskResult,
  ElicitResultSchema,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  ListTasksRequestSchema,
  ListToolsRequestSchema,
  type ListToolsResult,
  RequestSchema,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { Logger } from 'pino';
import type { Principal } from '../../../auth/principal.js';
import { ServiceError } from '../../../errors.js';
import { SCOPE_OF } from '../../../tasks/scopes.js';
import type { Actor, TaskService } from '../../../tasks/service.js';
import { isTerminal } from '../../../tasks/status.js';
import { isTaskId } from '../../../tasks/validation.js';
import { type Ask, awaitFinal } from '../core/await-final.js';
import { callerOf } from '../core/caller.js';
import { INVALID_PARAMS, RpcError, rpcErrorOf, taskNotFound } from '../core/errors.js';
import { LABELS_META_KEY, taskMeta, toolFailure } from '../core/results.js';
import type { Shutdown } from '../core/shutdown.js';
import { kindNamed, SERVER_INFO, toolsOf } from '../core/tools.js';
import { callToolResultOf, mcpTaskOf } from './wire.js';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** §9: what `initialize` announces. */
export const CAPABILITIES = {
  tools: {},
  tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
};
/** `tasks/list` pages hold at most this many tasks. */
const LIST_PAGE = 20;

/** Only Server's elicitation helper would use a validator; one for all sessions, not one each. */
const validator = new AjvJsonSchemaValidator();

/**
 * The request's params as sent: the SDK's schemas would refuse a non-string `taskId` with an
 * unmasked validation message, where §9 wants the one "Task not found." for every bad id.
 */
const lenient = <M>(schema: { shape: { method: M } }) =>
  RequestSchema.extend({ method: schema.shape.method });

/** The principal the HTTP gate verified for this request (it passes it in `authInfo.extra`). */
function principalOf(extra: Extra): Principal {
  const principal = extra.authInfo?.extra?.principal as Principal | undefined;
  if (!principal) throw new Error('MCP request without a verified principal');
  return principal;
}

const actorOf = (extra: Extra): Actor => callerOf(principalOf(extra));

function taskIdOf(params: unknown): string {
  const taskId = (params as { taskId?: unknown } | undefined)?.taskId;
  if (typeof taskId !== 'string' || !isTaskId(taskId)) throw taskNotFound();
  return taskId;
}

export interface McpServerDeps {
  tasks: TaskService;
  log: Logger;
  shutdown: Shutdown;
}

/** One session's MCP server: the SDK's low-level Server with this service's handlers. */
export function createMcpServer({ tasks, log, shutdown }: McpServerDeps): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: CAPABILITIES,
    jsonSchemaValidator: validator,
  });
  server.onerror = (err) => log.debug({ err }, 'MCP transport');
  // The kinds are fixed when the service is built; listing them sorts them, once per call.
  const kinds = tasks.listKinds();

  /** Runs a handler, turning what it throws into the §9 JSON-RPC errors. */
  const guarded =
    <P, R>(method: string, run: (request: P, extra: Extra) => Promise<R>) =>
    async (request: P, extra: Extra): Promise<R> => {
      try {
        return await run(request, extra);
      } catch (err) {
        throw rpcErrorOf(err, log, method);
      }
    };

  /** Waits for the task's final state, asking its questions if this client can answer them. */
  const finalResult = async (extra: Extra, taskId: string): Promise<CallToolResult> => {
    const principal = principalOf(extra);
    const elicitation = server.getClientCapabilities()?.elicitation;
    const canAsk =
      elicitation !== undefined &&
      (elicitation.form !== undefined || elicitation.url === undefined) &&
      principal.scopes.has(SCOPE_OF.provideTaskInput);
    const ask: Ask = (params, signal, timeout) =>
      server.request({ method: 'elicitation/create', params }, ElicitResultSchema, {
        relatedRequestId: extra.requestId,
        signal,
        timeout,
      });
    const task = await shutdown.track(
      awaitFinal({
        tasks,
        actor: actorOf(extra),
        taskId,
        signal: extra.signal,
        stopping: shutdown.signal,
        ask: canAsk ? ask : undefined,
        tokenExpiresAt: principal.expiresAt,
        log,
      }),
    );
    return callToolResultOf(task);
  };

  server.setRequestHandler(
    ListToolsRequestSchema,
    // §9: every tool may be called either way, whatever its kind says of §9b.
    guarded('tools/list', async () => ({
      tools: toolsOf(kinds, () => 'optional') as ListToolsResult['tools'],
    })),
  );

  server.setRequestHandler(
    CallToolRequestSchema,
    guarded('tools/call', async (request, extra): Promise<CallToolResult | CreateTaskResult> => {
      const { name, arguments: input, task: taskParams, _meta: meta } = request.params;
      kindNamed(kinds, name);
      let started: Awaited<ReturnType<TaskService['start']>>;
      try {
        started = await tasks.start(actorOf(extra), {
          kind: name,
          input: input ?? {},
          ttlMs: taskParams?.ttl ?? null,
          labels: meta?.[LABELS_META_KEY],
        });
      } catch (err) {
        // Without `task` the caller wants the tool's answer: a refused argument is one.
        if (!taskParams && err instanceof ServiceError && err.code === 'BAD_USER_INPUT') {
          return toolFailure(err.code, err.message);
        }
        throw err;
      }
      if (taskParams) return { task: mcpTaskOf(started.task), _meta: taskMeta(started.task) };
      return finalResult(extra, started.task.id);
    }),
  );

  server.setRequestHandler(
    lenient(GetTaskRequestSchema),
    guarded('tasks/get', async (request, extra) => {
      const task = await tasks.get(actorOf(extra), taskIdOf(request.params));
      if (!task) throw taskNotFound();
      return { ...mcpTaskOf(task), _meta: taskMeta(task) };
    }),
  );

  server.setRequestHandler(
    lenient(GetTaskPayloadRequestSchema),
    guarded('tasks/result', (request, extra) => finalResult(extra, taskIdOf(request.params))),
  );

  server.setRequestHandler(
    lenient(ListTasksRequestSchema),
    guarded('tasks/list', async (request, extra) => {
      const cursor = (request.params as { cursor?: unknown } | undefined)?.cursor;
      if (cursor !== undefined && typeof cursor !== 'string') {
        throw new RpcError(INVALID_PARAMS, 'Malformed cursor.');
      }
      // Labels in the request's _meta filter the list (every pair must match).
      const labels = (request.params as { _meta?: Record<string, unknown> } | undefined)?._meta?.[
        LABELS_META_KEY
      ];
      const page = await tasks.list(actorOf(extra), {
        first: LIST_PAGE,
        after: cursor ?? null,
        filter: labels === undefined ? null : { labels: labels as Record<string, string> },
      });
      return {
        tasks: page.tasks.map(mcpTaskOf),
        // MCP's Task has no _meta: the labels of the page's tasks go in the result's, by id.
        _meta: { [LABELS_META_KEY]: Object.fromEntries(page.tasks.map((t) => [t.id, t.labels])) },
        ...(page.hasNextPage && page.endCursor ? { nextCursor: page.endCursor } : {}),
      };
    }),
  );

  server.setRequestHandler(
    lenient(CancelTaskRequestSchema),
    guarded('tasks/cancel', async (request, extra) => {
      const taskId = taskIdOf(request.params);
      // The service answers a second cancel with the task unchanged; §9 refuses every final task.
      const task = await tasks.get(actorOf(extra), taskId);
      if (!task) throw taskNotFound();
      if (isTerminal(task.status)) {
        throw new RpcError(INVALID_PARAMS, `The task is already ${task.status}.`, {
          code: 'TASK_TERMINAL',
        });
      }
      const cancelled = await tasks.cancel(actorOf(extra), taskId);
      return { ...mcpTaskOf(cancelled), _meta: taskMeta(cancelled) };
    }),
  );

  return server;
}

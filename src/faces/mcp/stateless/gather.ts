import { ElicitResultV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import type { TaskKind } from '../../../tasks/kinds.js';
import { isFlatForm } from '../core/await-final.js';
import { isRecord } from '../core/rpc.js';

/**
 * Arguments asked for before a task starts (MCP 2026-07-28's multi round-trip requests): a
 * `tools/call` that lacks required arguments the client can be asked for answers an
 * InputRequiredResult with one form for them; the client retries the call with the answer in
 * `inputResponses`, which fills the arguments in. Nothing is stored until the arguments are
 * whole, so the task (when there is one) starts from what was gathered.
 */

/** The key of the one input request this step makes. */
export const ARGUMENTS_KEY = 'arguments';

/** The call's arguments with an accepted `inputResponses.arguments` answer merged in. */
export function gatheredArguments(input: unknown, inputResponses: unknown): unknown {
  if (!isRecord(inputResponses) || inputResponses[ARGUMENTS_KEY] === undefined) return input;
  const answer = ElicitResultV2Schema.safeParse(inputResponses[ARGUMENTS_KEY]);
  if (!answer.success || answer.data.action !== 'accept' || !isRecord(answer.data.content)) {
    return input;
  }
  return { ...(isRecord(input) ? input : {}), ...answer.data.content };
}

/**
 * The InputRequiredResult asking for the required arguments `input` lacks, when every one of
 * them fits an elicitation form and the client declared elicitation; undefined otherwise (the
 * kind's own validation then answers, as for any other argument).
 */
export function askForArguments(
  kind: TaskKind,
  input: unknown,
  capabilities: Record<string, unknown>,
): Record<string, unknown> | undefined {
  if (!isRecord(capabilities.elicitation) || !isRecord(input)) return undefined;
  const { properties, required } = kind.inputSchema as { properties?: unknown; required?: unknown };
  if (!isRecord(properties) || !Array.isArray(required)) return undefined;
  const missing = required.filter(
    (name): name is string => typeof name === 'string' && !(name in input),
  );
  if (missing.length === 0) return undefined;
  const form = {
    type: 'object',
    properties: Object.fromEntries(missing.map((name) => [name, properties[name]])),
    required: missing,
  };
  if (!isFlatForm(form)) return undefined;
  return {
    resultType: 'input_required',
    inputRequests: {
      [ARGUMENTS_KEY]: {
        method: 'elicitation/create',
        params: {
          mode: 'form',
          message: `${kind.name} needs ${missing.join(', ')}.`,
          requestedSchema: form,
        },
      },
    },
  };
}

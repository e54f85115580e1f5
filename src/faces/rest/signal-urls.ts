import { anyJson, ref } from './json-schema.js';
import { SIGNAL_TOKEN } from './params.js';
import type { OpenRoute } from './route.js';

/**
 * `POST /v1/signals/{token}` (DESIGN §16): a signal URL minted by `ctx.signalUrl`, for an
 * outside system without a bearer token. The body is the payload (any JSON; none reads as
 * null). `202` with `{ "received": true, "first" }` and nothing of the task; a token unknown,
 * used up or whose task ended is the same `404`. The token is a credential: it is never
 * logged.
 */
export const SIGNAL_URL_ROUTE: OpenRoute = {
  method: 'POST',
  path: '/v1/signals/{token}',
  operationId: 'sendSignalByUrl',
  summary: 'Send the signal a signal URL stands for',
  description:
    'A capability URL: it takes no bearer token, and answers nothing of the task. A token ' +
    'unknown, used up or whose task ended is the same 404.',
  tags: ['signals'],
  operation: null,
  params: { token: SIGNAL_TOKEN },
  body: { description: 'The payload: any JSON.', schema: anyJson('The payload.'), empty: null },
  answers: {
    202: {
      description: 'Received; `first` is false for a repeat of the payload kept.',
      schema: ref('SignalReceipt'),
    },
  },
  refusals: { 404: ['NOT_FOUND'], 422: ['BAD_USER_INPUT'] },
  logAs: { where: 'a signal URL', path: '/v1/signals/…' },
  async serve({ services, params, body }) {
    const { first } = await services.tasks.journals.signalByUrl(params.token!, body);
    return { status: 202, body: { received: true, first } };
  },
};

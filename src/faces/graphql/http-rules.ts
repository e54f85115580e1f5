import type { ExecutionResult } from 'graphql';
import { createGraphQLError, type GraphQLParams, type Plugin } from 'graphql-yoga';
import { jsonTypeRefusal, parseJson } from '../../http/json-body.js';
import { rebuilt, withoutSuggestion } from './no-suggestions.js';

/**
 * GraphQL over HTTP as DESIGN §12 has it. POST takes JSON bodies only, by the rule every face
 * shares (src/http/json-body.ts): a form, multipart or text/plain body is what a page on
 * another site can send without a preflight, so it is refused (415) before anything is
 * parsed. GET stays open for queries (yoga refuses mutations over GET). A body that is not
 * JSON gets a short coded error that echoes nothing.
 */

function refusal(
  status: number,
  code: string,
  message: string,
  fetchAPI: { Response: typeof Response },
) {
  return new fetchAPI.Response(JSON.stringify({ errors: [{ message, extensions: { code } }] }), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8' },
  });
}

async function parseJsonBody(request: Request): Promise<GraphQLParams | GraphQLParams[]> {
  const parsed = parseJson(await request.text());
  const body = parsed.ok ? parsed.value : undefined;
  if (body === null || typeof body !== 'object')
    throw createGraphQLError('The body is not a JSON object.', {
      extensions: { code: 'BAD_REQUEST', http: { status: 400 } },
    });
  return body as GraphQLParams | GraphQLParams[];
}

export function useHttpRules(): Plugin {
  return {
    onRequestParse({ request, setRequestParser, endResponse, fetchAPI }) {
      if (request.method !== 'POST') return;
      const refused = jsonTypeRefusal(request.headers.get('content-type'));
      if (refused) return endResponse(refusal(415, refused.code, refused.message, fetchAPI));
      setRequestParser(parseJsonBody);
    },
  };
}

/**
 * Every error gets `extensions.code`: a request refused before execution (variables that do
 * not coerce) is BAD_USER_INPUT, anything else without one INTERNAL_SERVER_ERROR. In
 * production, suggestions ("Did you mean …?") are cut from every message.
 */
export function useCodedErrors(production: boolean): Plugin {
  const recode = (result: ExecutionResult): ExecutionResult | undefined => {
    if (!result.errors?.length) return undefined;
    let changed = false;
    const fallback = 'data' in result ? 'INTERNAL_SERVER_ERROR' : 'BAD_USER_INPUT';
    const errors = result.errors.map((error) => {
      const message = production ? withoutSuggestion(error.message) : error.message;
      if (error.extensions?.code && message === error.message) return error;
      changed = true;
      return rebuilt(error, message, {
        ...error.extensions,
        code: error.extensions?.code ?? fallback,
      });
    });
    return changed ? { ...result, errors } : undefined;
  };
  return {
    onExecute: () => ({
      onExecuteDone: ({ result, setResult }) => {
        if (Symbol.asyncIterator in result) return;
        const coded = recode(result);
        if (coded) setResult(coded);
      },
    }),
    onSubscribe: () => ({
      onSubscribeResult: ({ result, setResult }) => {
        if (Symbol.asyncIterator in result) return;
        const coded = recode(result);
        if (coded) setResult(coded);
      },
    }),
  };
}

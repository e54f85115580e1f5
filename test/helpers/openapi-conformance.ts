import { restDocument } from '../../src/faces/rest/table.js';
import { OpenApiChecker } from './openapi-check.js';

/**
 * Every REST answer the suite receives, held to the OpenAPI document (issue 42): the setup file
 * (test/openapi-setup.ts) wraps the process's `fetch` once, so an answer from a path of the
 * document, whoever asked (test/helpers/rest.ts, a raw fetch, the CLI's client), is checked. A
 * mismatch rejects that fetch and is kept, so the test fails in its `afterEach` even when the
 * rejection was caught.
 */

interface Conformance {
  checker: OpenApiChecker;
  mismatches: string[];
}

const KEY = Symbol.for('taskhandle.test.openapiConformance');
const holder = globalThis as typeof globalThis & { [KEY]?: Conformance };

function methodOf(input: RequestInfo | URL, init?: RequestInit): string {
  return init?.method ?? (input instanceof Request ? input.method : 'GET');
}

function urlOf(input: RequestInfo | URL): string {
  return input instanceof Request ? input.url : String(input);
}

/** Wraps `fetch`, once per process. */
export function checkRestAnswers(): void {
  if (holder[KEY]) return;
  const state: Conformance = {
    checker: new OpenApiChecker(restDocument() as never),
    mismatches: [],
  };
  holder[KEY] = state;
  const original = globalThis.fetch;
  globalThis.fetch = async function checkedFetch(input, init) {
    const response = await original(input, init);
    const url = urlOf(input);
    if (!state.checker.covers(url)) return response;
    // Read from a copy: the caller still reads the answer as it came.
    const text = await response
      .clone()
      .text()
      .catch(() => null);
    if (text === null) return response; // cut off (aborted, reset): nothing whole to judge
    const found = state.checker.check({
      method: methodOf(input, init),
      url,
      status: response.status,
      headers: response.headers,
      text,
    });
    if (found.length === 0) return response;
    state.mismatches.push(...found);
    throw new Error(`The answer does not conform to openapi.json:\n${found.join('\n')}`);
  };
}

/** The mismatches seen since the last call, which are then forgotten. */
export function takeMismatches(): string[] {
  return holder[KEY]?.mismatches.splice(0) ?? [];
}

/** A plain-HTTP client for the REST face (`/v1/jobs`), as a test sees it. */
export interface RestResponse<T = any> {
  status: number;
  headers: Headers;
  /** The raw body text (for byte-for-byte comparisons). */
  text: string;
  /** The parsed body; undefined when it is not JSON. */
  body: T;
}

export interface RestCall {
  token?: string | null;
  /** An object is sent as JSON; a string is sent as is (for malformed bodies). */
  body?: unknown;
  headers?: Record<string, string>;
}

export async function rest<T = any>(
  baseUrl: string,
  method: string,
  path: string,
  call: RestCall = {},
): Promise<RestResponse<T>> {
  const headers: Record<string, string> = { ...call.headers };
  if (call.token) headers.authorization = `Bearer ${call.token}`;
  let body: string | undefined;
  if (call.body !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = typeof call.body === 'string' ? call.body : JSON.stringify(call.body);
  }
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, text, body: parsed as T };
}

/** Binds `rest` to one app's base URL. */
export function restClient(baseUrl: string) {
  return <T = any>(method: string, path: string, call?: RestCall) =>
    rest<T>(baseUrl, method, path, call);
}

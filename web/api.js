// The dashboard's only way to the server: GraphQL over fetch, subscriptions over graphql-ws.
import { createClient } from '/dashboard/vendor/graphql-ws/client.js';

export const TASK = `id kind status statusMessage progress createdAt lastUpdatedAt expiresAt
  version input result owner error { code message } inputRequest { key message schema }
  attempt maxAttempts runAt heldBecause lastError { code message } labels retryOf scheduleKey parentId`;

/** A GraphQL error the page can show; `code` is its extensions.code. */
export class ApiError extends Error {
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}

export class Api {
  /** @param {string} token @param {(reason: string) => void} onRefused */
  constructor(token, onRefused) {
    this.token = token;
    this.onRefused = onRefused;
    const url = new URL('/graphql', location.href);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    this.ws = createClient({
      url: url.href,
      connectionParams: { authorization: `Bearer ${token}` },
      retryAttempts: Infinity,
      shouldRetry: (event) => event?.code !== 4403,
      on: {
        closed: (event) => {
          if (event?.code === 4403) onRefused('The server refused the token, or it expired.');
          this.onLive?.(false);
        },
        connected: () => this.onLive?.(true),
      },
    });
  }

  async request(query, variables = {}) {
    const response = await fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.token}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = await response.json().catch(() => ({}));
    const error = body.errors?.[0];
    if (error) {
      const code = error.extensions?.code;
      if (code === 'UNAUTHENTICATED') this.onRefused(error.message);
      throw new ApiError(error.message, code);
    }
    if (!body.data) throw new ApiError(`The server answered ${response.status}.`);
    return body.data;
  }

  /** Calls `onData` with each result's data; returns the unsubscribe function. */
  subscribe(query, variables, onData, onError = () => {}) {
    return this.ws.subscribe(
      { query, variables },
      {
        next: (value) => {
          if (value.errors?.length)
            onError(new ApiError(value.errors[0].message, value.errors[0].extensions?.code));
          else onData(value.data);
        },
        error: (err) => onError(err),
        complete: () => {},
      },
    );
  }

  dispose() {
    this.ws.dispose();
  }
}

/** The claims of a JWT, unverified: only to label the page (the server checks every call). */
export function claimsOf(token) {
  try {
    const part = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(part));
  } catch {
    return {};
  }
}

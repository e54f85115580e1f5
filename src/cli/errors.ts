import type { ClientError } from '../client/index.js';

/** A failure the command reports as one line on stderr, exiting with `exitCode`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
  }
}

const TOKEN_HINT =
  'Pass --token or set TASKHANDLE_TOKEN (`taskhandle token --sub NAME` mints one).';

/** The one line a client failure becomes, with what to do about it. */
export function explain(err: ClientError): CliError {
  switch (err.code) {
    case 'UNAUTHENTICATED':
      return new CliError(
        `${err.message.startsWith('the server refused') ? err.message : `the server refused the token: ${err.message}`}. ${TOKEN_HINT}`,
      );
    case 'UNREACHABLE':
      return new CliError(`${err.message}. Is it running? Pass --url or set TASKHANDLE_URL.`);
    case 'BAD_RESPONSE':
      return new CliError(`${err.message}. Is --url right?`);
    default:
      return new CliError(`${err.code}: ${err.message}`);
  }
}

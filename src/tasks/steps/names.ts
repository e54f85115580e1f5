import { ServiceError } from '../../errors.js';

/** A step's, wait's or signal's name: 1..128 printable ASCII characters (DESIGN §16). */
const NAME = /^[\x20-\x7e]{1,128}$/;

/**
 * @throws ServiceError BAD_USER_INPUT for a name that is not 1..128 printable characters
 * @returns the name
 */
export function checkStepName(name: unknown, what = 'step name'): string {
  if (typeof name !== 'string' || !NAME.test(name))
    throw new ServiceError(
      'BAD_USER_INPUT',
      `A ${what} must be 1 to 128 printable ASCII characters, got ${JSON.stringify(String(name)).slice(0, 140)}.`,
    );
  return name;
}

/** A step result's largest JSON text. */
export const MAX_STEP_RESULT_BYTES = 1_048_576;

import { afterEach } from 'vitest';
import { checkRestAnswers, takeMismatches } from './helpers/openapi-conformance.js';

/**
 * On in every test file (vitest.config.ts `setupFiles`): each REST answer is checked against
 * openapi.json, and a test during which one did not conform fails.
 */
checkRestAnswers();

afterEach(() => {
  const mismatches = takeMismatches();
  if (mismatches.length)
    throw new Error(`REST answers that do not conform to openapi.json:\n${mismatches.join('\n')}`);
});

import { existsSync } from 'node:fs';
import { describe } from 'vitest';

/** Debian's Chromium, as `.ci/run` installs it (or CHROMIUM_PATH). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Headless on a closed network: no background requests, no sandbox (root in CI). */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * `describe` for a suite that needs the browser. Without Chromium it is skipped on a
 * developer's machine, with a line saying why; under CI (`CI` set) it always runs, so a
 * missing browser fails the run instead of passing it silently. `SKIP_BROWSER_SUITES=1`
 * skips it on purpose (CI's runs under further Node versions, .ci/node.sh).
 */
export function browserSuite(name: string): {
  suite: ReturnType<typeof describe.skipIf>;
  title: string;
} {
  const why = process.env.SKIP_BROWSER_SUITES
    ? 'SKIP_BROWSER_SUITES is set'
    : !existsSync(CHROMIUM) && !process.env.CI
      ? `no Chromium at ${CHROMIUM}`
      : undefined;
  if (why && !process.env.SKIP_BROWSER_SUITES)
    console.warn(`${name}: skipped, ${why} (apt-get install chromium)`);
  return {
    suite: describe.skipIf(why !== undefined),
    title: why ? `${name} (skipped: ${why})` : name,
  };
}

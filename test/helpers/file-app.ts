import { afterAll, beforeAll } from 'vitest';
import { ADMIN_SCOPES, startTestApp, type TestApp, type TestAppOptions } from './app.js';

/**
 * The setup most suites share: one app for the file, started before its tests and stopped
 * after them, and read-write tokens for alice and bob and an admin's (`root`, every scope).
 * `useFileApp()` at the top of a file starts it; the bindings below then hold them (ES
 * modules export them live).
 */

export let t: TestApp;
export let alice: string;
export let bob: string;
export let admin: string;

export function useFileApp(options: TestAppOptions = {}): void {
  let started: TestApp | undefined;
  beforeAll(async () => {
    started = await startTestApp(options);
    t = started;
    [alice, bob, admin] = await Promise.all([
      t.token('alice'),
      t.token('bob'),
      t.token('root', ADMIN_SCOPES),
    ]);
  });
  afterAll(() => started?.stop());
}

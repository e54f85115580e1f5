/**
 * The A2A conformance kit's fixture agent: taskhandle as any user's server would build it
 * (`createApp` from the package), with one kind, `tck` (./kind.ts), served as the default
 * skill, so the kit's plain messages start it. Configured from the environment like
 * `npm start`:
 *
 *   node --import tsx test/a2a-tck/server.ts
 *
 * It prints the base URL on its first line of stdout once it listens. docs/a2a.md says how
 * the kit is run against it.
 */
import { createApp, loadConfig } from '../../src/index.js';
import { tckKind } from './kind.js';

const app = await createApp({
  config: loadConfig({ ...process.env, A2A_DEFAULT_SKILL: tckKind.name }),
  replaceBuiltInKinds: true,
  kinds: [tckKind],
});
console.log(await app.listen());
const stop = () => void app.stop().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);

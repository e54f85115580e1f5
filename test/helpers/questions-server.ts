import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import { survey } from './survey-kind.js';

/**
 * The server as `npm start` builds it, in a process of its own, with one more kind: `survey`
 * (./survey-kind.ts) asks for a `name` and an `age` at once.
 * It prints `{ msg: 'questions server listening', url }` once it listens.
 */
const app = await createApp({ config: loadConfig(), kinds: [survey] });
const url = await app.listen();
console.log(JSON.stringify({ msg: 'questions server listening', url, pid: process.pid }));
process.on('SIGTERM', () => void app.stop().then(() => process.exit(0)));

import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { defineTaskKind } from '../../src/tasks/kinds.js';

/**
 * The server as `npm start` builds it, in a process of its own, with one more kind: `survey`
 * asks for a `name` and an `age` at once and answers with both and the attempt that got them.
 * It prints `{ msg: 'questions server listening', url }` once it listens.
 */
const survey = defineTaskKind<Record<string, never>, unknown>({
  name: 'survey',
  description: 'asks for a name and an age at once',
  inputSchema: { type: 'object' },
  async run({ attempt, requestInputs }) {
    const { name, age } = await requestInputs<{ name: { name: string }; age: { n: number } }>([
      {
        key: 'name',
        message: 'Your name?',
        schema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      },
      {
        key: 'age',
        message: 'Your age?',
        schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
      },
    ]);
    return { name: name.name, age: age.n, attempt, pid: process.pid };
  },
});

const app = await createApp({ config: loadConfig(), kinds: [survey] });
const url = await app.listen();
console.log(JSON.stringify({ msg: 'questions server listening', url, pid: process.pid }));
process.on('SIGTERM', () => void app.stop().then(() => process.exit(0)));

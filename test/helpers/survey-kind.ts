import { defineTaskKind } from '../../src/tasks/kinds.js';

/**
 * `survey` asks for a `name` and an `age` at once and answers with both, the attempt that
 * got them and the process that ran it.
 */
export const survey = defineTaskKind<Record<string, never>, unknown>({
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

import { defineTaskKind } from '../tasks/kinds.js';

interface Decision {
  approved: boolean;
  comment?: string;
}

/** Asks a person to approve: input key `decision`, answered with `{ approved, comment? }`. */
export const approval = defineTaskKind<
  { question: string },
  { approved: boolean; comment: string | null }
>({
  name: 'approval',
  description:
    'Asks the owner the `question`; completes with their decision (input key `decision`).',
  inputSchema: {
    type: 'object',
    properties: { question: { type: 'string', minLength: 1, maxLength: 10_000 } },
    required: ['question'],
    additionalProperties: false,
  },
  pollIntervalMs: 2_000,
  async run({ input, requestInput }) {
    const decision = await requestInput<Decision>({
      key: 'decision',
      message: input.question,
      schema: {
        type: 'object',
        properties: { approved: { type: 'boolean' }, comment: { type: 'string' } },
        required: ['approved'],
        additionalProperties: false,
      },
    });
    return { approved: decision.approved, comment: decision.comment ?? null };
  },
});

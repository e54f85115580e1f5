import { builder } from './builder.js';

/** `StartTaskInput.debounce` (DESIGN §17); the domain checks the ranges. */
export const DebounceInput = builder.inputType('DebounceInput', {
  description:
    'While a task of yours with this kind and key has not started, a start with the key replaces its input and labels, moves it to delayMs from now (never past its first start + maxDelayMs) and returns it: one task per burst, with the last input.',
  fields: (t) => ({
    key: t.string({
      required: true,
      description: '1..128 printable characters; one waiting task per kind and key.',
    }),
    delayMs: t.int({
      required: true,
      description: '0..86 400 000: the task runs this long after the latest start of its burst.',
    }),
    maxDelayMs: t.int({
      description: 'delayMs..86 400 000: but at most this long after the first. Default: no cap.',
    }),
  }),
});

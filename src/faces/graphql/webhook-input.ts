import { builder } from './builder.js';

/** `StartTaskInput.webhook` (DESIGN §11). */
export const TaskWebhookInput = builder.inputType('TaskWebhookInput', {
  fields: (t) => ({
    url: t.string({
      required: true,
      description: 'http(s), at most 2 048 characters, no credentials, a public address.',
    }),
    secret: t.string({
      description: 'whsec_ + base64 of 24..64 bytes; without one the server makes one.',
    }),
  }),
});

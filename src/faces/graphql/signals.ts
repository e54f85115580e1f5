import { builder } from './builder.js';
import { actor, TaskRef } from './task.js';

/** DESIGN §16: a signal to a task's handler, by its owner or an admin. */
builder.mutationFields((t) => ({
  signalTask: t.field({
    type: TaskRef,
    description:
      "Sends the signal `name` to a task's handler (ctx.waitForSignal): the first payload is kept, also before the handler waits; the same payload again answers as the first; another is SIGNAL_ALREADY_SENT.",
    authScopes: { write: true },
    args: {
      id: t.arg.id({ required: true }),
      name: t.arg.string({ required: true }),
      payload: t.arg({ type: 'JSON' }),
    },
    resolve: async (_root, { id, name, payload }, context) =>
      (await context.tasks.journals.signal(actor(context), String(id), name, payload ?? null)).task,
  }),
}));

// The start form: a kind, a form made from its input schema, retention and idempotency key.
import { TASK } from './api.js';
import { openDetail } from './detail.js';
import { upsert } from './list.js';
import { $, state } from './page.js';
import { schemaForm } from './schema-form.js';
import { h, richText } from './view.js';

let startFields = null;

/** Fills the kind selector with the server's kinds (read at sign-in). */
export function showKinds() {
  $('kind').replaceChildren(...state.kinds.map((k) => h('option', { value: k.name }, k.name)));
  renderKind();
}

export function renderKind() {
  const kind = state.kinds.find((k) => k.name === $('kind').value);
  $('kind-description').replaceChildren(...richText(kind?.description));
  startFields = schemaForm(kind?.inputSchema, 'start');
  $('kind-fields').replaceChildren(startFields.element);
}

export async function start(event) {
  event.preventDefault();
  const error = $('start-error');
  error.hidden = true;
  try {
    const ttl = $('ttl').value;
    const input = {
      kind: $('kind').value,
      input: startFields.read() ?? {},
      ttlMs: ttl ? Number(ttl) : null,
      idempotencyKey: $('key').value || null,
    };
    const { startTask } = await state.api.request(
      `mutation($input: StartTaskInput!) { startTask(input: $input) { ${TASK} } }`,
      { input },
    );
    if (!state.owner || state.owner === state.me) upsert(startTask);
    openDetail(startTask.id);
  } catch (err) {
    error.hidden = false;
    error.textContent = err.message;
  }
}

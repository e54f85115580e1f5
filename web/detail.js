// One task in detail, live through taskUpdated: its facts, input and result, and the form
// that answers its question.
import { TASK } from './api.js';
import { cancel, upsert } from './list.js';
import { $, flash, state } from './page.js';
import { schemaForm } from './schema-form.js';
import { h, isFinal, jsonBlock, labelChips, progressBar, statusPill, workNote } from './view.js';

let stopDetail = () => {};
let answerForm = null; // { key, element, form } kept across updates while the same question is open
let refusal = null; // { id, text }: why Run again was refused, shown until another task opens

export function openDetail(id) {
  stopDetail();
  state.selected = id;
  answerForm = null;
  refusal = null;
  $('detail').hidden = false;
  const known = state.tasks.get(id);
  if (known) renderDetail(known);
  else {
    // Not in the list (another filter, say): taskUpdated sends its state first.
    $('detail-title').replaceChildren('Task');
    $('detail-body').replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
  }
  stopDetail = state.api.subscribe(
    `subscription($id: ID!) { taskUpdated(id: $id) { ${TASK} } }`,
    { id },
    (data) => upsert(data.taskUpdated),
    (err) => flash(err.message),
  );
  $('detail').scrollIntoView({ block: 'nearest', behavior: 'smooth' });
}

export function closeDetail() {
  stopDetail();
  state.selected = null;
  $('detail').hidden = true;
}

export function renderDetail(task) {
  if (!task) return;
  const mine = !state.owner || state.owner === state.me;
  const facts = [
    ['ID', h('code', { class: 'mono' }, task.id)],
    ['Created', new Date(task.createdAt).toLocaleString()],
    ['Updated', new Date(task.lastUpdatedAt).toLocaleString()],
    ['Expires', new Date(task.expiresAt).toLocaleString()],
    ['Version', String(task.version)],
  ];
  if (workNote(task)) facts.push(['Attempts', workNote(task)]);
  if (task.owner) facts.push(['Owner', task.owner]);
  if (Object.keys(task.labels ?? {}).length) facts.push(['Labels', labelChips(task.labels)]);
  if (task.scheduleKey) facts.push(['Schedule', task.scheduleKey]);
  if (task.retryOf)
    facts.push([
      'Runs again',
      h(
        'button',
        {
          type: 'button',
          class: 'link mono',
          title: 'Open the task this one runs again',
          onclick: () => openDetail(task.retryOf),
        },
        task.retryOf,
      ),
    ]);
  $('detail-title').replaceChildren(task.kind, ' ', statusPill(task));
  const body = [
    h('dl', { class: 'facts' }, ...facts.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
    progressBar(task),
  ];
  if (task.statusMessage) body.push(h('p', { class: 'status-message' }, task.statusMessage));
  if (task.status === 'INPUT_REQUIRED' && task.inputRequest && mine) body.push(answerSection(task));
  if (task.error)
    body.push(
      h(
        'div',
        { class: 'failure', role: 'alert' },
        h('strong', {}, task.error.code),
        ' ',
        task.error.message,
      ),
    );
  if (task.status === 'COMPLETED') body.push(h('h3', {}, 'Result'), jsonBlock(task.result, !mine));
  body.push(h('h3', {}, 'Input'), jsonBlock(task.input, !mine));
  if (!isFinal(task.status))
    body.push(
      h(
        'div',
        { class: 'row-actions' },
        h(
          'button',
          { type: 'button', class: 'danger', onclick: () => cancel(task.id) },
          'Cancel task',
        ),
      ),
    );
  if ((task.status === 'FAILED' || task.status === 'CANCELLED') && mine)
    body.push(
      h(
        'div',
        { class: 'row-actions' },
        h(
          'button',
          { type: 'button', class: 'primary', onclick: () => runAgain(task.id) },
          'Run again',
        ),
      ),
    );
  if (refusal?.id === task.id) body.push(h('p', { class: 'error', role: 'alert' }, refusal.text));
  $('detail-body').replaceChildren(...body);
}

/** retryTask: the task runs again as a new one, which the panel then shows (DESIGN §15). */
async function runAgain(id) {
  try {
    const { retryTask } = await state.api.request(
      `mutation($id: ID!) { retryTask(id: $id) { ${TASK} } }`,
      { id },
    );
    upsert(retryTask);
    openDetail(retryTask.id);
  } catch (err) {
    refusal = { id, text: err.code ? `${err.code}: ${err.message}` : err.message };
    renderDetail(state.tasks.get(id));
  }
}

function answerSection(task) {
  const { key, message, schema } = task.inputRequest;
  if (answerForm?.key !== `${task.id}:${key}`) {
    const form = schemaForm(schema, 'answer');
    const error = h('p', { class: 'error', role: 'alert', hidden: true });
    const element = h(
      'form',
      { class: 'answer', 'aria-label': 'Answer' },
      h('h3', {}, 'Input needed'),
      h('p', { class: 'question' }, message),
      form.element,
      error,
      h('button', { type: 'submit', class: 'primary' }, 'Send answer'),
    );
    element.addEventListener('submit', async (event) => {
      event.preventDefault();
      try {
        const value = form.read() ?? {};
        const answered = await state.api.request(
          `mutation($id: ID!, $key: String!, $value: JSON!) { provideTaskInput(id: $id, key: $key, value: $value) { ${TASK} } }`,
          { id: task.id, key, value },
        );
        upsert(answered.provideTaskInput);
      } catch (err) {
        error.hidden = false;
        error.textContent = err.message;
      }
    });
    answerForm = { key: `${task.id}:${key}`, element };
  }
  return answerForm.element;
}

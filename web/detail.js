// One task in detail, live through taskUpdated: its facts, input and result, the form that
// answers its question, and its journal and children (steps.js), the children followed
// through tasksUpdated with their parent as the filter.
import { TASK } from './api.js';
import { cancel, upsert } from './list.js';
import { $, flash, state } from './page.js';
import { schemaForm } from './schema-form.js';
import { childList, forgetForms, STEPS, taskLink, timeline } from './steps.js';
import {
  h,
  heldNote,
  isFinal,
  jsonBlock,
  labelChips,
  progressBar,
  statusPill,
  workNote,
} from './view.js';

let stopDetail = () => {};
let answerForm = null; // { key, element, form } kept across updates while the same question is open
let refusal = null; // { id, text }: why Run again was refused, shown until another task opens
let journal = { id: null, steps: [] }; // the open task's steps, read with each of its changes
let children = { id: null, ids: [], more: false }; // the open task's children, newest first
let rereading = null; // { id, again }: a read of the journal in flight, and whether to read again

export function openDetail(id) {
  stopDetail();
  state.selected = id;
  answerForm = null;
  refusal = null;
  journal = { id, steps: [] };
  children = { id, ids: [], more: false };
  forgetForms();
  $('detail').hidden = false;
  const known = state.tasks.get(id);
  if (known) renderDetail(known);
  else {
    // Not in the list (another filter, say): taskUpdated sends its state first.
    $('detail-title').replaceChildren('Task');
    $('detail-body').replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
  }
  const stopTask = state.api.subscribe(
    `subscription($id: ID!) { taskUpdated(id: $id) { ${TASK} ${STEPS} } }`,
    { id },
    ({ taskUpdated: { steps, ...task } }) => {
      if (state.selected !== id) return;
      journal = { id, steps };
      upsert(task);
      renderDetail(state.tasks.get(id));
    },
    (err) => flash(err.message),
  );
  // A child's change is not its parent's: followed on its own, and the journal read again
  // (the child's step records how it ended).
  const stopChildren = state.api.subscribe(
    `subscription($owner: String, $filter: TaskFilter) { tasksUpdated(owner: $owner, filter: $filter) { ${TASK} } }`,
    { owner: state.owner, filter: { parentId: id } },
    ({ tasksUpdated: child }) => {
      if (state.selected !== id) return;
      if (!children.ids.includes(child.id)) children.ids.unshift(child.id);
      upsert(child);
      rereadJournal(id);
    },
    (err) => flash(err.message),
  );
  stopDetail = () => {
    stopTask();
    stopChildren();
  };
  readChildren(id);
  $('detail').scrollIntoView({ block: 'nearest', behavior: 'smooth' });
}

/** The first hundred children of the open task; any seen meanwhile stay first. */
function readChildren(id) {
  state.api
    .request(
      `query($id: ID!) { task(id: $id) { children(first: 100) { edges { node { ${TASK} } } pageInfo { hasNextPage } } } }`,
      { id },
    )
    .then(
      ({ task }) => {
        if (state.selected !== id || !task) return;
        const nodes = task.children.edges.map((e) => e.node);
        for (const child of nodes) upsert(child);
        const read = nodes.map((n) => n.id);
        const later = children.ids.filter((c) => !read.includes(c));
        children = { id, ids: [...later, ...read], more: task.children.pageInfo.hasNextPage };
        renderDetail(state.tasks.get(id));
      },
      (err) => flash(err.message),
    );
}

/** Reads the open task's journal again, one read at a time. */
function rereadJournal(id) {
  if (rereading?.id === id) {
    rereading.again = true;
    return;
  }
  rereading = { id, again: false };
  state.api
    .request(`query($id: ID!) { task(id: $id) { ${STEPS} } }`, { id })
    .then(
      ({ task }) => {
        if (state.selected === id && task) {
          journal = { id, steps: task.steps };
          renderDetail(state.tasks.get(id));
        }
      },
      (err) => flash(err.message),
    )
    .finally(() => {
      const again = rereading?.again;
      rereading = null;
      if (again && state.selected === id) rereadJournal(id);
    });
}

/** A task changed (list.js tells): the open panel follows when it is one of its children. */
export function childSeen(task) {
  if (task.parentId && task.parentId === state.selected && children.ids.includes(task.id))
    renderDetail(state.tasks.get(state.selected));
}

export function closeDetail() {
  stopDetail();
  stopDetail = () => {};
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
  if (heldNote(task)) facts.push(['Why it waits', heldNote(task)]);
  if (task.owner) facts.push(['Owner', task.owner]);
  if (Object.keys(task.labels ?? {}).length) facts.push(['Labels', labelChips(task.labels)]);
  if (task.scheduleKey) facts.push(['Schedule', task.scheduleKey]);
  if (task.parentId) facts.push(['Parent', taskLink(task.parentId, openDetail)]);
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
  if (journal.id === task.id && journal.steps.length)
    body.push(
      timeline(task, journal.steps, { open: openDetail, upsert, mayAct: mine || state.admin }),
    );
  if (children.id === task.id && children.ids.length)
    body.push(
      childList(
        children.ids.map((id) => state.tasks.get(id)).filter(Boolean),
        children.more,
        openDetail,
      ),
    );
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

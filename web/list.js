// The task table: the caller's tasks (or, for an admin, another principal's) kept live by
// tasksUpdated, one row per task, newest first.
import { TASK } from './api.js';
import { openDetail, renderDetail } from './detail.js';
import { $, flash, state } from './page.js';
import {
  h,
  isFinal,
  percent,
  progressBar,
  showProgress,
  span,
  statusPill,
  workNote,
} from './view.js';

let stopList = () => {};

export function stopWatching() {
  stopList();
}

export function watchList() {
  stopList();
  state.tasks.clear();
  state.rows.clear();
  $('rows').replaceChildren();
  $('empty').hidden = false;
  $('tasks-title').textContent = state.owner ? `Tasks of ${state.owner}` : 'Your tasks';
  const owner = state.owner;
  // Subscribe first, then read the page: no change falls between the two (versions sort it out).
  stopList = state.api.subscribe(
    `subscription($owner: String) { tasksUpdated(owner: $owner) { ${TASK} } }`,
    { owner },
    (data) => upsert(data.tasksUpdated),
    (err) => flash(err.message),
  );
  loadList();
}

/** Reads the first page; after a reconnect too, since changes made while offline were not sent. */
export function loadList() {
  const owner = state.owner;
  state.api
    .request(
      `query($owner: String) { tasks(first: 100, owner: $owner) { edges { node { ${TASK} } } } }`,
      { owner },
    )
    .then(
      (data) => {
        if (state.owner === owner) for (const e of data.tasks.edges) upsert(e.node);
      },
      (err) => flash(err.message),
    );
}

export function upsert(task) {
  const known = state.tasks.get(task.id);
  if (known && known.version >= task.version) return;
  state.tasks.set(task.id, task);
  let row = state.rows.get(task.id);
  if (!row) row = addRow(task);
  updateRow(row, task, known);
  if (state.selected === task.id) renderDetail(task);
}

function addRow(task) {
  const cells = {
    status: h('td'),
    progress: h('td', { class: 'progress-col' }),
    message: h('td', { class: 'message' }),
    age: h('td', { class: 'num', 'data-label': 'Started' }),
    expires: h('td', { class: 'num', 'data-label': 'Expires' }),
    actions: h('td', { class: 'actions' }),
  };
  const open = h(
    'button',
    { type: 'button', class: 'link', onclick: () => openDetail(task.id) },
    task.kind,
  );
  const row = h(
    'tr',
    { 'data-id': task.id },
    h('td', {}, open, h('span', { class: 'id mono' }, task.id.slice(0, 8))),
    cells.status,
    cells.progress,
    cells.message,
    cells.age,
    cells.expires,
    cells.actions,
  );
  row.cells$ = cells;
  const later = [...state.rows.values()].find(
    (r) => state.tasks.get(r.dataset.id).createdAt < task.createdAt,
  );
  $('rows').insertBefore(row, later ?? null);
  state.rows.set(task.id, row);
  $('empty').hidden = true;
  return row;
}

function updateRow(row, task, before) {
  const c = row.cells$;
  row.className = task.status.toLowerCase();
  if (before?.status !== task.status) {
    c.status.replaceChildren(statusPill(task));
    c.actions.replaceChildren(...actionsOf(task));
  }
  const meter = c.progress.querySelector('[role=progressbar]');
  if (meter && before?.status === task.status) {
    showProgress(meter, task);
    c.progress.querySelector('.pct').textContent = `${percent(task)}%`;
  } else c.progress.replaceChildren(progressBar(task));
  c.message.textContent = task.error
    ? `${task.error.code}: ${task.error.message}`
    : workNote(task) || (task.statusMessage ?? task.inputRequest?.message ?? '');
  tick(row, task);
}

function actionsOf(task) {
  const out = [];
  if (task.status === 'INPUT_REQUIRED' && task.inputRequest)
    out.push(
      h(
        'button',
        { type: 'button', class: 'small primary', onclick: () => openDetail(task.id) },
        'Answer',
      ),
    );
  if (task.status === 'COMPLETED' && !state.owner)
    out.push(
      h(
        'button',
        { type: 'button', class: 'small ghost', onclick: () => openDetail(task.id) },
        'Result',
      ),
    );
  if (!isFinal(task.status))
    out.push(
      h(
        'button',
        { type: 'button', class: 'small danger', onclick: () => cancel(task.id) },
        'Cancel',
      ),
    );
  return out;
}

function tick(row, task, now = Date.now()) {
  row.cells$.age.textContent = `${span(task.createdAt, now)} ago`;
  row.cells$.age.title = new Date(task.createdAt).toLocaleString();
  const left = Date.parse(task.expiresAt) - now;
  row.cells$.expires.textContent = left > 0 ? `in ${span(task.expiresAt, now)}` : 'expired';
  row.cells$.expires.title = new Date(task.expiresAt).toLocaleString();
}

/** Brings every row's age and expiry up to now. */
export function tickAll() {
  const now = Date.now();
  for (const [id, row] of state.rows) tick(row, state.tasks.get(id), now);
}

export async function cancel(id) {
  try {
    upsert(
      (await state.api.request(`mutation($id: ID!) { cancelTask(id: $id) { ${TASK} } }`, { id }))
        .cancelTask,
    );
  } catch (err) {
    flash(err.message);
  }
}

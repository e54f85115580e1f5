// The task table: the caller's tasks (or, for an admin, another principal's) kept live by
// tasksUpdated, one row per task, newest first.
import { TASK } from './api.js';
import { childSeen, openDetail, renderDetail } from './detail.js';
import { addLabel, filtering, filterRefused, shown, taskFilter } from './filter.js';
import { $, flash, state } from './page.js';
import { scheduleTaskSeen } from './schedules.js';
import {
  h,
  heldNote,
  isFinal,
  labelChips,
  percent,
  progressBar,
  showProgress,
  span,
  statusPill,
  workNote,
} from './view.js';

let stopList = () => {};
let generation = 0; // which watchList a page read belongs to: a stale answer is dropped

export function stopWatching() {
  stopList();
}

/** (Re)starts the list for the viewed principal and the filter: its subscription, then a read. */
export function watchList() {
  stopList();
  state.rows.clear();
  $('rows').replaceChildren();
  $('empty').hidden = false;
  $('empty').replaceChildren(
    ...(filtering()
      ? ['No tasks match this filter.']
      : [
          'No tasks yet. Start one here, over REST, or with ',
          h('code', {}, 'taskhandle start'),
          '.',
        ]),
  );
  $('tasks-title').textContent = state.owner ? `Tasks of ${state.owner}` : 'Your tasks';
  // Subscribe first, then read the page: no change falls between the two (versions sort it out).
  stopList = state.api.subscribe(
    `subscription($owner: String, $filter: TaskFilter) { tasksUpdated(owner: $owner, filter: $filter) { ${TASK} } }`,
    { owner: state.owner, filter: taskFilter(false) },
    (data) => upsert(data.tasksUpdated),
    (err) => flash(err.message),
  );
  loadList();
}

/** Reads the first page; after a reconnect too, since changes made while offline were not sent. */
export function loadList() {
  const asked = ++generation;
  state.api
    .request(
      `query($owner: String, $filter: TaskFilter) { tasks(first: 100, owner: $owner, filter: $filter) { edges { node { ${TASK} } } } }`,
      { owner: state.owner, filter: taskFilter() },
    )
    .then(
      (data) => {
        if (asked === generation) for (const e of data.tasks.edges) upsert(e.node);
      },
      (err) => (err.code === 'BAD_USER_INPUT' ? filterRefused(err) : flash(err.message)),
    );
}

/**
 * Takes a task's latest state from any source: its row is added, updated or (when the filter
 * no longer holds) removed, and the open panel follows it.
 */
export function upsert(task) {
  const known = state.tasks.get(task.id);
  const newer = !known || task.version > known.version;
  if (newer) state.tasks.set(task.id, task);
  const current = state.tasks.get(task.id);
  const row = state.rows.get(task.id);
  if (!shown(current)) {
    if (row) removeRow(task.id, row);
  } else if (!row) updateRow(addRow(current), current, undefined);
  else if (newer) updateRow(row, current, known);
  if (newer && state.selected === task.id) renderDetail(current);
  if (newer) childSeen(current);
  if (newer && task.scheduleKey) scheduleTaskSeen(task);
}

function removeRow(id, row) {
  row.remove();
  state.rows.delete(id);
  $('empty').hidden = state.rows.size > 0;
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
    h(
      'td',
      {},
      open,
      h('span', { class: 'id mono' }, task.id.slice(0, 8)),
      task.parentId
        ? h(
            'button',
            {
              type: 'button',
              class: 'link small child-of',
              title: 'Open the task that started this one',
              onclick: () => openDetail(task.parentId),
            },
            `↳ child of ${task.parentId.slice(0, 8)}`,
          )
        : '',
      labelChips(task.labels, (label) => addLabel(label)),
    ),
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
    : workNote(task) || heldNote(task) || (task.statusMessage ?? task.inputRequest?.message ?? '');
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

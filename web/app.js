// The dashboard: sign-in, the caller's tasks live (tasksUpdated), one task in detail
// (taskUpdated), starting, cancelling and answering through forms made from JSON schemas.
import { Api, claimsOf, TASK } from './api.js';
import { schemaForm } from './schema-form.js';
import {
  h,
  isFinal,
  jsonBlock,
  percent,
  progressBar,
  richText,
  showProgress,
  span,
  statusPill,
  workNote,
} from './view.js';

const $ = (id) => document.getElementById(id);
const state = {
  api: null,
  admin: false,
  me: '',
  owner: null,
  kinds: [],
  tasks: new Map(),
  rows: new Map(),
  selected: null,
};
let stopList = () => {};
let stopDetail = () => {};
let answerForm = null; // { key, element, form } kept across updates while the same question is open

const devToken = document.querySelector('meta[name="taskhandle-dev-token"]')?.content;

function show(signedIn) {
  $('signed-in').hidden = !signedIn;
  $('signed-out').hidden = signedIn;
  $('who').hidden = !signedIn;
}

function signOut(reason) {
  stopList();
  stopDetail();
  state.api?.dispose();
  state.api = null;
  sessionStorage.removeItem('taskhandle.token');
  $('sign-in-error').hidden = !reason;
  $('sign-in-error').textContent = reason ?? '';
  show(false);
  $('token').focus();
}

async function signIn(token) {
  const api = new Api(token, (reason) => state.api === api && signOut(reason));
  let kinds;
  try {
    ({ taskKinds: kinds } = await api.request('{ taskKinds { name description inputSchema } }'));
  } catch (err) {
    api.dispose();
    return signOut(err.message);
  }
  const claims = claimsOf(token);
  const scopes = typeof claims.scope === 'string' ? claims.scope.split(' ') : (claims.scp ?? []);
  Object.assign(state, {
    api,
    kinds,
    me: claims.sub ?? '',
    admin: scopes.includes('tasks:admin'),
    owner: null,
  });
  if (token !== devToken) sessionStorage.setItem('taskhandle.token', token);
  $('principal').textContent = state.me;
  $('principal').title = `Signed in as ${state.me}${state.admin ? ' (admin)' : ''}`;
  $('owner-form').hidden = !state.admin;
  let connections = 0;
  api.onLive = (up) => {
    if (up && ++connections > 1) loadList();
    $('live').textContent = up ? 'live' : 'reconnecting…';
    $('live').classList.toggle('up', up);
  };
  $('kind').replaceChildren(...kinds.map((k) => h('option', { value: k.name }, k.name)));
  renderKind();
  show(true);
  closeDetail();
  watchList();
}

function watchList() {
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
function loadList() {
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

function upsert(task) {
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

async function cancel(id) {
  try {
    upsert(
      (await state.api.request(`mutation($id: ID!) { cancelTask(id: $id) { ${TASK} } }`, { id }))
        .cancelTask,
    );
  } catch (err) {
    flash(err.message);
  }
}

function openDetail(id) {
  stopDetail();
  state.selected = id;
  answerForm = null;
  $('detail').hidden = false;
  renderDetail(state.tasks.get(id));
  stopDetail = state.api.subscribe(
    `subscription($id: ID!) { taskUpdated(id: $id) { ${TASK} } }`,
    { id },
    (data) => upsert(data.taskUpdated),
    (err) => flash(err.message),
  );
  $('detail').scrollIntoView({ block: 'nearest', behavior: 'smooth' });
}

function closeDetail() {
  stopDetail();
  state.selected = null;
  $('detail').hidden = true;
}

function renderDetail(task) {
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
  $('detail-body').replaceChildren(...body);
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

let startFields = null;
function renderKind() {
  const kind = state.kinds.find((k) => k.name === $('kind').value);
  $('kind-description').replaceChildren(...richText(kind?.description));
  startFields = schemaForm(kind?.inputSchema, 'start');
  $('kind-fields').replaceChildren(startFields.element);
}

async function start(event) {
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

function flash(message) {
  $('live').textContent = message;
  $('live').classList.remove('up');
}

$('sign-in').addEventListener('submit', (event) => {
  event.preventDefault();
  signIn(
    $('token')
      .value.trim()
      .replace(/^Bearer\s+/i, ''),
  );
});
$('sign-out').addEventListener('click', () => signOut());
$('owner-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const owner = $('owner').value.trim();
  state.owner = owner && owner !== state.me ? owner : null;
  closeDetail();
  watchList();
});
$('kind').addEventListener('change', renderKind);
$('start-form').addEventListener('submit', start);
$('close-detail').addEventListener('click', closeDetail);
setInterval(() => {
  const now = Date.now();
  for (const [id, row] of state.rows) tick(row, state.tasks.get(id), now);
}, 1000);

// Development signs in as `dev` (the server put its token in the page); otherwise this tab's token.
const saved = devToken ?? sessionStorage.getItem('taskhandle.token');
if (saved) signIn(saved);
else signOut();

// A task's journal and children in its panel (durable steps): the step timeline, the form
// that sends a waiting step its signal, and the children, each opening its own panel.
import { TASK } from './api.js';
import { state } from './page.js';
import { h, percent, span, statusPill } from './view.js';

/** What the panel asks of a task's journal (TaskStep). */
export const STEPS = `steps { name state attempts startedAt endedAt wakeAt childId signalUrl
  error { code message } }`;

const STATE = {
  RUNNING: ['running', 'working'],
  COMPLETED: ['done', 'completed'],
  FAILED: ['failed', 'failed'],
  SLEEPING: ['sleeping', 'waiting'],
  WAITING_SIGNAL: ['waiting for a signal', 'waiting'],
  WAITING_CHILD: ['waiting for a child', 'waiting'],
};

const clock = (iso) => new Date(iso).toLocaleTimeString();

/** How long from `from` to `to`, compactly: 0.2s, 4s, 3m. */
function took(from, to) {
  const ms = Math.max(0, Date.parse(to) - Date.parse(from));
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)}s` : span(from, Date.parse(to));
}

/** A task's id as a link to its panel. */
export function taskLink(id, open, text = id) {
  return h(
    'button',
    { type: 'button', class: 'link mono', title: 'Open this task', onclick: () => open(id) },
    text,
  );
}

// The signal forms of the open panel, kept across its updates so a payload being typed stays.
const forms = new Map();

/** Forgets the signal forms (another task's panel opens). */
export function forgetForms() {
  forms.clear();
}

function signalForm(task, step, upsert) {
  const key = `${task.id}:${step.name}`;
  if (forms.has(key)) return forms.get(key);
  const payload = h('textarea', {
    rows: '2',
    spellcheck: 'false',
    'aria-label': `Payload of signal ${step.name}`,
  });
  payload.value = '{}';
  const error = h('p', { class: 'error', role: 'alert', hidden: true });
  const form = h(
    'form',
    { class: 'signal', 'aria-label': `Signal ${step.name}` },
    payload,
    error,
    h('button', { type: 'submit', class: 'small primary' }, 'Send signal'),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.hidden = true;
    let value;
    try {
      value = JSON.parse(payload.value || 'null');
    } catch (err) {
      error.hidden = false;
      error.textContent = `The payload is not JSON: ${err.message}`;
      return;
    }
    try {
      const { signalTask } = await state.api.request(
        `mutation($id: ID!, $name: String!, $payload: JSON) { signalTask(id: $id, name: $name, payload: $payload) { ${TASK} } }`,
        { id: task.id, name: step.name, payload: value },
      );
      upsert(signalTask);
    } catch (err) {
      error.hidden = false;
      error.textContent = err.code ? `${err.code}: ${err.message}` : err.message;
    }
  });
  forms.set(key, form);
  return form;
}

function stepItem(task, step, { open, upsert, mayAct }) {
  const [label, pill] = STATE[step.state] ?? [step.state.toLowerCase(), 'working'];
  const when = [`started ${clock(step.startedAt)}`];
  if (step.endedAt)
    when.push(`ended ${clock(step.endedAt)} (${took(step.startedAt, step.endedAt)})`);
  if (step.wakeAt)
    when.push(
      `${step.state === 'SLEEPING' ? 'wakes' : 'times out'} ${clock(step.wakeAt)} (in ${span(step.wakeAt)})`,
    );
  const item = h(
    'li',
    { class: `step ${pill}`, 'data-step': step.name },
    h(
      'div',
      { class: 'step-head' },
      h('strong', { class: 'mono' }, step.name),
      h('span', { class: `pill ${pill}` }, label),
      step.attempts > 1 ? h('span', { class: 'muted small' }, `${step.attempts} runs`) : '',
    ),
    h('div', { class: 'muted small' }, when.join(' · ')),
  );
  if (step.childId)
    item.append(h('div', { class: 'small' }, 'Child ', taskLink(step.childId, open)));
  if (step.signalUrl)
    item.append(
      h(
        'div',
        { class: 'small signal-url' },
        'Signal URL (POST, no token): ',
        h('code', { class: 'mono' }, step.signalUrl),
      ),
    );
  if (step.error)
    item.append(
      h(
        'div',
        { class: 'failure small' },
        h('strong', {}, step.error.code),
        ' ',
        step.error.message,
      ),
    );
  if (step.state === 'WAITING_SIGNAL' && mayAct) item.append(signalForm(task, step, upsert));
  return item;
}

/**
 * The journal as a timeline, in the order its entries first ran. `open` opens a task's panel,
 * `upsert` takes a task's new state, `mayAct` says whether the viewer may send signals.
 */
export function timeline(task, steps, actions) {
  return h(
    'section',
    { 'aria-label': 'Steps' },
    h('h3', {}, 'Steps'),
    h('ol', { class: 'timeline' }, ...steps.map((step) => stepItem(task, step, actions))),
  );
}

/** The children listed under their parent, newest first, each opening its own panel. */
export function childList(children, more, open) {
  return h(
    'section',
    { 'aria-label': 'Children' },
    h('h3', {}, `Children (${children.length}${more ? '+' : ''})`),
    h(
      'ul',
      { class: 'children' },
      ...children.map((child) =>
        h(
          'li',
          { 'data-id': child.id },
          taskLink(child.id, open, `${child.kind} ${child.id.slice(0, 8)}`),
          statusPill(child),
          child.status === 'WORKING' && child.progress != null
            ? h('span', { class: 'muted small' }, `${percent(child)}%`)
            : '',
        ),
      ),
    ),
    more ? h('p', { class: 'muted small' }, 'The first 100 are shown.') : '',
  );
}

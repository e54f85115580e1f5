// The schedules card: the viewed principal's schedules with their next and last runs, each
// runnable now and pausable. Read again when an occurrence's time has passed, so the last run
// and the next follow the clock without a subscription of their own.
import { $, flash, state } from './page.js';
import { h, span, statusPill } from './view.js';

const SCHEDULE = `key cron timezone kind paused nextRunAt lastRunAt lastTask { id status }`;

let schedules = [];
let loadedAt = 0;
let asked = 0; // which read a page answer belongs to: a stale answer is dropped

/** Reads the first hundred schedules of the viewed principal and shows them. */
export function loadSchedules() {
  const mine = ++asked;
  loadedAt = Date.now();
  state.api
    .request(
      `query($owner: String) { schedules(first: 100, owner: $owner) { edges { node { ${SCHEDULE} } } } }`,
      { owner: state.owner },
    )
    .then(
      (data) => {
        if (mine !== asked) return;
        schedules = data.schedules.edges.map((e) => e.node);
        render();
      },
      (err) => flash(err.message),
    );
}

function render() {
  $('schedules-title').textContent = state.owner ? `Schedules of ${state.owner}` : 'Schedules';
  $('schedule-rows').replaceChildren(...schedules.map(rowOf));
  $('schedules-empty').hidden = schedules.length > 0;
  tickSchedules();
}

function rowOf(schedule) {
  const act = (label, cls, run) =>
    h('button', { type: 'button', class: `small ${cls}`, onclick: () => act$(run) }, label);
  const row = h(
    'tr',
    { 'data-key': schedule.key, class: schedule.paused ? 'paused' : '' },
    h(
      'td',
      {},
      h('span', { class: 'schedule-key' }, schedule.key),
      h('span', { class: 'id' }, schedule.kind),
    ),
    h('td', {}, h('code', {}, schedule.cron), h('span', { class: 'id' }, schedule.timezone)),
    h('td', { class: 'num next', 'data-label': 'Next run' }),
    h(
      'td',
      { class: 'num last', 'data-label': 'Last run' },
      h('span', { class: 'when' }),
      schedule.lastTask ? statusPill(schedule.lastTask) : '',
    ),
    h(
      'td',
      { class: 'actions' },
      act('Run now', 'ghost', () => trigger(schedule.key)),
      schedule.paused
        ? act('Resume', 'ghost', () => pause(schedule.key, false))
        : act('Pause', 'ghost', () => pause(schedule.key, true)),
    ),
  );
  row.schedule$ = schedule;
  return row;
}

async function act$(run) {
  try {
    await run();
  } catch (err) {
    flash(err.message);
  }
  loadSchedules();
}

const trigger = (key) =>
  state.api.request(
    'mutation($key: String!, $owner: String) { triggerSchedule(key: $key, owner: $owner) { id } }',
    { key, owner: state.owner },
  );

const pause = (key, paused) =>
  state.api.request(
    'mutation($key: String!, $paused: Boolean!, $owner: String) { pauseSchedule(key: $key, paused: $paused, owner: $owner) { key } }',
    { key, paused, owner: state.owner },
  );

let soon; // a read asked for by the tasks list, a moment later (several tasks, one read)

/**
 * A task of a schedule changed (the tasks list hears it): the schedule's last task shows its
 * status at once; a task it does not know yet is a new run, and the list is read again.
 */
export function scheduleTaskSeen(task) {
  const row = [...$('schedule-rows').children].find((r) => r.schedule$.key === task.scheduleKey);
  const last = row?.schedule$.lastTask;
  if (last?.id === task.id) {
    last.status = task.status;
    row.replaceWith(rowOf(row.schedule$));
    tickSchedules();
    return;
  }
  clearTimeout(soon);
  soon = setTimeout(loadSchedules, 200);
}

/** Brings the next and last runs up to now; reads the list again once an occurrence is past. */
export function tickSchedules() {
  const now = Date.now();
  let passed = false;
  for (const row of $('schedule-rows').children) {
    const s = row.schedule$;
    const next = row.querySelector('.next');
    next.textContent = s.paused ? 'paused' : s.nextRunAt ? `in ${span(s.nextRunAt, now)}` : '—';
    next.title = s.nextRunAt ? new Date(s.nextRunAt).toLocaleString() : '';
    const last = row.querySelector('.last .when');
    last.textContent = s.lastRunAt ? `${span(s.lastRunAt, now)} ago` : 'never';
    last.title = s.lastRunAt ? new Date(s.lastRunAt).toLocaleString() : '';
    const due = s.nextRunAt ? Date.parse(s.nextRunAt) : Number.POSITIVE_INFINITY;
    // A second's grace for the occurrence's commit; once per occurrence, not every tick.
    if (due + 1000 < now && due + 1000 > loadedAt) passed = true;
  }
  if (passed) loadSchedules();
}

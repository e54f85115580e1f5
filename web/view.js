// Small DOM helpers and the formatting the table and the task panel share.

/** Creates an element: attributes (null/false skipped), then children (strings become text). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) if (child !== '' && child != null) el.append(child);
  return el;
}

export const STATUS = {
  WORKING: 'working',
  INPUT_REQUIRED: 'input required',
  COMPLETED: 'completed',
  CANCELLED: 'cancelled',
  FAILED: 'failed',
};
export const isFinal = (status) =>
  status === 'COMPLETED' || status === 'FAILED' || status === 'CANCELLED';

/** 4s, 12m, 3h, 2d: how far `iso` is from now. */
export function span(iso, now = Date.now()) {
  const s = Math.max(0, Math.round(Math.abs(Date.parse(iso) - now) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400)
    return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`.replace(/ 0m$/, '');
  return `${Math.floor(s / 86400)}d`;
}

/**
 * How the work stands between attempts, or before the first (DESIGN §14): "attempt 2 of 3,
 * next attempt in 4s", "waiting until 14:02:00", or "" when there is nothing to say.
 */
export function workNote(task, now = Date.now()) {
  const parts = [];
  if (task.attempt > 0 && (task.maxAttempts > 1 || task.runAt))
    parts.push(`attempt ${task.attempt} of ${task.maxAttempts}`);
  if (task.runAt && !isFinal(task.status))
    parts.push(
      task.attempt > 0
        ? `next attempt in ${span(task.runAt, now)}`
        : `waiting until ${new Date(task.runAt).toLocaleString()}`,
    );
  return parts.join(', ');
}

/** Why a task waits to be claimed (DESIGN §14, §17), as "held because …" says it. */
const HELD_BECAUSE = {
  CONCURRENCY: 'its concurrency key is at its limit',
  RATE_LIMIT: 'its rate limit key is at its limit',
  TIME: 'its time has not come',
};

/** "held because …" while a task waits to be claimed, else "". */
export function heldNote(task) {
  const reason = !isFinal(task.status) && HELD_BECAUSE[task.heldBecause];
  return reason ? `held because ${reason}` : '';
}

export const percent = (task) =>
  task.status === 'COMPLETED' ? 100 : Math.round((task.progress ?? 0) * 100);

export function statusPill(task) {
  return h(
    'span',
    { class: `pill ${task.status.toLowerCase()}` },
    STATUS[task.status] ?? task.status,
  );
}

export function progressBar(task) {
  const bar = h(
    'div',
    {
      class: `meter ${task.status.toLowerCase()}`,
      role: 'progressbar',
      'aria-label': `Progress of ${task.kind} ${task.id.slice(0, 8)}`,
      'aria-valuemin': '0',
      'aria-valuemax': '100',
    },
    h('span'),
  );
  showProgress(bar, task);
  return h('div', { class: 'progress' }, bar, h('span', { class: 'pct' }, `${percent(task)}%`));
}

/**
 * Shows the task's progress on a bar from progressBar: its value, and its fill's width; a task
 * working without a progress gets the class `unknown` instead, and a sliding fill.
 */
export function showProgress(bar, task) {
  const value = percent(task);
  const unknown = task.progress == null && task.status === 'WORKING';
  bar.setAttribute('aria-valuenow', String(value));
  // Set through the CSSOM: the page's Content-Security-Policy refuses style attributes. An
  // unknown progress leaves the width to the stylesheet.
  bar.firstChild.style.width = unknown ? '' : `${value}%`;
  bar.classList.toggle('unknown', unknown);
}

/** JSON for reading: indented, or a note when the server withheld it. */
export function jsonBlock(value, withheld) {
  if (withheld) return h('p', { class: 'muted small' }, 'Hidden: only the owner sees payloads.');
  return h('pre', { class: 'json' }, JSON.stringify(value, null, 2));
}

/** Text with `code` spans, as kind descriptions are written. */
export function richText(text) {
  return String(text ?? '')
    .split('`')
    .map((part, i) => (i % 2 ? h('code', {}, part) : part))
    .filter((part) => part !== '');
}

/**
 * A task's labels as chips (`key:value`), or '' when it has none; with `onPick`, each chip is a
 * button that hands its `key:value` over (the list adds it to the filter).
 */
export function labelChips(labels, onPick) {
  const entries = Object.entries(labels ?? {});
  if (!entries.length) return '';
  return h(
    'span',
    { class: 'chips' },
    ...entries.map(([key, value]) =>
      onPick
        ? h(
            'button',
            {
              type: 'button',
              class: 'chip',
              title: `Show only tasks labelled ${key}:${value}`,
              onclick: () => onPick(`${key}:${value}`),
            },
            `${key}:${value}`,
          )
        : h('span', { class: 'chip' }, `${key}:${value}`),
    ),
  );
}

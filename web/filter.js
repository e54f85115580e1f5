// The filter bar over the task list (DESIGN §15): label chips (every pair must match), a kind
// and a status. The list's query and its tasksUpdated subscription take the same filter, and
// the page's address carries it (`?label=tenant:acme&kind=export&status=failed`), so a view can
// be shared and survives a reload.
import { $, state } from './page.js';
import { h, STATUS } from './view.js';

/** The filter in force: `labels` an object of strings, `kind` and `status` '' for any. */
export const filter = { labels: {}, kind: '', status: '' };

let changed = () => {};

/**
 * Reads the filter (and an admin's `owner`) from the page's address; `onChange` runs after
 * every change the bar makes, and with `true` on the browser's back and forward.
 */
export function initFilter(onChange) {
  changed = onChange;
  readAddress();
  $('filter-form').addEventListener('submit', (event) => {
    event.preventDefault();
    addLabel($('filter-label').value);
  });
  $('filter-kind').addEventListener('change', () => set({ kind: $('filter-kind').value }));
  $('filter-status').addEventListener('change', () => set({ status: $('filter-status').value }));
  addEventListener('popstate', () => {
    readAddress();
    showFilter();
    changed(true);
  });
}

function readAddress() {
  const query = new URLSearchParams(location.search);
  filter.labels = {};
  for (const pair of query.getAll('label')) {
    const label = labelOf(pair);
    if (label) filter.labels[label[0]] = label[1];
  }
  filter.kind = query.get('kind') ?? '';
  filter.status = (query.get('status') ?? '').toUpperCase();
  if (!(filter.status in STATUS)) filter.status = '';
  state.wantedOwner = query.get('owner') ?? null;
}

/** Puts the filter and the viewed principal in the address, as a new history entry. */
export function writeAddress() {
  const query = new URLSearchParams();
  if (state.owner) query.set('owner', state.owner);
  for (const [key, value] of Object.entries(filter.labels))
    query.append('label', `${key}:${value}`);
  if (filter.kind) query.set('kind', filter.kind);
  if (filter.status) query.set('status', filter.status.toLowerCase());
  const search = query.size ? `?${query}` : '';
  if (search !== location.search) history.pushState(null, '', `${location.pathname}${search}`);
}

/** `key:value` as [key, value] (the value may hold colons), or null. */
function labelOf(text) {
  const at = text.indexOf(':');
  const key = text.slice(0, at).trim();
  const value = text.slice(at + 1).trim();
  return at > 0 && key && value ? [key, value] : null;
}

/** Adds a label to the filter (a key already there takes the new value). */
export function addLabel(text) {
  const label = labelOf(text);
  const error = $('filter-error');
  error.hidden = !!label;
  if (!label) {
    error.textContent = 'A label filter is key:value, e.g. tenant:acme.';
    return;
  }
  $('filter-label').value = '';
  set({ labels: { ...filter.labels, [label[0]]: label[1] } });
}

function set(change) {
  Object.assign(filter, change);
  $('filter-error').hidden = true;
  writeAddress();
  showFilter();
  changed(false);
}

/** Shows a refusal of the filter (a malformed label key, say) under the bar. */
export function filterRefused(err) {
  $('filter-error').hidden = false;
  $('filter-error').textContent = err.code ? `${err.code}: ${err.message}` : err.message;
}

/** Brings the bar's chips and selectors in line with the filter and the server's kinds. */
export function showFilter() {
  const kinds = state.kinds.map((k) => k.name);
  if (filter.kind && !kinds.includes(filter.kind)) kinds.push(filter.kind);
  $('filter-kind').replaceChildren(
    h('option', { value: '' }, 'all kinds'),
    ...kinds.map((name) => h('option', { value: name }, name)),
  );
  $('filter-kind').value = filter.kind;
  $('filter-status').replaceChildren(
    h('option', { value: '' }, 'any status'),
    ...Object.entries(STATUS).map(([value, text]) => h('option', { value }, text)),
  );
  $('filter-status').value = filter.status;
  $('filter-chips').replaceChildren(
    ...Object.entries(filter.labels).map(([key, value]) =>
      h(
        'span',
        { class: 'chip' },
        `${key}:${value}`,
        h(
          'button',
          {
            type: 'button',
            class: 'chip-remove',
            'aria-label': `Remove label ${key}:${value}`,
            onclick: () => {
              const labels = { ...filter.labels };
              delete labels[key];
              set({ labels });
            },
          },
          '×',
        ),
      ),
    ),
  );
}

export const filtering = () =>
  Object.keys(filter.labels).length > 0 || filter.kind !== '' || filter.status !== '';

/**
 * The filter as TaskFilter. The subscription leaves status out: a task leaving the status must
 * still reach the page to leave the list (the server sends only changes that meet a filter).
 */
export function taskFilter(withStatus = true) {
  const out = {};
  if (Object.keys(filter.labels).length) out.labels = filter.labels;
  if (filter.kind) out.kind = [filter.kind];
  if (filter.status && withStatus) out.status = [filter.status];
  return Object.keys(out).length ? out : null;
}

/** Whether the list shows `task`: the filter holds, and it is the viewed principal's. */
export function shown(task) {
  if (state.owner && task.owner && task.owner !== state.owner) return false;
  if (filter.kind && task.kind !== filter.kind) return false;
  if (filter.status && task.status !== filter.status) return false;
  const labels = task.labels ?? {};
  return Object.entries(filter.labels).every(([key, value]) => labels[key] === value);
}

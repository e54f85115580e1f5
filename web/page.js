// What every part of the page shares: its elements by id, the signed-in state, the live note.

export const $ = (id) => document.getElementById(id);

export const state = {
  api: null,
  admin: false,
  me: '',
  owner: null,
  wantedOwner: null, // the `owner` the page's address names (filter.js)
  kinds: [],
  tasks: new Map(),
  rows: new Map(),
  selected: null,
};

/** Says `message` where the live dot is (a failed call or subscription). */
export function flash(message) {
  $('live').textContent = message;
  $('live').classList.remove('up');
}

// The dashboard: sign-in, the caller's tasks live (list.js) under a filter (filter.js), one
// task in detail (detail.js), starting (start.js), cancelling, answering and running again,
// and the schedules with their next and last runs (schedules.js).
import { Api, claimsOf } from './api.js';
import { closeDetail } from './detail.js';
import { initFilter, showFilter, writeAddress } from './filter.js';
import { loadList, stopWatching, tickAll, watchList } from './list.js';
import { $, state } from './page.js';
import { loadSchedules, tickSchedules } from './schedules.js';
import { renderKind, showKinds, start } from './start.js';

const devToken = document.querySelector('meta[name="taskhandle-dev-token"]')?.content;

function show(signedIn) {
  $('signed-in').hidden = !signedIn;
  $('signed-out').hidden = signedIn;
  $('who').hidden = !signedIn;
}

function signOut(reason) {
  stopWatching();
  closeDetail();
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
  const me = claims.sub ?? '';
  const admin = scopes.includes('tasks:admin');
  // An admin's address may name whose tasks to view (a shared or reloaded view).
  const owner = admin && state.wantedOwner && state.wantedOwner !== me ? state.wantedOwner : null;
  Object.assign(state, { api, kinds, me, admin, owner });
  $('owner').value = owner ?? '';
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
  showKinds();
  showFilter();
  show(true);
  closeDetail();
  watchList();
  loadSchedules();
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
  writeAddress();
  closeDetail();
  watchList();
  loadSchedules();
});
$('kind').addEventListener('change', renderKind);
$('start-form').addEventListener('submit', start);
$('close-detail').addEventListener('click', closeDetail);
setInterval(() => {
  tickAll();
  tickSchedules();
}, 1000);
initFilter((navigated) => {
  if (!state.api) return;
  if (navigated) {
    // Back or forward: the address may name another principal's view.
    const wanted = state.wantedOwner;
    state.owner = state.admin && wanted && wanted !== state.me ? wanted : null;
    $('owner').value = state.owner ?? '';
  }
  watchList();
  loadSchedules();
});

// Development signs in as `dev` (the server put its token in the page); otherwise this tab's token.
const saved = devToken ?? sessionStorage.getItem('taskhandle.token');
if (saved) signIn(saved);
else signOut();

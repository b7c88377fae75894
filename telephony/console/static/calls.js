// The calls page: calls in progress (from the server's live event feeds) and recorded calls (from its
// record folder), refreshed every few seconds, searchable and filterable by outcome. A live call opens
// as its live log (listen in from there) and turns into its recording when it ends; a recording opens as
// its transcript and events on a timeline (recording-view.js). The chosen call is brought into view.
//
// window.voicebotCalls exposes what the page shows (the browser tests read it).

import { CallsList, mergeRows } from './calls-list.js';
import { $, getJson } from './format.js';
import { closeLive, openLive } from './live-view.js';
import { openRecording, showUnfinished } from './recording-view.js';

const REFRESH_MS = 2000;

const state = { rows: [], recording: false, open: null, refreshes: 0, errors: [], outcomes: {} };
window.voicebotCalls = state;
const list = new CallsList(state, (call, chosen) => openRow(call, chosen));

async function refresh() {
  try {
    const body = await getJson('/console/api/calls');
    state.recording = body.recording;
    state.rows = mergeRows(body.calls, body.live || [], body.recording);
    list.setOutcomes(body.outcome_labels, body.outcomes);
    state.refreshes += 1;
    list.render();
    await followOpenCall();
  } catch (error) {
    $('calls-status').textContent = error.status === 401
      ? 'Signed out: reload the page and sign in with the console token.'
      : `Cannot list calls (is the server running?): ${error.message}`;
  }
}

// A live call that has ended turns into its recording once the recording is finished.
async function followOpenCall() {
  const open = state.open;
  if (!open || open.kind !== 'live-ended') return;
  const row = state.rows.find((candidate) => candidate.call_sid === open.key && candidate.kind === 'recorded');
  if (row) {
    const link = document.createElement('a');
    link.href = `#${encodeURIComponent(row.name)}`;
    link.textContent = 'Open its recording';
    link.addEventListener('click', (event) => {
      event.preventDefault();
      openRow(row, true);
    });
    $('live-status').replaceChildren('The call has ended. ', link);
    state.recordingLink = row.name;
    if (open.autoOpen) await openRow(row, false);
  } else if (!state.recording) {
    $('live-status').textContent = 'The call has ended. It was not recorded (set VOICEBOT_RECORD_DIR to keep calls).';
  }
}

function showView(kind) {
  $('call-placeholder').hidden = true;
  $('call-view').hidden = false;
  $('live-view').hidden = kind !== 'live';
  $('recording-view').hidden = kind !== 'recording';
}

// `chosen`: the operator picked it (bring it into view and move focus there), not the page's own follow-up.
async function openRow(call, chosen) {
  closeLive();
  const key = call.call_sid || call.name;
  document.querySelectorAll('#calls tbody tr').forEach((row) => row.classList.toggle('selected', row.dataset.key === key));
  if (call.kind === 'live') {
    showView('live');
    openLive(call, state, refresh);
  } else if (call.kind === 'recorded' || (call.kind === 'cut-short' && call.name)) {
    showView('recording');
    try {
      await openRecording(call.name, state);
    } catch (error) {
      if (error.status !== 404) throw error;
      showUnfinished(call, state); // cut short, and nothing could be rebuilt (yet)
    }
  } else {
    showView('recording');
    showUnfinished(call, state);
  }
  if (chosen) bringIntoView();
}

function bringIntoView() {
  $('call-view').scrollIntoView({ block: 'start' });
  $('call-title').focus({ preventScroll: true });
  state.broughtIntoView = (state.broughtIntoView || 0) + 1;
}

// --- start -------------------------------------------------------------------------------------------------

document.querySelector('.filters').addEventListener('submit', (event) => event.preventDefault());
document.querySelector('.find').addEventListener('submit', (event) => event.preventDefault());
$('back-to-list').addEventListener('click', (event) => {
  event.preventDefault();
  const selected = document.querySelector('#calls tbody tr.selected') || $('calls-title');
  selected.scrollIntoView({ block: 'center' });
  if (selected.tabIndex >= 0) selected.focus({ preventScroll: true });
});
window.addEventListener('error', (event) => state.errors.push(String(event.message)));
window.addEventListener('unhandledrejection', (event) => state.errors.push(String(event.reason)));

refresh()
  .then(() => {
    const wanted = decodeURIComponent(location.hash.slice(1));
    const row = wanted && state.rows.find((candidate) => candidate.name === wanted || `live-${candidate.call_sid}` === wanted);
    if (row) return openRow(row, true);
    return undefined;
  })
  .catch((error) => {
    $('calls-status').textContent = `Cannot list calls: ${error.message}`;
  });
setInterval(() => {
  if (!document.hidden) refresh();
}, REFRESH_MS);

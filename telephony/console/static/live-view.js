// A call in progress on the calls page: its live log (the same event feed the softphone reads) and the
// listen-in (listen-in.js). When the call ends, the page opens its recording (calls.js).

import { EventLog } from './event-log.js';
import { $, formatStart } from './format.js';
import { ListenIn } from './listen-in.js';

let feed = null;
let listening = null;

export function closeLive() {
  if (feed) feed.close();
  feed = null;
  stopListening();
  $('listen-in').hidden = true;
}

function stopListening() {
  if (listening) listening.stop();
  listening = null;
}

function setListenButton(on) {
  const button = $('listen-in');
  button.setAttribute('aria-pressed', String(on));
  button.textContent = on ? 'Stop listening' : 'Listen in';
}

function toggleListening(callSid, state) {
  if (listening) {
    stopListening();
    return;
  }
  state.listen = {};
  const session = new ListenIn(callSid, state.listen, (message) => {
    if (listening === session) listening = null;
    setListenButton(false);
    $('listen-status').textContent = message;
  });
  listening = session;
  setListenButton(true);
  $('listen-status').textContent = 'Connecting…';
  session.start()
    .then(() => {
      if (listening === session) $('listen-status').textContent = 'Listening: the caller on the left, the bot on the right.';
    })
    .catch((error) => session.close(`Cannot listen in: ${error.message}`));
}

// `onEnded()` runs once the feed says the call is over.
export function openLive(call, state, onEnded) {
  closeLive();
  state.open = { key: call.call_sid, kind: 'live', autoOpen: true };
  $('call-title').textContent = `${call.from_number || 'Unknown caller'} → ${call.to_number || '–'} · live`;
  $('call-ended').textContent = `Started ${formatStart(call.started_at)} · ${call.model || 'model not known yet'}`;
  $('call-outcome').hidden = true;
  $('live-status').textContent = 'In progress: following the call live.';
  $('listen-in').hidden = false;
  setListenButton(false);
  $('listen-in').onclick = () => toggleListening(call.call_sid, state);
  $('listen-status').textContent = 'Hear both sides as they happen (read-only: the caller and the bot do not hear you).';
  const log = new EventLog($('live-events'));
  const source = new EventSource(`/console/api/live/${encodeURIComponent(call.call_sid)}/events`);
  feed = source;
  source.onmessage = (message) => {
    const event = JSON.parse(message.data);
    log.add(event);
    if (event.type === 'ended') {
      source.close();
      stopListening();
      $('listen-in').hidden = true;
      state.open = { key: call.call_sid, kind: 'live-ended', autoOpen: state.open && state.open.autoOpen };
      const outcome = event.outcome_label ? ` Outcome: ${event.outcome_label}${event.outcome_reason ? ` (${event.outcome_reason})` : ''}.` : '';
      $('live-status').textContent = `${state.recording ? 'The call has ended: its recording is being finished…' : 'The call has ended.'}${outcome}`;
      onEnded();
    }
  };
  source.onerror = () => {
    $('live-status').textContent = source.readyState === EventSource.CLOSED
      ? 'The live feed closed: the call has ended or the server went away.'
      : 'Lost the live feed (is the server running?): reconnecting…';
  };
  source.onopen = () => {
    if (state.open && state.open.kind === 'live') $('live-status').textContent = 'In progress: following the call live.';
  };
  history.replaceState(null, '', `#live-${encodeURIComponent(call.call_sid)}`);
}

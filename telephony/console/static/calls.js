// The calls page: calls in progress (from the server's live event feeds) and recorded calls (from its
// record folder), refreshed every few seconds, searchable and filterable. A live call opens as its live
// log and turns into its recording when it ends; a recording opens as its transcript on a timeline with
// both sides' level strips, a player for either side or both, and its files to download.
//
// window.voicebotCalls exposes what the page shows (the browser tests read it).

import { EventLog, seconds, toolCall } from './event-log.js';

const REFRESH_MS = 2000;
const SPOKEN_WORDS_PER_S = 2.7; // about 160 words a minute, the pace of phone speech and of common voices
const WHO = { caller: 'Caller', bot: 'Bot', tool: 'Tool' };
const FILE_LABELS = {
  'call.wav': 'both sides (call.wav)',
  'caller.wav': 'caller (caller.wav)',
  'bot.wav': 'bot (bot.wav)',
  'events.jsonl': 'every event (events.jsonl)',
  'transcript.json': 'transcript (transcript.json)',
};

const $ = (id) => document.getElementById(id);
const state = { rows: [], recording: false, open: null, refreshes: 0, errors: [] };
window.voicebotCalls = state;
let liveFeed = null;
let liveLog = null;

function formatSeconds(value) {
  if (typeof value !== 'number') return '–';
  const minutes = Math.floor(value / 60);
  const rest = (value - 60 * minutes).toFixed(1).padStart(4, '0');
  return minutes ? `${minutes}:${rest}` : `${value.toFixed(1)} s`;
}

function formatStart(iso) {
  if (!iso) return '–';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

function localDate(iso) {
  const date = new Date(iso || '');
  if (Number.isNaN(date.getTime())) return '';
  const pad = (n) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

async function getJson(url) {
  const response = await fetch(url, { credentials: 'same-origin', cache: 'no-store' });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.detail || `HTTP ${response.status}`);
  return body;
}

// --- the list ----------------------------------------------------------------------------------------

// One row per call: a live feed wins over its unfinished recording; a finished recording over its ended feed.
function mergeRows(recorded, live) {
  const rows = recorded.map((call) => ({ ...call, kind: call.complete ? 'recorded' : 'cut-short' }));
  for (const feed of live) {
    const index = rows.findIndex((row) => row.call_sid === feed.call_sid);
    if (feed.live) {
      const row = { ...feed, name: index >= 0 ? rows[index].name : null, kind: 'live', duration_s: feed.elapsed_s };
      if (index >= 0) rows[index] = row;
      else rows.unshift(row);
    } else if (index < 0 && !state.recording) {
      rows.push({ ...feed, kind: 'ended', duration_s: feed.elapsed_s });
    } else if (index >= 0 && rows[index].kind === 'cut-short') {
      rows[index].kind = 'finishing'; // the call just ended: its recording is being written
    }
  }
  return rows;
}

function outcome(row) {
  if (row.kind === 'live') return 'in progress';
  if (row.kind === 'finishing') return 'finishing…';
  if (row.kind === 'cut-short') return 'cut short';
  const by = row.ended_by ? `ended by ${row.ended_by}` : '–';
  return row.kind === 'ended' ? `${by} (not recorded)` : by;
}

function matches(row) {
  const text = $('filter-text').value.trim().toLowerCase();
  if (text) {
    const haystack = [row.from_number, row.to_number, row.call_sid, row.name].join(' ').toLowerCase();
    const digits = text.replace(/[^0-9]/g, '');
    const numbers = [row.from_number, row.to_number].join(' ').replace(/[^0-9]/g, '');
    if (!haystack.includes(text) && !(digits.length >= 3 && numbers.includes(digits))) return false;
  }
  const date = $('filter-date').value;
  if (date && localDate(row.started_at) !== date) return false;
  const wanted = $('filter-outcome').value;
  if (!wanted) return true;
  if (wanted === 'live') return row.kind === 'live';
  if (wanted === 'barge-in') return row.barge_ins > 0;
  if (wanted === 'cut-short') return row.kind === 'cut-short';
  return row.kind !== 'live' && row.ended_by === wanted;
}

function cell(row, label, text) {
  const td = document.createElement('td');
  td.dataset.label = label;
  td.textContent = text;
  row.append(td);
  return td;
}

function renderList() {
  const body = $('calls').querySelector('tbody');
  const shown = state.rows.filter(matches);
  const focused = document.activeElement && document.activeElement.closest('#calls tbody tr');
  const focusedKey = focused ? focused.dataset.key : null;
  body.replaceChildren();
  for (const call of shown) {
    const row = document.createElement('tr');
    row.dataset.key = call.call_sid || call.name;
    if (call.name) row.dataset.name = call.name;
    row.dataset.kind = call.kind;
    row.tabIndex = 0;
    row.setAttribute('aria-label', `Call from ${call.from_number || 'unknown'} at ${formatStart(call.started_at)}, ${outcome(call)}`);
    cell(row, 'Started', formatStart(call.started_at));
    cell(row, 'From', call.from_number || '–');
    cell(row, 'To', call.to_number || '–');
    cell(row, 'Duration', formatSeconds(call.duration_s));
    cell(row, 'Turns', String(call.turns ?? '–'));
    cell(row, 'Tools', String(call.tool_calls ?? '–'));
    cell(row, 'Barge-ins', String(call.barge_ins ?? '–'));
    const result = cell(row, 'Outcome', '');
    const badge = document.createElement('span');
    badge.textContent = outcome(call);
    if (call.kind === 'live') badge.className = 'live-badge';
    result.append(badge);
    cell(row, 'Model', call.model || '–');
    cell(row, 'Agent', call.agent || '–');
    row.classList.toggle('selected', state.open !== null && state.open.key === row.dataset.key);
    row.addEventListener('click', () => openRow(call));
    row.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        openRow(call);
      }
    });
    body.append(row);
    if (row.dataset.key === focusedKey) row.focus();
  }
  const live = state.rows.filter((row) => row.kind === 'live').length;
  const recordingNote = state.recording ? '' : ' Calls are not recorded: set VOICEBOT_RECORD_DIR (or serve --record) to keep them.';
  const filtered = shown.length === state.rows.length ? '' : `, ${shown.length} shown`;
  $('calls-status').textContent = state.rows.length
    ? `${state.rows.length} ${state.rows.length === 1 ? 'call' : 'calls'} (${live} in progress${filtered}), newest first.${recordingNote}`
    : `No calls yet: place one from the softphone.${recordingNote}`;
}

async function refresh() {
  try {
    const { recording, calls, live } = await getJson('/console/api/calls');
    state.recording = recording;
    state.rows = mergeRows(calls, live || []);
    state.refreshes += 1;
    renderList();
    await followOpenCall();
  } catch (error) {
    $('calls-status').textContent = `Cannot list calls: ${error.message}`;
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
      openRow(row);
    });
    $('live-status').replaceChildren('The call has ended. ', link);
    state.recordingLink = row.name;
    if (open.autoOpen) await openRow(row);
  } else if (!state.recording) {
    $('live-status').textContent = 'The call has ended. It was not recorded (set VOICEBOT_RECORD_DIR to keep calls).';
  }
}

// --- opening a call ----------------------------------------------------------------------------------

function showView(kind) {
  $('call-placeholder').hidden = true;
  $('call-view').hidden = false;
  $('live-view').hidden = kind !== 'live';
  $('recording-view').hidden = kind !== 'recording';
}

async function openRow(call) {
  if (liveFeed) liveFeed.close();
  liveFeed = null;
  document.querySelectorAll('#calls tbody tr').forEach((row) => row.classList.toggle('selected', row.dataset.key === (call.call_sid || call.name)));
  if (call.kind === 'live') return openLive(call);
  if (call.kind === 'recorded') return openRecording(call.name);
  return openUnfinished(call);
}

function openLive(call) {
  state.open = { key: call.call_sid, kind: 'live', autoOpen: true };
  showView('live');
  $('call-title').textContent = `${call.from_number || 'Unknown caller'} → ${call.to_number || '–'} · live`;
  $('call-ended').textContent = `Started ${formatStart(call.started_at)} · ${call.model || 'model not known yet'}`;
  $('live-status').textContent = 'In progress: following the call live.';
  liveLog = new EventLog($('live-events'));
  const source = new EventSource(`/console/api/live/${encodeURIComponent(call.call_sid)}/events`);
  liveFeed = source;
  source.onmessage = (message) => {
    const event = JSON.parse(message.data);
    liveLog.add(event);
    if (event.type === 'ended') {
      source.close();
      state.open = { key: call.call_sid, kind: 'live-ended', autoOpen: state.open && state.open.autoOpen };
      $('live-status').textContent = state.recording ? 'The call has ended: its recording is being finished…' : 'The call has ended.';
      refresh();
    }
  };
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) $('live-status').textContent = 'The live feed closed: the call has ended or the server went away.';
  };
  history.replaceState(null, '', `#live-${encodeURIComponent(call.call_sid)}`);
}

function downloadLinks(name, files) {
  const list = $('downloads');
  list.replaceChildren();
  for (const file of files || []) {
    const item = document.createElement('li');
    const link = document.createElement('a');
    link.href = `/console/api/calls/${encodeURIComponent(name)}/files/${file}`;
    link.download = `${name}-${file}`;
    link.textContent = `Download ${FILE_LABELS[file] || file}`;
    item.append(link);
    list.append(item);
  }
}

function openUnfinished(call) {
  state.open = { key: call.call_sid || call.name, kind: call.kind };
  showView('recording');
  $('call-title').textContent = `${call.from_number || 'Unknown caller'} → ${call.to_number || '–'} · ${formatStart(call.started_at)}`;
  $('call-ended').textContent = call.kind === 'finishing'
    ? 'The call has just ended: its recording is being finished.'
    : call.kind === 'ended'
      ? `Ended by ${call.ended_by}: ${call.end_reason}. It was not recorded.`
      : 'This recording was cut short (the server stopped before the call ended): it has no transcript or audio.';
  downloadLinks(call.name, call.files);
  $('listen').hidden = true;
  $('player').removeAttribute('src');
  $('turns').replaceChildren();
  clearTimeline();
}

// --- a recording -----------------------------------------------------------------------------------------

function clearTimeline() {
  $('track').querySelectorAll('.bar, .barge-mark').forEach((element) => element.remove());
  $('track').querySelectorAll('canvas').forEach((canvas) => canvas.getContext('2d').clearRect(0, 0, canvas.width, canvas.height));
}

function seekTo(seconds) {
  const player = $('player');
  if (!player.src) return;
  player.currentTime = Math.max(0, seconds - 0.1);
  player.play().catch(() => {});
}

function turnText(turn) {
  if (turn.role === 'tool') return `${toolCall(turn.name, turn.input)}${turn.status ? ` → ${turn.status}` : ''}`;
  return turn.text || '';
}

// An interrupted bot turn: the words the caller heard (estimated by the share of its audio that played), then the rest struck out.
function renderText(span, turn) {
  if (turn.role !== 'bot' || !turn.interrupted || !turn.sent_s) {
    span.textContent = turnText(turn);
    return;
  }
  const words = (turn.text || '').split(/\s+/).filter(Boolean);
  // The model may have stopped before sending all of it: the whole turn lasts at least as long as speech at
  // an ordinary pace (SPOKEN_WORDS_PER_S) would take.
  const fullSeconds = Math.max(turn.sent_s, words.length / SPOKEN_WORDS_PER_S);
  const heardWords = Math.round(words.length * Math.min(1, turn.heard_s / fullSeconds));
  const heard = document.createElement('span');
  heard.className = 'heard';
  heard.textContent = words.slice(0, heardWords).join(' ');
  const unheard = document.createElement('span');
  unheard.className = 'unheard';
  unheard.textContent = words.slice(heardWords).join(' ');
  const note = document.createElement('span');
  note.className = 'heard-note';
  note.textContent = ` interrupted after ${turn.heard_s.toFixed(1)} s: about ${heardWords} of ${words.length} words heard`;
  span.replaceChildren(heard, heardWords && heardWords < words.length ? ' ' : '', unheard, note);
}

function drawLevels(levels) {
  for (const side of ['caller', 'bot']) {
    const canvas = $('track').querySelector(`.lane[data-role="${side}"] canvas`);
    const width = Math.max(1, Math.round(canvas.clientWidth * devicePixelRatio));
    const height = Math.max(1, Math.round(canvas.clientHeight * devicePixelRatio));
    canvas.width = width;
    canvas.height = height;
    const context = canvas.getContext('2d');
    context.clearRect(0, 0, width, height);
    const points = levels[side] || [];
    if (!points.length) continue;
    context.fillStyle = getComputedStyle(document.documentElement).getPropertyValue(side === 'caller' ? '--caller' : '--bot');
    const step = width / points.length;
    for (let x = 0; x < width; x++) {
      const from = Math.floor(x / step);
      const to = Math.max(from + 1, Math.floor((x + 1) / step));
      let peak = 0;
      for (let i = from; i < to && i < points.length; i++) peak = Math.max(peak, points[i]);
      const bar = peak * height * 0.9;
      context.fillRect(x, (height - bar) / 2, 1, Math.max(bar, peak > 0 ? 1 : 0));
    }
  }
}

function renderTimeline(transcript, duration) {
  clearTimeline();
  const track = $('track');
  const percent = (t) => `${Math.min(100, (100 * t) / duration)}%`;
  transcript.turns.forEach((turn, index) => {
    if (typeof turn.start !== 'number') return;
    const lane = track.querySelector(`.lane[data-role="${turn.role}"]`);
    if (!lane) return;
    const bar = document.createElement('div');
    bar.className = `bar${turn.interrupted ? ' interrupted' : ''}`;
    bar.dataset.turn = String(index);
    bar.style.left = percent(turn.start);
    bar.style.width = percent(Math.max(0, Math.min(turn.end ?? turn.start, duration) - turn.start));
    bar.title = turnText(turn);
    bar.addEventListener('click', () => seekTo(turn.start));
    lane.append(bar);
  });
  for (const t of transcript.barge_ins || []) {
    const mark = document.createElement('div');
    mark.className = 'barge-mark';
    mark.style.left = percent(t);
    mark.title = `barge-in at ${t.toFixed(2)} s`;
    track.append(mark);
  }
}

function renderTurns(transcript) {
  const list = $('turns');
  list.replaceChildren();
  transcript.turns.forEach((turn, index) => {
    const item = document.createElement('li');
    item.className = `entry turn ${turn.role}${turn.interrupted ? ' interrupted' : ''}`;
    item.dataset.turn = String(index);
    const time = document.createElement('time');
    time.textContent = seconds(turn.start);
    if (turn.role === 'caller' && typeof turn.end === 'number') time.title = `said ${turn.start.toFixed(2)}–${turn.end.toFixed(2)} s`;
    const name = document.createElement('b');
    name.textContent = `${WHO[turn.role] || turn.role}: `;
    const text = document.createElement('span');
    text.className = 'text';
    text.prepend(name);
    const words = document.createElement('span');
    renderText(words, turn);
    text.append(words);
    item.append(time, text);
    if (typeof turn.latency_s === 'number') {
      const badge = document.createElement('span');
      badge.className = 'latency';
      badge.textContent = `answered in ${turn.latency_s.toFixed(2)} s`;
      item.append(badge);
    }
    if (typeof turn.start === 'number') {
      item.tabIndex = 0;
      item.addEventListener('click', () => seekTo(turn.start));
      item.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' || event.key === ' ') {
          event.preventDefault();
          seekTo(turn.start);
        }
      });
    }
    list.append(item);
  });
}

// The turn under the playhead is highlighted, in the list and on the timeline.
function followPlayer(transcript, duration) {
  const player = $('player');
  const playing = (t) => transcript.turns.findIndex((turn) => turn.role !== 'tool' && typeof turn.start === 'number'
    && t >= turn.start && t <= (turn.end ?? turn.start) + 0.05);
  let current = -2;
  const follow = () => {
    const t = player.currentTime || 0;
    $('playhead').style.left = `${Math.min(100, (100 * t) / duration)}%`;
    const index = player.paused && t === 0 ? -1 : playing(t);
    if (index !== current) {
      current = index;
      state.playingTurn = index;
      document.querySelectorAll('#turns .entry, #track .bar').forEach((element) => {
        const on = element.dataset.turn === String(index);
        element.classList.toggle('playing', on);
        if (element.matches('#turns .entry')) {
          if (on) element.setAttribute('aria-current', 'true');
          else element.removeAttribute('aria-current');
        }
      });
    }
    if (!player.paused) requestAnimationFrame(follow);
  };
  player.onplay = follow;
  player.ontimeupdate = follow;
  player.onseeked = follow;
}

function chooseSide(name) {
  const player = $('player');
  const side = document.querySelector('#listen input:checked').value;
  const at = player.currentTime || 0;
  const wasPlaying = !player.paused;
  player.src = `/console/api/calls/${encodeURIComponent(name)}/files/${side}`;
  player.addEventListener('loadedmetadata', () => {
    player.currentTime = at;
    if (wasPlaying) player.play().catch(() => {});
  }, { once: true });
  state.side = side;
}

async function openRecording(name) {
  const transcript = await getJson(`/console/api/calls/${encodeURIComponent(name)}`);
  const summary = transcript.summary || {};
  state.open = { key: summary.call_sid || name, kind: 'recorded', name };
  showView('recording');
  $('call-view').dataset.name = name;
  $('call-title').textContent = `${summary.from_number || 'Unknown caller'} → ${summary.to_number || '–'} · ${formatStart(summary.started_at)} · ${formatSeconds(transcript.duration_s)}`;
  const ended = transcript.ended;
  const who = [summary.agent, summary.model].filter(Boolean).join(' on ');
  $('call-ended').textContent = `${ended ? `Ended by ${ended.by}: ${ended.reason}` : 'The recording has no end (cut short).'}${who ? ` · ${who}` : ''}`;
  downloadLinks(name, summary.files);
  $('listen').hidden = !summary.has_audio;
  const player = $('player');
  if (summary.has_audio) {
    document.querySelector('#listen input[value="call.wav"]').checked = true;
    player.src = `/console/api/calls/${encodeURIComponent(name)}/audio`;
    state.side = 'call.wav';
    document.querySelectorAll('#listen input').forEach((input) => {
      input.onchange = () => chooseSide(name);
    });
  } else {
    player.removeAttribute('src');
  }
  const duration = Math.max(transcript.duration_s || 0, 0.1);
  renderTimeline(transcript, duration);
  renderTurns(transcript);
  followPlayer(transcript, duration);
  history.replaceState(null, '', `#${encodeURIComponent(name)}`);
  getJson(`/console/api/calls/${encodeURIComponent(name)}/levels`)
    .then((levels) => {
      state.levels = { caller: levels.caller.length, bot: levels.bot.length };
      drawLevels(levels);
    })
    .catch(() => {});
}

// --- start -------------------------------------------------------------------------------------------------

for (const id of ['filter-text', 'filter-date', 'filter-outcome']) $(id).addEventListener('input', renderList);
document.querySelector('.filters').addEventListener('submit', (event) => event.preventDefault());
window.addEventListener('error', (event) => state.errors.push(String(event.message)));
window.addEventListener('unhandledrejection', (event) => state.errors.push(String(event.reason)));

refresh()
  .then(() => {
    const wanted = decodeURIComponent(location.hash.slice(1));
    const row = wanted && state.rows.find((candidate) => candidate.name === wanted || `live-${candidate.call_sid}` === wanted);
    if (row) return openRow(row);
    return undefined;
  })
  .catch((error) => {
    $('calls-status').textContent = `Cannot list calls: ${error.message}`;
  });
setInterval(() => {
  if (!document.hidden) refresh();
}, REFRESH_MS);

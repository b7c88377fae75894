// A recorded call: its outcome (and whether it was recovered after a crash), its turns and every other
// event in order on a timeline and in a list (each answer's latency split into stages), a player for
// either side or both, find-in-call, the raw events, and its files to download.

import { seconds, toolCall } from './event-log.js';
import { $, formatSeconds, formatStart, getJson, isFailure } from './format.js';
import { clearTimeline, drawLevels, renderTimeline, stagesText } from './timeline.js';

const SPOKEN_WORDS_PER_S = 2.7; // about 160 words a minute, the pace of phone speech and of common voices
const WHO = { caller: 'Caller', bot: 'Bot', tool: 'Tool' };
const LISTED_EVENTS = new Set(['dtmf', 'barge_in', 'transfer', 'model_swap', 'error', 'hangup', 'limit', 'rescue', 'check_in', 'dead_air', 'note']);
const RAW_LINES = 2000; // shown at most (the download has them all)
const FILE_LABELS = {
  'call.wav': 'both sides (call.wav)',
  'caller.wav': 'caller (caller.wav)',
  'bot.wav': 'bot (bot.wav)',
  'events.jsonl': 'every event (events.jsonl)',
  'transcript.json': 'transcript (transcript.json)',
};
const url = (name, tail = '') => `/console/api/calls/${encodeURIComponent(name)}${tail}`;

export function downloadLinks(name, files) {
  const list = $('downloads');
  list.replaceChildren();
  for (const file of files || []) {
    const item = document.createElement('li');
    const link = document.createElement('a');
    link.href = url(name, `/files/${file}`);
    link.download = `${name}-${file}`;
    link.textContent = `Download ${FILE_LABELS[file] || file}`;
    item.append(link);
    list.append(item);
  }
}

export function showOutcome(outcome, recovered) {
  const line = $('call-outcome');
  const text = outcome && outcome.label ? `Outcome: ${outcome.label}${outcome.reason ? ` (${outcome.reason})` : ''}` : '';
  const note = recovered
    ? 'Recovered: the server stopped during this call; what reached the disk (events.jsonl) was rebuilt into this view.'
    : '';
  line.textContent = [text, note].filter(Boolean).join(' · ');
  line.className = isFailure(outcome && outcome.code) ? 'failure' : '';
  line.hidden = !line.textContent;
  line.dataset.outcome = (outcome && outcome.code) || '';
  line.dataset.recovered = String(Boolean(recovered));
}

function seekTo(t) {
  const player = $('player');
  if (!player.src) return;
  player.currentTime = Math.max(0, t - 0.1);
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

function playable(item, t) {
  item.tabIndex = 0;
  item.addEventListener('click', () => seekTo(t));
  item.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      seekTo(t);
    }
  });
}

function turnItem(turn, index) {
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
    if (turn.stages) item.append(stagesBar(turn));
  }
  if (typeof turn.start === 'number') playable(item, turn.start);
  return item;
}

// The answer's wait, split: caller stopped -> the model heard it -> first audio out -> first audio heard.
function stagesBar(turn) {
  const box = document.createElement('span');
  box.className = 'stages';
  const { speech_end: from, recognised, first_audio_out: out, first_audio_heard: heard } = turn.stages;
  box.title = stagesText(turn);
  box.setAttribute('aria-label', stagesText(turn));
  const total = typeof heard === 'number' && typeof from === 'number' ? heard - from : 0;
  let previous = from;
  for (const [name, t] of [['recognised', recognised], ['out', out], ['heard', heard]]) {
    if (typeof t !== 'number' || total <= 0) continue;
    const part = document.createElement('span');
    part.className = `stage stage-${name}`;
    part.style.flexGrow = String(Math.max(0.02, (t - previous) / total));
    part.textContent = `+${(t - from).toFixed(2)}`;
    box.append(part);
    previous = t;
  }
  return box;
}

function eventItem(event, index) {
  const item = document.createElement('li');
  item.className = `entry event kind-${event.kind}`;
  item.dataset.event = String(index);
  const time = document.createElement('time');
  time.textContent = seconds(event.t);
  const text = document.createElement('span');
  text.className = 'text';
  text.textContent = event.label;
  if (event.detail && event.detail !== event.label) text.title = event.detail;
  item.append(time, text);
  if (typeof event.t === 'number') playable(item, event.t);
  return item;
}

// Turns and events in the order they happened (an event at a turn's start comes before it).
function renderTurns(transcript) {
  const rows = transcript.turns.map((turn, index) => ({ t: turn.start, order: 1, item: () => turnItem(turn, index) }));
  (transcript.events || []).forEach((event, index) => {
    if (LISTED_EVENTS.has(event.kind)) rows.push({ t: event.t, order: 0, item: () => eventItem(event, index) });
  });
  const at = (row) => (typeof row.t === 'number' ? row.t : Infinity);
  rows.sort((a, b) => at(a) - at(b) || a.order - b.order);
  $('turns').replaceChildren(...rows.map((row) => row.item()));
}

// The turn under the playhead is highlighted, in the list and on the timeline.
function followPlayer(transcript, duration, state) {
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
      document.querySelectorAll('#turns .entry.turn, #track .bar').forEach((element) => {
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

function chooseSide(name, state) {
  const player = $('player');
  const side = document.querySelector('#listen input:checked').value;
  const at = player.currentTime || 0;
  const wasPlaying = !player.paused;
  player.src = url(name, `/files/${side}`);
  player.addEventListener('loadedmetadata', () => {
    player.currentTime = at;
    if (wasPlaying) player.play().catch(() => {});
  }, { once: true });
  state.side = side;
}

// Find in this call: matching turns are marked and the first is scrolled to.
function findInCall(state) {
  const words = $('find-in-call').value.trim().toLowerCase();
  let found = 0;
  let first = null;
  for (const item of document.querySelectorAll('#turns .entry')) {
    const hit = Boolean(words) && item.querySelector('.text').textContent.toLowerCase().includes(words);
    item.classList.toggle('found', hit);
    if (hit) {
      found += 1;
      first = first || item;
    }
  }
  state.found = found;
  $('find-status').textContent = words ? `${found} ${found === 1 ? 'line' : 'lines'} with “${words}”` : '';
  if (first) first.scrollIntoView({ block: 'nearest' });
}

// The raw events, fetched when first opened (audio frames left out unless asked for: they are most lines).
async function showRawEvents(name, state) {
  const details = $('raw-events');
  if (!details.open || details.dataset.name === `${name}|${$('raw-media').checked}`) return;
  details.dataset.name = `${name}|${$('raw-media').checked}`;
  $('raw-status').textContent = 'Loading…';
  const response = await fetch(url(name, '/files/events.jsonl'), { credentials: 'same-origin', cache: 'no-store' });
  if (!response.ok) {
    $('raw-status').textContent = `No events.jsonl for this call (HTTP ${response.status}).`;
    return;
  }
  const lines = (await response.text()).split('\n').filter(Boolean);
  const media = $('raw-media').checked;
  const shown = lines.filter((line) => media || !/"event":\s*"media"/.test(line)).slice(0, RAW_LINES);
  $('raw-lines').textContent = shown.join('\n');
  state.rawLines = shown.length;
  const left = lines.length - shown.length;
  $('raw-status').textContent = `${shown.length} of ${lines.length} lines${left ? ` (${media ? 'the rest are in the download' : 'audio frames left out'})` : ''}.`;
}

export function clearRecording() {
  $('listen').hidden = $('player').hidden = $('player-hint').hidden = true;
  $('player').removeAttribute('src');
  $('turns').replaceChildren();
  $('raw-events').open = false;
  $('raw-events').dataset.name = '';
  $('raw-lines').textContent = '';
  $('find-in-call').value = '';
  $('find-status').textContent = '';
  clearTimeline();
}

export async function openRecording(name, state) {
  const transcript = await getJson(url(name));
  const summary = transcript.summary || {};
  state.open = { key: summary.call_sid || name, kind: 'recorded', name };
  state.transcript = { events: (transcript.events || []).length, turns: transcript.turns.length };
  clearRecording();
  $('call-view').dataset.name = name;
  $('call-title').textContent = `${summary.from_number || 'Unknown caller'} → ${summary.to_number || '–'} · ${formatStart(summary.started_at)} · ${formatSeconds(transcript.duration_s)}`;
  const ended = transcript.ended;
  const who = [summary.agent, summary.model].filter(Boolean).join(' on ');
  const recovered = transcript.recovered ?? summary.recovered;
  const noEnd = recovered ? 'The server stopped during the call: its end was not recorded.' : 'The recording has no end (cut short).';
  const deadAir = transcript.dead_air && typeof transcript.dead_air.max_s === 'number' && (transcript.dead_air.waits || []).length
    ? ` · longest dead air ${transcript.dead_air.max_s.toFixed(1)} s`
    : '';
  $('call-ended').textContent = `${ended ? `Ended by ${ended.by}: ${ended.reason}` : noEnd}${who ? ` · ${who}` : ''}${deadAir}`;
  showOutcome(transcript.outcome, recovered);
  downloadLinks(name, summary.files);
  $('listen').hidden = $('player').hidden = $('player-hint').hidden = !summary.has_audio;
  const player = $('player');
  if (summary.has_audio) {
    document.querySelector('#listen input[value="call.wav"]').checked = true;
    player.src = url(name, '/audio');
    state.side = 'call.wav';
    document.querySelectorAll('#listen input').forEach((input) => {
      input.onchange = () => chooseSide(name, state);
    });
  }
  const duration = Math.max(transcript.duration_s || 0, 0.1);
  renderTimeline(transcript, duration, turnText, seekTo);
  renderTurns(transcript);
  followPlayer(transcript, duration, state);
  $('find-in-call').oninput = () => findInCall(state);
  $('raw-events').ontoggle = () => showRawEvents(name, state).catch((error) => { $('raw-status').textContent = error.message; });
  $('raw-media').onchange = () => showRawEvents(name, state).catch((error) => { $('raw-status').textContent = error.message; });
  history.replaceState(null, '', `#${encodeURIComponent(name)}`);
  const files = summary.files || [];
  if (!files.includes('caller.wav') || !files.includes('bot.wav')) return; // no audio to draw (a recovered call may have none)
  getJson(url(name, '/levels'))
    .then((levels) => {
      state.levels = { caller: levels.caller.length, bot: levels.bot.length };
      drawLevels(levels);
    })
    .catch(() => {});
}

// A call with no transcript to show (yet): just ended, not recorded, or cut short and not recoverable.
export function showUnfinished(call, state) {
  state.open = { key: call.call_sid || call.name, kind: call.kind };
  clearRecording();
  $('call-title').textContent = `${call.from_number || 'Unknown caller'} → ${call.to_number || '–'} · ${formatStart(call.started_at)}`;
  $('call-ended').textContent = call.kind === 'finishing'
    ? 'The call has just ended: its recording is being finished.'
    : call.kind === 'ended'
      ? `Ended by ${call.ended_by}: ${call.end_reason}. It was not recorded.`
      : 'This recording was cut short (the server stopped before the call ended), and nothing could be rebuilt from it.';
  showOutcome(call.outcome ? { code: call.outcome, label: call.outcome_label, reason: call.outcome_reason } : null, call.recovered);
  downloadLinks(call.name, call.files);
}

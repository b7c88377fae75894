// The calls page: recorded calls (from the server's record folder), each opened as its transcript on a
// timeline beside a player for its stereo recording (caller left, bot right). Clicking a turn plays
// the call from there.

const $ = (id) => document.getElementById(id);

function formatSeconds(value) {
  if (typeof value !== 'number') return '–';
  const minutes = Math.floor(value / 60);
  const seconds = (value - 60 * minutes).toFixed(1).padStart(4, '0');
  return minutes ? `${minutes}:${seconds}` : `${value.toFixed(1)} s`;
}

function formatStart(iso) {
  if (!iso) return '–';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

async function getJson(url) {
  const response = await fetch(url, { credentials: 'same-origin' });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.detail || `HTTP ${response.status}`);
  return body;
}

function cell(row, text) {
  const td = document.createElement('td');
  td.textContent = text;
  row.append(td);
}

async function listCalls() {
  const { recording, calls } = await getJson('/console/api/calls');
  const body = $('calls').querySelector('tbody');
  body.replaceChildren();
  if (!recording) {
    $('calls-status').textContent = 'Calls are not recorded: set VOICEBOT_RECORD_DIR and restart voicebot serve.';
    return;
  }
  $('calls-status').textContent = calls.length ? `${calls.length} recorded calls, newest first.` : 'No recorded calls yet.';
  for (const call of calls) {
    const row = document.createElement('tr');
    row.dataset.name = call.name;
    cell(row, formatStart(call.started_at));
    cell(row, call.call_sid || call.name);
    cell(row, call.from_number || '–');
    cell(row, call.complete ? formatSeconds(call.duration_s) : 'in progress');
    cell(row, String(call.turns));
    cell(row, String(call.tool_calls));
    cell(row, String(call.barge_ins));
    cell(row, call.ended_by || '–');
    row.addEventListener('click', () => openCall(call.name));
    body.append(row);
  }
}

function seekTo(seconds) {
  const player = $('player');
  if (!player.src) return;
  player.currentTime = Math.max(0, seconds - 0.2);
  player.play().catch(() => {});
}

function turnText(turn) {
  if (turn.role === 'tool') {
    const input = turn.input && Object.keys(turn.input).length ? ` ${JSON.stringify(turn.input)}` : '';
    return `${turn.name}${input}${turn.status ? ` → ${turn.status}` : ''}`;
  }
  return turn.text || '';
}

function renderTimeline(transcript) {
  const duration = Math.max(transcript.duration_s || 0, 0.1);
  const track = $('track');
  track.querySelectorAll('.bar, .barge-mark').forEach((element) => element.remove());
  const percent = (t) => `${Math.min(100, (100 * t) / duration)}%`;
  for (const turn of transcript.turns) {
    if (typeof turn.start !== 'number') continue;
    const lane = track.querySelector(`.lane[data-role="${turn.role}"]`);
    if (!lane) continue;
    const bar = document.createElement('div');
    bar.className = `bar${turn.interrupted ? ' interrupted' : ''}`;
    bar.style.left = percent(turn.start);
    bar.style.width = percent(Math.max(0, (turn.end ?? turn.start) - turn.start));
    bar.title = turnText(turn);
    bar.addEventListener('click', () => seekTo(turn.start));
    lane.append(bar);
  }
  for (const t of transcript.barge_ins || []) {
    const mark = document.createElement('div');
    mark.className = 'barge-mark';
    mark.style.left = percent(t);
    mark.title = `barge-in at ${t.toFixed(2)} s`;
    track.append(mark);
  }
  const player = $('player');
  const follow = () => {
    $('playhead').style.left = percent(player.currentTime || 0);
    if (!player.paused) requestAnimationFrame(follow);
  };
  player.onplay = follow;
  player.ontimeupdate = follow;
}

function renderTurns(transcript) {
  const list = $('turns');
  list.replaceChildren();
  const who = { caller: 'Caller', bot: 'Bot', tool: 'Tool' };
  for (const turn of transcript.turns) {
    const item = document.createElement('li');
    item.className = `entry turn ${turn.role}${turn.interrupted ? ' interrupted' : ''}`;
    const time = document.createElement('time');
    time.textContent = typeof turn.start === 'number' ? `${turn.start.toFixed(1)} s` : '';
    const name = document.createElement('b');
    name.textContent = `${who[turn.role] || turn.role}: `;
    const text = document.createElement('span');
    text.className = 'text';
    text.textContent = turnText(turn);
    item.append(time, name, text);
    if (typeof turn.start === 'number') item.addEventListener('click', () => seekTo(turn.start));
    list.append(item);
  }
}

async function openCall(name) {
  const transcript = await getJson(`/console/api/calls/${encodeURIComponent(name)}`);
  const summary = transcript.summary || {};
  document.querySelectorAll('#calls tbody tr').forEach((row) => row.classList.toggle('selected', row.dataset.name === name));
  $('call-view').hidden = false;
  $('call-view').dataset.name = name;
  $('call-title').textContent = `${summary.call_sid || name} · ${formatStart(summary.started_at)} · ${formatSeconds(transcript.duration_s)}`;
  const ended = transcript.ended;
  $('call-ended').textContent = ended ? `Ended by ${ended.by}: ${ended.reason}` : 'The recording has no end (cut short).';
  const player = $('player');
  if (summary.has_audio) {
    player.src = `/console/api/calls/${encodeURIComponent(name)}/audio`;
  } else {
    player.removeAttribute('src');
  }
  renderTimeline(transcript);
  renderTurns(transcript);
  history.replaceState(null, '', `#${encodeURIComponent(name)}`);
}

listCalls()
  .then(() => {
    const wanted = decodeURIComponent(location.hash.slice(1));
    if (wanted) return openCall(wanted);
    return undefined;
  })
  .catch((error) => {
    $('calls-status').textContent = `Cannot list calls: ${error.message}`;
  });

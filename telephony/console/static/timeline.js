// A recording's timeline: each side's turns as bars over its level strip, tool calls, every other event
// (key presses, barge-ins, transfers, model swaps, errors...) as marks, each answer's latency as a shaded
// span from the end of the caller's speech to the first audio heard, and a time axis.

import { $ } from './format.js';

const AXIS_STEPS = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600];
const AXIS_TICKS = 8; // at most, so labels never crowd on a phone

export function clearTimeline() {
  $('track').querySelectorAll('.bar, .barge-mark, .event-mark, .latency-span').forEach((element) => element.remove());
  $('axis').replaceChildren();
  $('track').querySelectorAll('canvas').forEach((canvas) => canvas.getContext('2d').clearRect(0, 0, canvas.width, canvas.height));
}

export function drawLevels(levels) {
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

// `describe(turn)` gives a bar's tooltip; `seek(t)` plays from t.
export function renderTimeline(transcript, duration, describe, seek) {
  clearTimeline();
  const track = $('track');
  const percent = (t) => `${Math.max(0, Math.min(100, (100 * t) / duration))}%`;
  transcript.turns.forEach((turn, index) => {
    if (typeof turn.start !== 'number') return;
    const lane = track.querySelector(`.lane[data-role="${turn.role}"]`);
    if (!lane) return;
    if (turn.stages) lane.append(latencySpan(turn, percent));
    const bar = document.createElement('div');
    bar.className = `bar${turn.interrupted ? ' interrupted' : ''}`;
    bar.dataset.turn = String(index);
    bar.style.left = percent(turn.start);
    bar.style.width = percent(Math.max(0, Math.min(turn.end ?? turn.start, duration) - turn.start));
    bar.title = describe(turn);
    bar.addEventListener('click', () => seek(turn.start));
    lane.append(bar);
  });
  for (const t of transcript.barge_ins || []) {
    const mark = document.createElement('div');
    mark.className = 'barge-mark';
    mark.style.left = percent(t);
    mark.title = `barge-in at ${t.toFixed(2)} s`;
    track.append(mark);
  }
  const lane = track.querySelector('.lane[data-role="event"]');
  (transcript.events || []).forEach((event, index) => {
    if (typeof event.t !== 'number') return;
    const mark = document.createElement('div');
    mark.className = `event-mark kind-${event.kind}`;
    mark.dataset.event = String(index);
    mark.style.left = percent(event.t);
    mark.title = `${event.t.toFixed(2)} s: ${event.label}`;
    mark.addEventListener('click', () => seek(event.t));
    lane.append(mark);
  });
  renderAxis(duration, percent);
}

// The shaded wait before an answer: caller's speech ended -> first audio heard, split at each stage.
function latencySpan(turn, percent) {
  const { speech_end: from, first_audio_heard: to } = turn.stages;
  const span = document.createElement('div');
  span.className = 'latency-span';
  if (typeof from !== 'number' || typeof to !== 'number' || to <= from) return span;
  span.style.left = percent(from);
  span.style.width = percent(to - from);
  span.title = stagesText(turn);
  return span;
}

// "0.62 s: heard by the model 0.20 s, first audio out 0.41 s, first audio heard 0.62 s" (from speech end).
export function stagesText(turn) {
  const stages = turn.stages || {};
  const from = stages.speech_end;
  if (typeof from !== 'number') return '';
  const parts = [
    ['heard by the model', stages.recognised],
    ['first audio out', stages.first_audio_out],
    ['first audio heard', stages.first_audio_heard],
  ].filter(([, t]) => typeof t === 'number').map(([name, t]) => `${name} +${(t - from).toFixed(2)} s`);
  return `after the caller stopped: ${parts.join(', ')}`;
}

function renderAxis(duration, percent) {
  const step = AXIS_STEPS.find((candidate) => duration / candidate <= AXIS_TICKS) || AXIS_STEPS.at(-1);
  const axis = $('axis');
  for (let index = 0; index * step <= duration + 1e-6; index++) {
    const t = Math.round(index * step * 10) / 10;
    const tick = document.createElement('span');
    tick.className = 'tick';
    tick.style.left = percent(t);
    if (t > 0.9 * duration && t > 0) tick.classList.add('last'); // kept inside the track
    tick.textContent = t >= 60 ? `${Math.floor(t / 60)}:${String(Math.round(t % 60)).padStart(2, '0')}` : `${t} s`;
    axis.append(tick);
  }
}

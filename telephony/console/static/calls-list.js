// The calls page's list: one row per call (live feeds merged with recordings), the outcome filter and
// the outcome counts built from the server's documented set (`outcome_labels`), and the search box
// (numbers, call SIDs, and words said: /console/api/search).

import { $, formatSeconds, formatStart, getJson, isFailure, localDate } from './format.js';

const SEARCH_DELAY_MS = 250;

// One row per call: a live feed wins over its unfinished recording; a finished recording over its ended feed.
export function mergeRows(recorded, live, recording) {
  const rows = recorded.map((call) => ({ ...call, kind: call.complete || call.recovered ? 'recorded' : 'cut-short' }));
  for (const feed of live) {
    const index = rows.findIndex((row) => row.call_sid === feed.call_sid);
    if (feed.live) {
      const row = { ...feed, name: index >= 0 ? rows[index].name : null, kind: 'live', duration_s: feed.elapsed_s };
      if (index >= 0) rows[index] = row;
      else rows.unshift(row);
    } else if (index < 0 && !recording) {
      rows.push({ ...feed, kind: 'ended', duration_s: feed.elapsed_s });
    } else if (index >= 0 && rows[index].kind === 'cut-short') {
      rows[index].kind = 'finishing'; // the call just ended: its recording is being written
    }
  }
  return rows;
}

export function outcomeText(row) {
  if (row.kind === 'live') return 'in progress';
  if (row.kind === 'finishing') return 'finishing…';
  if (row.outcome_label) return row.outcome_label;
  if (row.kind === 'cut-short') return 'cut short';
  const by = row.ended_by ? `ended by ${row.ended_by}` : '–';
  return row.kind === 'ended' ? `${by} (not recorded)` : by;
}

export class CallsList {
  constructor(state, onOpen) {
    this.state = state;
    this.onOpen = onOpen;
    this.labels = {};
    this.said = new Map(); // recording name -> the first line matching the search
    this.searched = '';
    this.searchTimer = null;
    $('filter-text').addEventListener('input', () => {
      this.render();
      this.searchLater();
    });
    for (const id of ['filter-date', 'filter-outcome']) $(id).addEventListener('input', () => this.render());
  }

  // The outcome filter's options and the header's counts, from the server's set (nothing hard-coded here).
  setOutcomes(labels, counts) {
    const codes = Object.keys(labels || {});
    if (codes.join() !== Object.keys(this.labels).join()) {
      this.labels = { ...labels };
      const group = $('outcome-options');
      group.replaceChildren(...codes.map((code) => new Option(labels[code], code)));
      group.hidden = codes.length === 0;
    }
    this.state.outcomes = { ...(counts || {}) };
    const list = $('outcome-counts');
    list.replaceChildren();
    for (const code of codes) {
      const item = document.createElement('li');
      const button = document.createElement('button');
      button.type = 'button';
      button.className = `count${isFailure(code) ? ' failure' : ''}`;
      button.dataset.outcome = code;
      const count = (counts || {})[code] || 0;
      button.textContent = `${labels[code]}: ${count}`;
      button.setAttribute('aria-pressed', String($('filter-outcome').value === code));
      button.addEventListener('click', () => {
        $('filter-outcome').value = $('filter-outcome').value === code ? '' : code;
        this.render();
      });
      item.append(button);
      list.append(item);
    }
  }

  matches(row) {
    const text = $('filter-text').value.trim().toLowerCase();
    if (text) {
      const haystack = [row.from_number, row.to_number, row.call_sid, row.name].join(' ').toLowerCase();
      const digits = text.replace(/[^0-9]/g, '');
      const numbers = [row.from_number, row.to_number].join(' ').replace(/[^0-9]/g, '');
      const said = this.searched === text && row.name && this.said.has(row.name);
      if (!haystack.includes(text) && !(digits.length >= 3 && numbers.includes(digits)) && !said) return false;
    }
    const date = $('filter-date').value;
    if (date && localDate(row.started_at) !== date) return false;
    const wanted = $('filter-outcome').value;
    if (!wanted) return true;
    if (wanted === 'live') return row.kind === 'live';
    if (wanted === 'barge-in') return row.barge_ins > 0;
    if (wanted === 'cut-short') return row.kind === 'cut-short';
    if (wanted === 'recovered') return Boolean(row.recovered);
    if (wanted in this.labels) return row.kind !== 'live' && row.outcome === wanted;
    return row.kind !== 'live' && row.ended_by === wanted; // older links: ended by agent / caller / server
  }

  // Words said: the server searches the recordings' transcripts (after a short pause in typing).
  searchLater() {
    clearTimeout(this.searchTimer);
    const text = $('filter-text').value.trim();
    if (text.length < 3 || !this.state.recording) {
      this.said.clear();
      this.searched = '';
      return;
    }
    this.searchTimer = setTimeout(() => this.search(text), SEARCH_DELAY_MS);
  }

  async search(text) {
    try {
      const { matches } = await getJson(`/console/api/search?${new URLSearchParams({ q: text })}`);
      if ($('filter-text').value.trim() !== text) return; // typed on since
      this.said = new Map(matches.map((match) => [match.name, match]));
      this.searched = text.toLowerCase();
      this.state.searchMatches = matches.length;
      this.render();
    } catch (error) {
      $('calls-status').textContent = `Cannot search what was said: ${error.message}`;
    }
  }

  render() {
    const state = this.state;
    const body = $('calls').querySelector('tbody');
    const shown = state.rows.filter((row) => this.matches(row));
    const focused = document.activeElement && document.activeElement.closest('#calls tbody tr');
    const focusedKey = focused ? focused.dataset.key : null;
    body.replaceChildren();
    for (const call of shown) body.append(this.row(call, focusedKey));
    for (const button of document.querySelectorAll('#outcome-counts button')) {
      button.setAttribute('aria-pressed', String($('filter-outcome').value === button.dataset.outcome));
    }
    const live = state.rows.filter((row) => row.kind === 'live').length;
    const recordingNote = state.recording ? '' : ' Calls are not recorded: set VOICEBOT_RECORD_DIR (or serve --record) to keep them.';
    const filtered = shown.length === state.rows.length ? '' : `, ${shown.length} shown`;
    $('calls-status').textContent = state.rows.length
      ? `${state.rows.length} ${state.rows.length === 1 ? 'call' : 'calls'} (${live} in progress${filtered}), newest first.${recordingNote}`
      : `No calls yet: place one from the softphone.${recordingNote}`;
  }

  row(call, focusedKey) {
    const row = document.createElement('tr');
    row.dataset.key = call.call_sid || call.name;
    if (call.name) row.dataset.name = call.name;
    row.dataset.kind = call.kind;
    if (call.outcome) row.dataset.outcome = call.outcome;
    if (call.recovered) row.dataset.recovered = 'true';
    row.tabIndex = 0;
    row.setAttribute('aria-label', `Call from ${call.from_number || 'unknown'} at ${formatStart(call.started_at)}, ${outcomeText(call)}`);
    cell(row, 'Started', formatStart(call.started_at));
    cell(row, 'From', call.from_number || '–');
    cell(row, 'To', call.to_number || '–');
    cell(row, 'Duration', formatSeconds(call.duration_s));
    cell(row, 'Turns', String(call.turns ?? '–'));
    cell(row, 'Tools', String(call.tool_calls ?? '–'));
    cell(row, 'Barge-ins', String(call.barge_ins ?? '–'));
    cell(row, 'Outcome', '').append(...outcomeCell(call, this.said.get(call.name)));
    cell(row, 'Model', call.model || '–');
    cell(row, 'Agent', call.agent || '–');
    const open = this.state.open;
    row.classList.toggle('selected', open !== null && open.key === row.dataset.key);
    row.addEventListener('click', () => this.onOpen(call, true));
    row.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        this.onOpen(call, true);
      }
    });
    if (row.dataset.key === focusedKey) queueMicrotask(() => row.focus());
    return row;
  }
}

function cell(row, label, text) {
  const td = document.createElement('td');
  td.dataset.label = label;
  td.textContent = text;
  row.append(td);
  return td;
}

function outcomeCell(call, said) {
  const parts = [];
  const badge = document.createElement('span');
  badge.textContent = outcomeText(call);
  if (call.kind === 'live') badge.className = 'live-badge';
  else if (isFailure(call.outcome)) badge.className = 'failure-badge';
  parts.push(badge);
  if (call.recovered) {
    const recovered = document.createElement('span');
    recovered.className = 'recovered-badge';
    recovered.textContent = 'recovered';
    parts.push(' ', recovered);
  }
  const reason = call.outcome_reason || (call.kind !== 'live' && !call.outcome ? call.end_reason : null);
  if (reason) {
    const small = document.createElement('small');
    small.className = 'reason';
    small.textContent = reason;
    parts.push(small);
  }
  if (said) {
    const quote = document.createElement('small');
    quote.className = 'said';
    quote.textContent = `${said.role === 'caller' ? 'Caller' : 'Bot'}: “${said.text}”`;
    parts.push(quote);
  }
  return parts;
}

// The live call log: transcript lines (updated in place as the model refines them), barge-ins, tool
// calls, keypresses and the hang-up, from the server's event feed (/console/events, or the calls page's
// /console/api/live/…), plus what the page's own player did (a `clear` emptying its queue).

const WHO = { caller: 'Caller', bot: 'Bot' };

export function seconds(t) {
  return typeof t === 'number' ? `${t.toFixed(1)} s` : '';
}

function quoted(value) {
  return typeof value === 'string' ? `"${value}"` : JSON.stringify(value);
}

// `end_conversation(reason: "the caller said goodbye")`: a tool call as a person reads it.
export function toolCall(name, input) {
  const args = input && typeof input === 'object' ? Object.entries(input) : [];
  return `${name}(${args.map(([key, value]) => `${key}: ${quoted(value)}`).join(', ')})`;
}

export class EventLog {
  constructor(list, placeholder = null) {
    this.list = list;
    this.placeholder = placeholder;
    this.clear();
  }

  clear() {
    this.list.replaceChildren();
    this.turns = new Map();
    this.tools = new Map();
    this.lastBot = null;
    this.lastCaller = null;
    this.pendingLatency = null;
    this.lastSpeech = null;
    this.clock = null; // {t, at}: the feed's last time and when it arrived, to time the page's own lines
    if (this.placeholder) this.placeholder.hidden = false;
  }

  now() {
    if (!this.clock) return null;
    return this.clock.t + (performance.now() - this.clock.at) / 1000;
  }

  entry(kind, t, text) {
    if (this.placeholder) this.placeholder.hidden = true;
    const item = document.createElement('li');
    item.className = `entry ${kind}`;
    const time = document.createElement('time');
    time.textContent = seconds(t);
    const body = document.createElement('span');
    body.className = 'text';
    body.textContent = text;
    item.append(time, body);
    this.list.append(item);
    item.scrollIntoView({ block: 'nearest' });
    return item;
  }

  add(event) {
    if (typeof event.t === 'number') this.clock = { t: event.t, at: performance.now() };
    switch (event.type) {
      case 'call_started':
        this.entry('note', event.t, `Call ${event.call_sid} connected (from ${event.from_number || '–'} to ${event.to_number || '–'})`);
        break;
      case 'agent':
        this.entry('note', event.t, `Agent ${event.name || '–'} on ${event.model_id || event.model || 'its model'}`);
        break;
      case 'model_audio':
        this.entry('note', event.t, `Model audio: ${event.input_rate} Hz in, ${event.output_rate} Hz out`);
        break;
      case 'transcript':
        this.transcript(event);
        break;
      case 'caller_speech':
        this.callerSpeech(event);
        break;
      case 'latency':
        this.latency(event.seconds);
        break;
      case 'barge_in':
        this.entry('barge-in', event.t, `Barge-in: the caller talked over the bot (${event.detail}); the server sent clear`);
        break;
      case 'tool_use':
        this.tools.set(event.id, this.entry('tool', event.t, `Tool call: ${toolCall(event.name, event.input)}`));
        break;
      case 'tool_result': {
        const item = this.tools.get(event.id);
        if (item) item.querySelector('.text').textContent += ` → ${event.status}`;
        break;
      }
      case 'hangup':
        this.entry('hangup', event.t, `Hanging up: ${event.reason}`);
        break;
      case 'note':
        this.note(event);
        break;
      case 'ended':
        this.entry('ended', event.t, `Call ended by ${event.by}: ${event.reason}`);
        break;
      case 'agent_text': {
        const keypress = /pressed (\S+) on their keypad/.exec(event.text || '');
        if (keypress) this.entry('dtmf', event.t, `Keypad: the caller pressed ${keypress[1]}`);
        break; // other texts (the greeting instruction, notes for the agent) are not shown
      }
      default:
        break; // response: not shown
    }
  }

  note(event) {
    if (event.kind === 'caller_spoke') {
      this.entry('note', event.t, 'The caller spoke after the bot had finished: nothing to clear.');
    } else if (event.kind === 'error') {
      this.entry('error', event.t, `Error: ${event.detail}`);
    } else if (event.kind === 'wrap_up') {
      this.entry('error', event.t, `The server asked the bot to say goodbye: ${event.detail}`);
    } else {
      this.entry(`note ${event.kind}`, event.t, `${event.kind}: ${event.detail}`);
    }
  }

  transcript(event) {
    let item = this.turns.get(event.id);
    if (!item) {
      item = this.entry(`turn ${event.role}`, event.t, '');
      const who = document.createElement('b');
      who.textContent = `${WHO[event.role] || event.role}: `;
      item.querySelector('.text').before(who);
      this.turns.set(event.id, item);
      if (event.role === 'bot') {
        this.lastBot = item;
        if (this.pendingLatency !== null) this.showLatency(item, this.pendingLatency);
        this.pendingLatency = null;
      } else {
        this.lastCaller = item;
        if (this.lastSpeech) this.showSpeech(item, this.lastSpeech);
        this.lastSpeech = null;
      }
    }
    item.querySelector('.text').textContent = event.text;
    item.classList.toggle('partial', !event.final);
  }

  // The caller's speech as the bridge heard it: a caller line shows when it was said, not recognised.
  callerSpeech(event) {
    const line = this.lastCaller;
    if (line && !line.dataset.spoken) {
      this.showSpeech(line, event);
    } else {
      this.lastSpeech = event;
    }
  }

  showSpeech(line, span) {
    line.dataset.spoken = '1';
    line.querySelector('time').textContent = seconds(span.start);
    line.title = `said ${span.start.toFixed(2)}–${span.end.toFixed(2)} s`;
  }

  latency(value) {
    // The answer's audio went out; its transcript line may come before or after.
    const bot = this.lastBot;
    if (bot && !bot.querySelector('.latency') && bot === this.list.lastElementChild) {
      this.showLatency(bot, value);
    } else {
      this.pendingLatency = value;
    }
  }

  showLatency(item, value) {
    const badge = document.createElement('span');
    badge.className = 'latency';
    badge.textContent = `answered in ${value.toFixed(2)} s`;
    item.append(badge);
  }

  playbackCleared(droppedMs) {
    if (droppedMs <= 0) {
      this.entry('note', this.now(), 'Playback cleared: nothing was waiting to play');
      return;
    }
    const dropped = (droppedMs / 1000).toFixed(2);
    this.entry('cleared', this.now(), `Playback cleared: this phone dropped ${dropped} s of bot audio it had not played yet`);
  }
}

// The live call log: transcript lines (updated in place as the model refines them), barge-ins, tool
// calls and the hang-up, from the server's event feed (/console/events), plus what the page's own
// player did (a `clear` emptying its queue).

const WHO = { caller: 'Caller', bot: 'Bot' };

function seconds(t) {
  return typeof t === 'number' ? `${t.toFixed(1)} s` : '';
}

export class EventLog {
  constructor(list) {
    this.list = list;
    this.turns = new Map();
    this.tools = new Map();
  }

  clear() {
    this.list.replaceChildren();
    this.turns.clear();
    this.tools.clear();
  }

  entry(kind, t, text) {
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
    switch (event.type) {
      case 'call_started':
        this.entry('note', event.t, `Call ${event.call_sid} connected`);
        break;
      case 'model_audio':
        this.entry('note', event.t, `Model audio: ${event.input_rate} Hz in, ${event.output_rate} Hz out`);
        break;
      case 'transcript':
        this.transcript(event);
        break;
      case 'barge_in':
        this.entry('barge-in', event.t, `Barge-in: the caller spoke over the bot; the server sent clear (${event.detail} there)`);
        break;
      case 'tool_use': {
        const input = event.input && Object.keys(event.input).length ? ` ${JSON.stringify(event.input)}` : '';
        this.tools.set(event.id, this.entry('tool', event.t, `Tool ${event.name}${input}`));
        break;
      }
      case 'tool_result': {
        const item = this.tools.get(event.id);
        if (item) item.querySelector('.text').textContent += ` → ${event.status}`;
        break;
      }
      case 'hangup':
        this.entry('hangup', event.t, `Hanging up: ${event.reason}`);
        break;
      case 'note':
        this.entry(`note ${event.kind}`, event.t, `${event.kind}: ${event.detail}`);
        break;
      case 'ended':
        this.entry('ended', event.t, `Call ended by ${event.by}: ${event.reason}`);
        break;
      default:
        break; // agent_text, response: not shown
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
    }
    item.querySelector('.text').textContent = event.text;
    item.classList.toggle('partial', !event.final);
  }

  playbackCleared(droppedMs) {
    this.entry('cleared', null, `Playback cleared: ${(droppedMs / 1000).toFixed(2)} s of bot audio dropped`);
  }
}

// Listening in on a live call: both sides' 8 kHz μ-law frames from /console/api/live/{call}/listen
// (a long fetch with the console's sign-in; records of kind, length, payload), each played through
// its own phone-playback worklet: the caller on the left, the bot on the right, as in call.wav. The
// bot's frames come ahead of time and are paced by its queue; a `clear` (barge-in) empties it, as the
// caller's phone does. Read-only: nothing goes back to the call.

const CALLER = 1;
const BOT = 2;
const CLEAR = 3;
const PAN = { [CALLER]: -0.6, [BOT]: 0.6 };

export class ListenIn {
  // `stats` is updated as frames arrive (the page shows it, the tests read it); `onEnd(message)` once it stops.
  constructor(callSid, stats, onEnd) {
    this.url = `/console/api/live/${encodeURIComponent(callSid)}/listen`;
    this.stats = Object.assign(stats, { state: 'connecting', caller: 0, bot: 0, clears: 0, message: '' });
    this.onEnd = onEnd;
    this.abort = new AbortController();
    this.pending = new Uint8Array(0);
  }

  async start() {
    this.context = new AudioContext({ latencyHint: 'interactive' });
    await this.context.audioWorklet.addModule('/console/static/phone-audio.js');
    this.players = {};
    for (const side of [CALLER, BOT]) {
      const player = new AudioWorkletNode(this.context, 'phone-playback', { numberOfInputs: 0, outputChannelCount: [1] });
      const pan = new StereoPannerNode(this.context, { pan: PAN[side] });
      player.connect(pan).connect(this.context.destination);
      this.players[side] = player;
    }
    await this.context.resume();
    const response = await fetch(this.url, { credentials: 'same-origin', cache: 'no-store', signal: this.abort.signal });
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      throw new Error(body.detail || `HTTP ${response.status}`);
    }
    this.stats.state = 'listening';
    this.read(response.body.getReader());
  }

  async read(reader) {
    let message = 'The call has ended.';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        this.take(value);
      }
    } catch (error) {
      message = this.abort.signal.aborted ? 'Stopped listening.' : `The listen-in stopped: ${error.message}`;
    }
    this.close(message);
  }

  // Records may straddle chunks: keep the tail for the next one.
  take(chunk) {
    const data = new Uint8Array(this.pending.length + chunk.length);
    data.set(this.pending);
    data.set(chunk, this.pending.length);
    let at = 0;
    while (at + 3 <= data.length) {
      const size = (data[at + 1] << 8) | data[at + 2];
      if (at + 3 + size > data.length) break;
      this.play(data[at], data.slice(at + 3, at + 3 + size));
      at += 3 + size;
    }
    this.pending = data.slice(at);
  }

  play(kind, payload) {
    if (kind === CALLER || kind === BOT) {
      this.stats[kind === CALLER ? 'caller' : 'bot'] += 1;
      this.players[kind].port.postMessage({ ulaw: payload }, [payload.buffer]);
    } else if (kind === CLEAR) {
      this.stats.clears += 1;
      this.players[BOT].port.postMessage({ clear: true });
    }
  }

  stop() {
    this.abort.abort();
    this.close('Stopped listening.');
  }

  close(message) {
    if (this.stats.state === 'ended') return;
    this.stats.state = 'ended';
    this.stats.message = message;
    if (this.context) this.context.close();
    this.onEnd(message);
  }
}

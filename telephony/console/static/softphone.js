// The console's softphone: rings the bot over the same /media-stream WebSocket Twilio uses, speaking
// Twilio's Media Streams protocol itself (connected, start, 20 ms μ-law media, mark echoes, stop), and
// shows the call's transcript, barge-ins, tool calls and hang-up from the server's event feed. Its keypad
// sends DTMF as Twilio does (a `dtmf` event on the stream).
//
// window.voicebotConsole exposes the call's state and counters (the browser tests read them).

import { ServerUnreachable, endMessage, failureMessage } from './call-messages.js';
import { EventLog } from './event-log.js';

const ACCOUNT_SID = 'AC' + '0'.repeat(32);
const FIRST_TIMESTAMP_MS = 120; // Twilio's first media timestamp is ~100-160 ms, not 0

const stats = {
  state: 'idle', // idle -> connecting -> in-call -> ended
  callSid: null,
  framesSent: 0,
  framesReceived: 0,
  marksReceived: 0,
  marksEchoed: 0,
  clears: 0,
  lastClearDroppedMs: 0,
  maxQueuedMs: 0,
  queuedMs: 0,
  playedMs: 0,
  closeCode: null,
  endedBy: null,
  dtmfSent: 0,
  failure: null, // why the call failed, from the server's error note (e.g. the agent could not start)
  wrapUp: null, // why the server asked the bot to say goodbye (it is stopping), if it did
  endReason: null,
  muted: false,
  timer: '0:00',
  errors: [],
};
window.voicebotConsole = { stats };

const $ = (id) => document.getElementById(id);
const log = new EventLog($('events'), $('log-empty'));

function b64encode(bytes) {
  let text = '';
  for (let i = 0; i < bytes.length; i++) text += String.fromCharCode(bytes[i]);
  return btoa(text);
}

function b64decode(text) {
  const raw = atob(text);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return bytes;
}

const TIMER_MS = 250;
let timer = null;

// The call's running time, from the moment the stream started.
function runTimer(on) {
  clearInterval(timer);
  timer = null;
  if (!on) return;
  const started = performance.now();
  const tick = () => {
    const total = Math.floor((performance.now() - started) / 1000);
    stats.timer = `${Math.floor(total / 60)}:${String(total % 60).padStart(2, '0')}`;
    $('call-timer').textContent = stats.timer;
    $('call-timer').dateTime = `PT${total}S`;
  };
  tick();
  timer = setInterval(tick, TIMER_MS);
}

function setState(state, message) {
  if (state === 'in-call' && stats.state !== 'in-call') runTimer(true);
  else if (state !== 'in-call') runTimer(false);
  stats.state = state;
  document.body.dataset.state = state;
  $('status').textContent = message;
  $('call').disabled = state === 'connecting' || state === 'in-call';
  $('hangup').disabled = state !== 'in-call' && state !== 'connecting';
  $('mute').disabled = state !== 'in-call';
  $('from').disabled = $('to').disabled = state === 'connecting' || state === 'in-call';
  document.querySelectorAll('#keypad button').forEach((button) => {
    button.disabled = state !== 'in-call';
  });
}

class Call {
  constructor(ticket, audio) {
    this.ticket = ticket;
    this.audio = audio;
    this.sequence = 0;
    this.chunk = 0;
    this.closed = false;
  }

  open() {
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    this.ws = new WebSocket(`${scheme}://${location.host}${this.ticket.stream}`);
    this.ws.onopen = () => this.begin();
    this.ws.onmessage = (event) => this.receive(event.data);
    this.ws.onclose = (event) => this.finish(event.code);
    this.ws.onerror = () => stats.errors.push('websocket error');
    this.audio.playback.port.onmessage = (event) => this.fromPlayer(event.data);
    this.audio.capture.port.onmessage = (event) => this.sendFrame(event.data);
  }

  send(message) {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  nextSequence() {
    this.sequence += 1;
    return String(this.sequence);
  }

  begin() {
    const t = this.ticket;
    this.send({ event: 'connected', protocol: 'Call', version: '1.0.0' });
    this.send({
      event: 'start',
      sequenceNumber: this.nextSequence(),
      start: {
        accountSid: ACCOUNT_SID,
        streamSid: t.streamSid,
        callSid: t.callSid,
        tracks: ['inbound'],
        customParameters: t.parameters,
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
      streamSid: t.streamSid,
    });
    this.started = true;
    setState('in-call', 'In call');
  }

  sendFrame({ frame, level }) {
    $('mic-level').value = Math.min(1, level * 4);
    if (!this.started || this.closed) return;
    this.chunk += 1;
    stats.framesSent += 1;
    this.send({
      event: 'media',
      sequenceNumber: this.nextSequence(),
      media: {
        track: 'inbound',
        chunk: String(this.chunk),
        timestamp: String(FIRST_TIMESTAMP_MS + 20 * (this.chunk - 1)),
        payload: b64encode(frame),
      },
      streamSid: this.ticket.streamSid,
    });
  }

  receive(text) {
    let message;
    try {
      message = JSON.parse(text);
    } catch {
      stats.errors.push('server sent a frame that is not JSON');
      return;
    }
    if (message.streamSid !== this.ticket.streamSid) {
      stats.errors.push(`message for stream ${message.streamSid}`); // Twilio would reject it (31951)
      return;
    }
    const port = this.audio.playback.port;
    if (message.event === 'media') {
      const ulaw = b64decode(message.media.payload);
      stats.framesReceived += Math.floor(ulaw.length / 160); // a message may carry several 20 ms frames
      port.postMessage({ ulaw }, [ulaw.buffer]);
    } else if (message.event === 'mark') {
      stats.marksReceived += 1;
      port.postMessage({ mark: message.mark.name });
    } else if (message.event === 'clear') {
      stats.clears += 1;
      port.postMessage({ clear: true });
    } else {
      stats.errors.push(`unexpected event ${message.event}`);
    }
  }

  fromPlayer(data) {
    if (data.echo !== undefined) {
      this.echo(data.echo);
    } else if (data.cleared) {
      stats.lastClearDroppedMs = data.droppedMs;
      log.playbackCleared(data.droppedMs);
      data.marks.forEach((name) => this.echo(name));
    } else if (data.queuedMs !== undefined) {
      stats.queuedMs = data.queuedMs;
      stats.playedMs = data.playedMs;
      stats.maxQueuedMs = Math.max(stats.maxQueuedMs, data.queuedMs);
      document.body.classList.toggle('bot-speaking', data.queuedMs > 0);
    }
  }

  sendDigit(digit) {
    if (!this.started || this.closed) return;
    stats.dtmfSent += 1;
    this.send({
      event: 'dtmf',
      streamSid: this.ticket.streamSid,
      sequenceNumber: this.nextSequence(),
      dtmf: { track: 'inbound_track', digit },
    });
  }

  echo(name) {
    stats.marksEchoed += 1;
    this.send({ event: 'mark', sequenceNumber: this.nextSequence(), streamSid: this.ticket.streamSid, mark: { name } });
  }

  hangUp() {
    if (this.closed) return;
    this.send({
      event: 'stop',
      sequenceNumber: this.nextSequence(),
      streamSid: this.ticket.streamSid,
      stop: { accountSid: ACCOUNT_SID, callSid: this.ticket.callSid },
    });
    this.ws.close(1000, 'caller hung up');
  }

  finish(code) {
    if (this.closed) return;
    this.closed = true;
    stats.closeCode = code;
    this.audio.close();
    if (!this.started) {
      if (feed) feed.close(); // no call, so no events will come
      setState('idle', `The server refused the call's stream (code ${code}): see the server log.`);
      return;
    }
    setState('ended', endMessage(stats));
    document.body.classList.remove('bot-speaking');
  }
}

class PhoneAudio {
  static async open() {
    if (!window.isSecureContext || !navigator.mediaDevices) {
      // Browsers give microphones and AudioWorklets to secure pages only.
      throw new Error(`this page is not secure: open the console over https:// (your PUBLIC_URL) or on localhost`);
    }
    const context = new AudioContext({ latencyHint: 'interactive' });
    try {
      await context.audioWorklet.addModule('/console/static/phone-audio.js').catch(() => {
        throw new ServerUnreachable(); // the page's own script could not be fetched
      });
      const microphone = await navigator.mediaDevices.getUserMedia({
        audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
      });
      await context.resume();
      return new PhoneAudio(context, microphone);
    } catch (error) {
      context.close();
      if (error instanceof ServerUnreachable) throw error;
      if (error.name === 'NotAllowedError') throw new Error('the microphone was refused: allow it for this site');
      throw error;
    }
  }

  constructor(context, microphone) {
    this.context = context;
    this.microphone = microphone;
    this.capture = new AudioWorkletNode(context, 'phone-capture', { numberOfInputs: 1, numberOfOutputs: 0 });
    this.playback = new AudioWorkletNode(context, 'phone-playback', { numberOfInputs: 0, outputChannelCount: [1] });
    context.createMediaStreamSource(microphone).connect(this.capture);
    this.playback.connect(context.destination);
  }

  mute(muted) {
    this.capture.port.postMessage({ muted });
  }

  close() {
    this.microphone.getTracks().forEach((track) => track.stop());
    this.context.close();
  }
}

let call = null;
let feed = null;

async function placeCall() {
  setState('connecting', 'Connecting…');
  log.clear();
  Object.assign(stats, { framesSent: 0, framesReceived: 0, marksReceived: 0, marksEchoed: 0, clears: 0 });
  Object.assign(stats, { lastClearDroppedMs: 0, maxQueuedMs: 0, closeCode: null, endedBy: null, errors: [] });
  Object.assign(stats, { dtmfSent: 0, failure: null, wrapUp: null, endReason: null });
  setMuted(false);
  let audio;
  try {
    audio = await PhoneAudio.open();
  } catch (error) {
    setState('idle', error instanceof ServerUnreachable ? error.message : `Cannot use the microphone: ${error.message}. Then call again.`);
    return;
  }
  const callerId = { from: $('from').value.trim(), to: $('to').value.trim() };
  let response;
  try {
    response = await fetch('/console/session', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(callerId),
    });
  } catch {
    audio.close();
    setState('idle', new ServerUnreachable().message);
    return;
  }
  const ticket = await response.json().catch(() => ({}));
  if (!response.ok) {
    audio.close();
    const signIn = response.status === 401 ? 'Signed out: reload the page and sign in with the console token.' : null;
    setState('idle', signIn || ticket.error || `The server refused the call (HTTP ${response.status}).`);
    return;
  }
  stats.callSid = ticket.callSid;
  $('call-sid').textContent = ticket.callSid;
  followEvents(ticket.events);
  call = new Call(ticket, audio);
  call.open();
}

function followEvents(url) {
  if (feed) feed.close();
  const source = new EventSource(url);
  feed = source;
  source.onmessage = (message) => {
    const event = JSON.parse(message.data);
    log.add(event);
    if (event.type === 'note' && event.kind === 'error') {
      stats.failure = event.detail;
      $('status').textContent = failureMessage(event.detail);
    }
    if (event.type === 'note' && event.kind === 'wrap_up') { // the server is stopping (a shutdown)
      stats.wrapUp = event.detail;
      if (stats.state === 'in-call') $('status').textContent = `The server is stopping: ${event.detail} The bot was asked to say goodbye.`;
    }
    if (event.type === 'ended') {
      stats.endedBy = event.by;
      stats.endReason = event.reason;
      source.close();
    }
    if (stats.state === 'ended' && ['ended', 'note'].includes(event.type)) $('status').textContent = endMessage(stats); // came after the socket closed
  };
}

function setMuted(muted) {
  stats.muted = muted;
  $('mute').setAttribute('aria-pressed', String(muted));
  $('mute').textContent = muted ? 'Unmute' : 'Mute';
  $('mute-state').hidden = !muted;
  document.body.classList.toggle('muted', muted);
  if (call && !call.closed) call.audio.mute(muted);
}

// In a call, the keyboard's digits, * and # press the keypad (unless typing in a field).
function keyboardDigit(event) {
  if (stats.state !== 'in-call' || event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
  if (!/^[0-9*#]$/.test(event.key) || event.target.closest('input, textarea, select')) return;
  const button = document.querySelector(`#keypad button[data-digit="${event.key}"]`);
  event.preventDefault();
  button.classList.add('pressed');
  setTimeout(() => button.classList.remove('pressed'), 150);
  if (call) call.sendDigit(event.key);
}

$('call').addEventListener('click', () => placeCall().catch((error) => setState('idle', `Call failed: ${error.message}`)));
$('hangup').addEventListener('click', () => call && call.hangUp());
$('mute').addEventListener('click', () => setMuted(!stats.muted));
document.addEventListener('keydown', keyboardDigit);
document.querySelectorAll('#keypad button').forEach((button) => {
  button.addEventListener('click', () => call && call.sendDigit(button.dataset.digit));
});
setState('idle', 'Ready: press Call and talk to the bot.');

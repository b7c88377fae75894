// AudioWorklet processors that make the browser sound like a phone line: 8 kHz G.711 μ-law both ways.
//
// phone-capture:  microphone (context rate) -> low-pass + resample to 8 kHz -> μ-law -> 160-byte frames (20 ms)
// phone-playback: μ-law frames and marks in the order the server sent them -> 8 kHz -> context rate;
//                 a mark is echoed once the audio queued before it has played, and `clear` empties the
//                 queue and echoes every pending mark at once (Twilio's player, as the design notes describe).
//
// Both run on the audio thread, so capture is paced by the sound card, like a phone.

const PHONE_RATE = 8000;
const FRAME_SAMPLES = 160; // 20 ms at 8 kHz
const CUTOFF_HZ = 3600; // telephone band, below the 4 kHz Nyquist of 8 kHz

// --- G.711 μ-law ------------------------------------------------------------------------------------

const ULAW_DECODE = new Float32Array(256);
for (let i = 0; i < 256; i++) {
  const u = ~i & 0xff;
  const exponent = (u >> 4) & 0x07;
  const magnitude = ((((u & 0x0f) << 3) + 0x84) << exponent) - 0x84;
  ULAW_DECODE[i] = ((u & 0x80) ? -magnitude : magnitude) / 32768;
}

function ulawEncode(sample) {
  // sample: float in [-1, 1]
  let pcm = Math.max(-32768, Math.min(32767, Math.round(sample * 32768)));
  const sign = pcm < 0 ? 0x80 : 0;
  if (sign) pcm = -pcm;
  pcm = Math.min(pcm, 32635) + 0x84;
  let exponent = 7;
  for (let mask = 0x4000; (pcm & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (pcm >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

// --- band-limited resampling (windowed sinc, table-driven, streaming) ------------------------------

class Resampler {
  constructor(inRate, outRate, cutoffHz, lobes = 8) {
    this.step = inRate / outRate; // input samples per output sample
    const fc = Math.min(cutoffHz / inRate, 0.5); // cut-off as a fraction of the input rate
    this.half = Math.ceil(lobes / (2 * fc)); // kernel half-width, in input samples
    this.resolution = 64; // table points per input sample
    const size = this.half * this.resolution + 2;
    this.table = new Float32Array(size);
    for (let i = 0; i < size; i++) {
      const u = i / this.resolution;
      const x = 2 * fc * u;
      const sinc = x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
      const w = u >= this.half ? 0 : 0.42 + 0.5 * Math.cos(Math.PI * u / this.half) + 0.08 * Math.cos(2 * Math.PI * u / this.half);
      this.table[i] = 2 * fc * sinc * w; // Blackman window; unity gain at DC
    }
    this.reset();
  }

  reset() {
    this.buffer = new Float32Array(this.half); // silence before the first sample: full left context
    this.length = this.half;
    this.position = this.half; // where the next output sample falls, in buffer samples
  }

  kernel(u) {
    const index = Math.abs(u) * this.resolution;
    const i = Math.floor(index);
    if (i >= this.table.length - 1) return 0;
    const f = index - i;
    return this.table[i] + (this.table[i + 1] - this.table[i]) * f;
  }

  process(input) {
    this.append(input);
    const out = [];
    while (this.position + this.half < this.length) {
      const first = Math.ceil(this.position - this.half);
      const last = Math.floor(this.position + this.half);
      let sum = 0;
      for (let k = first; k <= last; k++) sum += this.buffer[k] * this.kernel(this.position - k);
      out.push(sum);
      this.position += this.step;
    }
    const drop = Math.floor(this.position) - this.half; // keep the left context of the next output
    if (drop > 0) {
      this.buffer.copyWithin(0, drop, this.length);
      this.length -= drop;
      this.position -= drop;
    }
    return Float32Array.from(out);
  }

  append(input) {
    if (this.length + input.length > this.buffer.length) {
      const grown = new Float32Array(Math.max(2 * this.buffer.length, this.length + input.length));
      grown.set(this.buffer.subarray(0, this.length));
      this.buffer = grown;
    }
    this.buffer.set(input, this.length);
    this.length += input.length;
  }
}

// --- microphone -> μ-law frames ---------------------------------------------------------------------

class PhoneCapture extends AudioWorkletProcessor {
  constructor() {
    super();
    this.resampler = new Resampler(sampleRate, PHONE_RATE, CUTOFF_HZ);
    this.frame = new Uint8Array(FRAME_SAMPLES);
    this.filled = 0;
    this.energy = 0;
    this.muted = false;
    this.port.onmessage = (event) => {
      if ('muted' in event.data) this.muted = !!event.data.muted;
    };
  }

  process(inputs) {
    const channel = inputs[0] && inputs[0][0];
    // No input yet (device starting): still keep 20 ms pacing with silence, as a phone line does.
    const samples = this.resampler.process(channel || new Float32Array(128));
    for (let i = 0; i < samples.length; i++) {
      const sample = this.muted ? 0 : samples[i];
      this.energy += sample * sample;
      this.frame[this.filled++] = ulawEncode(sample);
      if (this.filled === FRAME_SAMPLES) {
        const level = Math.sqrt(this.energy / FRAME_SAMPLES);
        this.port.postMessage({ frame: this.frame, level }, [this.frame.buffer]);
        this.frame = new Uint8Array(FRAME_SAMPLES);
        this.filled = 0;
        this.energy = 0;
      }
    }
    return true;
  }
}

// --- μ-law frames and marks -> speaker ------------------------------------------------------------

class PhonePlayback extends AudioWorkletProcessor {
  constructor() {
    super();
    this.resampler = new Resampler(PHONE_RATE, sampleRate, CUTOFF_HZ);
    this.queue = []; // {samples: Float32Array, offset} or {mark: name}, in the order the server sent them
    this.queuedSamples = 0;
    this.playedSamples = 0;
    this.lastReport = 0;
    this.port.onmessage = (event) => this.receive(event.data);
  }

  receive(message) {
    if (message.ulaw) {
      const ulaw = message.ulaw;
      const pcm = new Float32Array(ulaw.length);
      for (let i = 0; i < ulaw.length; i++) pcm[i] = ULAW_DECODE[ulaw[i]];
      const samples = this.resampler.process(pcm);
      this.queue.push({ samples, offset: 0 });
      this.queuedSamples += samples.length;
    } else if (message.mark !== undefined) {
      this.queue.push({ mark: message.mark });
      this.echoReadyMarks(); // nothing queued before it: echoed at once
    } else if (message.clear) {
      const marks = this.queue.filter((item) => item.mark !== undefined).map((item) => item.mark);
      const droppedMs = (1000 * this.queuedSamples) / sampleRate;
      this.queue = [];
      this.queuedSamples = 0;
      this.resampler.reset();
      this.port.postMessage({ cleared: true, droppedMs, marks });
    }
  }

  echoReadyMarks() {
    while (this.queue.length && this.queue[0].mark !== undefined) {
      this.port.postMessage({ echo: this.queue.shift().mark });
    }
  }

  process(_inputs, outputs) {
    const output = outputs[0][0];
    let written = 0;
    while (written < output.length) {
      this.echoReadyMarks();
      const head = this.queue[0];
      if (!head) break;
      const take = Math.min(output.length - written, head.samples.length - head.offset);
      output.set(head.samples.subarray(head.offset, head.offset + take), written);
      head.offset += take;
      written += take;
      this.queuedSamples -= take;
      if (head.offset >= head.samples.length) this.queue.shift();
    }
    this.echoReadyMarks();
    for (let c = 1; c < outputs[0].length; c++) outputs[0][c].set(output);
    this.playedSamples += written;
    if (currentTime - this.lastReport >= 0.1) {
      this.lastReport = currentTime;
      this.port.postMessage({ queuedMs: (1000 * this.queuedSamples) / sampleRate, playedMs: (1000 * this.playedSamples) / sampleRate });
    }
    return true;
  }
}

registerProcessor('phone-capture', PhoneCapture);
registerProcessor('phone-playback', PhonePlayback);

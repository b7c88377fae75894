"""What the offline model costs and how well it hears: start time, CPU per call, barge-in delay, accuracy.

Run from the repository root: ``uv run python benchmarks/offline_model.py``. Caller speech is espeak in
two voices other than the bot's, carried through the real telephone path (8 kHz μ-law and back).
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from strands.bidi.types import AudioDelta, BidiMessage
from strands.types.content import TextBlock

from agent.offline import (
    CALLER_VOICE,
    FRONT_DESK,
    OfflineModel,
    PhraseMatcher,
    PhraseRecognizer,
    Synthesizer,
    Voice,
)
from agent.offline.vad import SpeechDetector, Utterance
from telephony.codec import InboundAudio, OutboundAudio

VOICES = [CALLER_VOICE, Voice("en-us+m3", 150, 50)]
PIECE = 640  # 20 ms at 16 kHz, as the bridge sends caller audio


def through_the_phone(pcm16: bytes) -> bytes:
    outbound = OutboundAudio(16000)
    return InboundAudio(16000).convert(outbound.convert(pcm16) + outbound.flush())


def caller_says(text: str, voice: Voice, before_s: float = 0.5, after_s: float = 1.0) -> bytes:
    speech = Synthesizer(voice).synthesize(text)
    return through_the_phone(bytes(round(before_s * 32000)) + speech + bytes(round(after_s * 32000)))


def cold_import_s() -> float:
    """A fresh interpreter importing the package (numpy, strands and pocketsphinx included)."""
    code = "import time; t = time.perf_counter(); import agent.offline; print(time.perf_counter() - t)"
    root = Path(__file__).resolve().parent.parent
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    return float(result.stdout.strip())


async def start_s(runs: int = 10) -> list[float]:
    """Constructing the model and starting it: what each call pays once the server runs."""
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        model = OfflineModel()
        await model.start(tools=[])
        times.append(time.perf_counter() - began)
        await model.stop()
    return times


async def cpu_per_call_second() -> tuple[float, float]:
    """CPU seconds (all threads) per second of caller audio for a call of phrases and pauses."""
    phrases = ["what time is it", "tell me a joke", "another joke", "transfer me", "help me", "goodbye"]
    audio = b"".join(caller_says(phrase, CALLER_VOICE, before_s=1.0, after_s=4.0) for phrase in phrases * 2)
    model = OfflineModel(lead_s=3600)  # emit replies at once: this measures work, not waiting
    await model.start(tools=[])
    replies = 0

    async def drain() -> None:
        nonlocal replies
        async for event in model.receive():
            replies += event.get("type") == "bidi_response_stop"

    drainer = asyncio.create_task(drain())
    cpu = time.process_time()
    await model.send(AudioDelta(format="pcm", source={"bytes": b""}))
    for offset in range(0, len(audio), PIECE):
        await model.send(AudioDelta(format="pcm", source={"bytes": audio[offset : offset + PIECE]}))
        await asyncio.sleep(0)
    while replies < len(phrases) * 2:
        await asyncio.sleep(0.01)
    used = time.process_time() - cpu
    await model.stop()
    await drainer
    seconds = len(audio) / 32000
    return used / seconds, seconds


async def barge_in_delay_s(voice: Voice) -> float:
    """Caller audio heard, from the start of their speech, until the model says the caller barged in."""
    model = OfflineModel(lead_s=3600)
    await model.start(tools=[])
    await model.send(_text("The caller has just been connected. Greet them in one short sentence."))
    while not model._talking():  # the greeting starts playing
        await asyncio.sleep(0.005)
    silence_s = 0.5
    audio = caller_says("tell me a joke", voice, before_s=silence_s)
    heard = 0.0
    for offset in range(0, len(audio), PIECE):
        await model.send(AudioDelta(format="pcm", source={"bytes": audio[offset : offset + PIECE]}))
        heard += PIECE / 32000
        if model.barge_ins:
            break
    await model.stop()
    return heard - silence_s


def _text(text: str) -> BidiMessage:
    return BidiMessage(content=[TextBlock(text)])


def accuracy(voice: Voice, recognizer: PhraseRecognizer) -> tuple[int, int, list[str]]:
    """Phrases of the default script recognised as their intent, through voice activity and recognition."""
    matcher = PhraseMatcher(FRONT_DESK.phrases)
    correct, wrong = 0, []
    for intent in FRONT_DESK.intents:
        for phrase in intent.phrases:
            detector = SpeechDetector()
            audio = caller_says(phrase, voice)
            utterances = [
                event
                for offset in range(0, len(audio), PIECE)
                for event in detector.feed(audio[offset : offset + PIECE])
                if isinstance(event, Utterance)
            ]
            match = recognizer.listen(utterances[0].pcm16, matcher)[1] if utterances else None
            if match is not None and match.intent == intent.name:
                correct += 1
            else:
                wrong.append(phrase)
    return correct, sum(len(intent.phrases) for intent in FRONT_DESK.intents), wrong


async def main() -> None:
    logging.basicConfig(level=logging.ERROR)  # the bare model has no tools: its "no such tool" warnings are expected
    print(f"cold import of agent.offline: {cold_import_s() * 1000:.0f} ms (numpy, strands, pocketsphinx)")
    starts = await start_s()
    median, worst = statistics.median(starts) * 1000, max(starts) * 1000
    print(f"model construct + start, per call: median {median:.0f} ms, max {worst:.0f} ms")
    share, seconds = await cpu_per_call_second()
    print(f"CPU per call: {share * 100:.2f} % of a core ({seconds:.0f} s of caller audio, 12 replies, all threads)")
    for voice in VOICES:
        delay = await barge_in_delay_s(voice)
        print(f"barge-in detected {delay * 1000:.0f} ms after the caller starts speaking ({voice.name})")
    recognizer = PhraseRecognizer([phrase for intent in FRONT_DESK.intents for phrase in intent.phrases])
    for voice in VOICES:
        correct, total, wrong = accuracy(voice, recognizer)
        print(f"recognition, {voice.name} at {voice.words_per_minute} wpm: {correct}/{total} phrases; wrong: {wrong}")


if __name__ == "__main__":
    asyncio.run(main())

"""Real speech through the real telephone path: espeak callers -> 8 kHz μ-law -> 16 kHz -> the offline model.

Caller utterances are synthesised in voices other than the bot's, sent through ``telephony.codec`` exactly
as a call carries them (``OutboundAudio`` to μ-law frames, ``InboundAudio`` back to the model's 16 kHz),
end-pointed by the model's own voice activity detector and recognised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from strands.bidi.types import AudioDelta, BidiTranscriptDeltaEvent

from agent.offline import CALLER_VOICE, FRONT_DESK, OfflineModel, PhraseMatcher, PhraseRecognizer, Synthesizer, Voice
from agent.offline.vad import SpeechDetector, Utterance
from telephony.codec import InboundAudio, OutboundAudio

SECOND_CALLER = Voice("en-us+m3", 150, 50)
"""A slower male caller, to check recognition is not tuned to one voice."""
MIN_ACCURACY = 0.85
"""Per voice; measured 21/21 and 20/21 (see the report printed by the accuracy test)."""


def through_the_phone(pcm16: bytes, rate: int = 16000) -> bytes:
    """What the model receives when ``pcm16`` (at ``rate``) is said into a Twilio call."""
    outbound = OutboundAudio(rate)
    ulaw = outbound.convert(pcm16) + outbound.flush()
    return InboundAudio(16000).convert(ulaw)


def caller_says(text: str, voice: Voice = CALLER_VOICE, before_s: float = 0.5, after_s: float = 1.0) -> bytes:
    """A caller utterance with silence around it, as the model hears it over the phone."""
    speech = Synthesizer(voice).synthesize(text)
    return through_the_phone(bytes(round(before_s * 32000)) + speech + bytes(round(after_s * 32000)))


def pieces(audio: bytes, size: int = 640) -> Iterator[bytes]:
    """20 ms pieces, as the bridge sends caller audio."""
    for offset in range(0, len(audio), size):
        yield audio[offset : offset + size]


@pytest.fixture(scope="module")
def recognizer() -> PhraseRecognizer:
    return PhraseRecognizer([phrase for intent in FRONT_DESK.intents for phrase in intent.phrases])


def hear(recognizer: PhraseRecognizer, audio: bytes) -> str | None:
    """The intent the model takes from ``audio``: its detector's utterance, recognised and matched."""
    detector = SpeechDetector()
    utterances = [event for piece in pieces(audio) for event in detector.feed(piece) if isinstance(event, Utterance)]
    assert len(utterances) == 1, f"expected one utterance, found {len(utterances)}"
    _, match = recognizer.listen(utterances[0].pcm16, PhraseMatcher(FRONT_DESK.phrases))
    return match.intent if match else None


@pytest.mark.parametrize("voice", [CALLER_VOICE, SECOND_CALLER], ids=["caller-f2", "caller-m3"])
def test_every_phrase_of_the_default_script_is_recognised(recognizer: PhraseRecognizer, voice: Voice) -> None:
    results = [
        (intent.name, phrase, hear(recognizer, caller_says(phrase, voice)))
        for intent in FRONT_DESK.intents
        for phrase in intent.phrases
    ]
    wrong = [(phrase, got) for expected, phrase, got in results if got != expected]
    correct = len(results) - len(wrong)
    print(f"\n{voice.name}: {correct}/{len(results)} phrases recognised; wrong: {wrong}")
    assert correct >= MIN_ACCURACY * len(results), wrong
    intents_reached = {expected for expected, _, got in results if got == expected}
    assert intents_reached == {intent.name for intent in FRONT_DESK.intents}, "every intent reachable by voice"


def test_the_key_phrases_are_recognised_in_both_voices(recognizer: PhraseRecognizer) -> None:
    for voice in (CALLER_VOICE, SECOND_CALLER):
        for phrase, intent in [("what time is it", "time"), ("tell me a joke", "joke"), ("goodbye", "goodbye")]:
            assert hear(recognizer, caller_says(phrase, voice)) == intent, (voice.name, phrase)


def test_the_demo_question_is_understood_in_every_take_and_frame_phase(recognizer: PhraseRecognizer) -> None:
    """`voicebot demo`'s first line, sent as the demo sends it (8 kHz synthesis, μ-law, 16 kHz).

    espeak never says it the same way twice (see ``Synthesizer``), and where speech starts against the
    detector's 30 ms frames depends on timing. One listen understood 99 of 120 such takes: the final
    "it" is faint at telephone bandwidth. The second listen is what makes every take count.
    """
    synthesizer = Synthesizer(CALLER_VOICE, sample_rate=8000)
    missed = []
    for take in range(4):
        speech = synthesizer.synthesize("what time is it")
        for lead_ms in (0, 10, 20):
            audio = through_the_phone(bytes(2 * (4000 + 8 * lead_ms)) + speech + bytes(16000), rate=8000)
            if hear(recognizer, audio) != "time":
                missed.append((take, lead_ms))
    assert not missed


def test_out_of_script_speech_is_mostly_not_forced_into_a_phrase(recognizer: PhraseRecognizer) -> None:
    sentences = ["can you hear me", "the weather is nice today", "i would like to book a table for two", "yes"]
    rejected = sum(hear(recognizer, caller_says(sentence)) is None for sentence in sentences)
    print(f"\nout of script: {rejected}/{len(sentences)} rejected")
    assert rejected >= 1


async def test_the_model_reports_what_it_heard_as_user_transcripts() -> None:
    model = OfflineModel(lead_s=60)
    await model.start(tools=[])
    heard: list[str] = []

    async def collect() -> None:
        async for event in model.receive():
            if isinstance(event, BidiTranscriptDeltaEvent) and event.role == "user":
                heard.append(event.delta)

    collector = asyncio.create_task(collect())
    try:
        for phrase in ("tell me a joke", "transfer me"):
            for piece in pieces(caller_says(phrase)):
                await model.send(AudioDelta(format="pcm", source={"bytes": piece}))
        async with asyncio.timeout(10):
            while len(heard) < 2:
                await asyncio.sleep(0.02)
    finally:
        await model.stop()
        await collector
    assert heard == ["tell me a joke", "transfer me"]

"""The offline model's parts on their own: speech synthesis, dictionary, phrase matching, script, voice activity."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import numpy as np
import pytest

from agent.models import create_model
from agent.offline import (
    BOT_VOICE,
    CALLER_VOICE,
    FRONT_DESK,
    Heard,
    OfflineModel,
    PhraseMatcher,
    PhraseRecognizer,
    Synthesizer,
    Voice,
    VoiceError,
    create_agent,
    current_time,
    spoken_time,
)
from agent.offline.conversation import GREETING, NOT_UNDERSTOOD, UNKNOWN_KEY, Conversation
from agent.offline.lexicon import LexiconError, pronunciations, words_of
from agent.offline.vad import SpeechDetector, SpeechStarted, Utterance
from telephony.call_info import CallInfo
from telephony.config import ConfigError, Settings, load_settings

from ..audio import dominant_hz, pcm

# --- speaking ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("rate", [8000, 16000, 24000])
def test_speech_comes_at_the_declared_rate_with_a_sensible_duration(rate: int) -> None:
    audio = Synthesizer(BOT_VOICE, rate).synthesize("Thanks for calling. Goodbye!")
    samples = pcm(audio)
    seconds = samples.size / rate
    assert 1.0 < seconds < 3.0, seconds  # five words at ~165 words per minute, plus pauses
    loud = np.abs(samples) > 1000
    assert loud.mean() > 0.3, "mostly speech, not silence"
    assert dominant_hz(samples, rate) < 4000, "speech energy sits in the telephone band"


def test_the_two_voices_differ() -> None:
    bot = pcm(Synthesizer(BOT_VOICE).synthesize("what time is it"))
    caller = pcm(Synthesizer(CALLER_VOICE).synthesize("what time is it"))
    assert BOT_VOICE.name != CALLER_VOICE.name
    assert abs(bot.size - caller.size) > 160 or not np.array_equal(bot[:8000], caller[:8000])
    assert _pitch_hz(caller) > _pitch_hz(bot) * 1.3, "the caller's female voice is clearly higher"


def _pitch_hz(samples: np.ndarray, rate: int = 16000) -> float:
    """Median fundamental frequency from the autocorrelation of loud 40 ms frames."""
    estimates = []
    for start in range(0, samples.size - 640, 640):
        frame = samples[start : start + 640]
        if np.sqrt(np.mean(frame**2)) < 1500:
            continue
        correlation = np.correlate(frame, frame, "full")[640:]
        low, high = rate // 400, rate // 70
        estimates.append(rate / (low + int(np.argmax(correlation[low:high]))))
    return float(np.median(estimates))


def test_an_unknown_voice_is_refused_with_the_fix() -> None:
    with pytest.raises(VoiceError, match="en-us"):
        Synthesizer(Voice("matthew"))


# --- the dictionary ----------------------------------------------------------------------------------


def test_pronunciations_come_from_the_wheel_dictionary_with_variants() -> None:
    found = pronunciations(["what", "goodbye", "that's", "a"])
    assert found["goodbye"] == ["G UH D B AY"]
    assert found["what"] == ["W AH T", "HH W AH T"]
    assert found["that's"] == ["DH AE T S"]
    assert len(found["a"]) == 2


def test_an_unknown_word_names_itself_and_the_fix() -> None:
    with pytest.raises(LexiconError, match=r"zorblax.*pronunciations"):
        pronunciations(["hello", "zorblax"])
    assert pronunciations(["zorblax"], {"zorblax": "Z AO R B L AE K S"}) == {"zorblax": ["Z AO R B L AE K S"]}


def test_words_of_keeps_apostrophes_and_drops_punctuation() -> None:
    assert words_of("That’s all, THANKS!") == ["that's", "all", "thanks"]


# --- matching what was heard -------------------------------------------------------------------------

MATCHER = PhraseMatcher(FRONT_DESK.phrases)


@pytest.mark.parametrize(
    ("heard", "intent"),
    [
        ("what time is it", "time"),
        ("what time is", "time"),  # the grammar decoder stopped a word early
        ("um what time is it please", "time"),
        ("what's the time", "time"),
        ("tell me joke", "joke"),
        ("good bye", "goodbye"),
        ("thanks that's all", "goodbye"),
        ("that's all thank", "goodbye"),
        ("could you transfer me", "transfer"),
        ("talk to person", "transfer"),
    ],
)
def test_noisy_text_maps_to_the_nearest_phrase(heard: str, intent: str) -> None:
    match = MATCHER.match(heard)
    assert match is not None and match.intent == intent, match


@pytest.mark.parametrize("heard", ["", "the weather is nice today", "my name is john smith", "yes"])
def test_text_far_from_every_phrase_matches_nothing(heard: str) -> None:
    assert MATCHER.match(heard) is None


def test_speech_needs_both_recognisers_to_agree() -> None:
    assert MATCHER.match_heard(Heard("tell me a joke", "you me a joke")).intent == "joke"  # type: ignore[union-attr]
    assert MATCHER.match_heard(Heard("what time is", "what time")).intent == "time"  # type: ignore[union-attr]
    # The grammar forced out-of-script speech into a phrase; the free transcription does not support it.
    assert MATCHER.match_heard(Heard("i want a real person", "bye what to a the")) is None
    # The grammar missed; the free transcription is a phrase by itself.
    assert MATCHER.match_heard(Heard("what can i", "goodbye")).intent == "goodbye"  # type: ignore[union-attr]
    assert MATCHER.match_heard(Heard("", "")) is None


def test_a_refused_utterance_is_heard_a_second_time_half_a_frame_later(monkeypatch: pytest.MonkeyPatch) -> None:
    recognizer = PhraseRecognizer(["what time is it"])
    audio = bytes(range(256)) * 100
    decoded: list[bytes] = []
    answers = {
        len(audio): Heard("what time is", "what can hi me can"),  # the free search heard noise: refused
        len(audio) - 160: Heard("what time is", "what time is"),  # 5 ms (80 samples) later: supported
    }

    def recognize(pcm16: bytes) -> Heard:
        decoded.append(pcm16)
        return answers[len(pcm16)]

    monkeypatch.setattr(recognizer, "recognize", recognize)
    heard, match = recognizer.listen(audio, MATCHER)
    assert decoded == [audio, audio[160:]]
    assert heard == Heard("what time is", "what time is") and match is not None and match.intent == "time"

    answers[len(audio) - 160] = Heard("what time is", "can me can")
    decoded.clear()
    heard, match = recognizer.listen(audio, MATCHER)
    assert match is None and heard == Heard("what time is", "what can hi me can"), "the first hearing is reported"
    answers[len(audio)] = Heard("tell me a joke", "tell me a joke")
    decoded.clear()
    _, match = recognizer.listen(audio, MATCHER)
    assert decoded == [audio] and match is not None and match.intent == "joke", "one listen when it matches"


# --- the script --------------------------------------------------------------------------------------


def test_the_bridge_greeting_instruction_gets_the_greeting() -> None:
    turn = Conversation(FRONT_DESK).on_text("The caller has just been connected. Greet them in one short sentence.")
    assert turn.intent == GREETING and turn.reply == FRONT_DESK.greeting and turn.heard is None


def test_keypresses_select_intents() -> None:
    conversation = Conversation(FRONT_DESK)
    assert conversation.on_text("The caller pressed 2 on their keypad.").intent == "joke"
    assert conversation.on_text("The caller pressed 9 on their keypad.").intent == "goodbye"
    assert conversation.on_text("The caller pressed 7 on their keypad.").intent == UNKNOWN_KEY


def test_the_bridges_wrap_up_instruction_gets_the_goodbye_and_its_notes_no_reply() -> None:
    conversation = Conversation(FRONT_DESK)
    restart = conversation.on_text(
        "The phone service is restarting. Say a short goodbye to the caller now, then end the call."
    )
    limit = conversation.on_text("The call has reached its time limit. Say a short goodbye now, then end the call.")
    for turn in (restart, limit):
        assert turn is not None and turn.intent == "goodbye" and turn.then is not None
        assert turn.then.name == "end_conversation"
    note = "Note for you, not to read out: this call ends automatically in about 30 seconds. Start wrapping up."
    assert conversation.on_text(note) is None
    no_goodbye = replace(FRONT_DESK, intents=tuple(i for i in FRONT_DESK.intents if i.name != "goodbye"))
    plain = Conversation(no_goodbye).on_text("Say a short goodbye now, then end the call.")
    assert plain is not None and plain.then is not None and plain.then.name == "end_conversation"


def test_jokes_take_turns_and_typed_phrases_work() -> None:
    conversation = Conversation(FRONT_DESK)
    jokes = [conversation.on_text("tell me a joke").reply for _ in range(4)]
    assert len(set(jokes[:3])) == 3 and jokes[3] == jokes[0]


def test_the_time_turn_looks_up_the_clock_and_speaks_the_result() -> None:
    turn = Conversation(FRONT_DESK).on_speech(Heard("what time is it", "what time is it"))
    assert turn.intent == "time" and turn.heard == "what time is it"
    assert turn.lookup is not None and turn.lookup.name == "current_time"
    assert turn.reply_with("4:05 PM") == "It is 4:05 PM."
    assert turn.lookup.fallback is not None and ":" in turn.lookup.fallback()


def test_goodbye_replies_then_ends_the_conversation() -> None:
    turn = Conversation(FRONT_DESK).on_speech(Heard("goodbye", "goodbye"))
    assert "Goodbye" in turn.reply
    assert turn.then is not None and turn.then.name == "end_conversation" and turn.then.input["reason"]


def test_out_of_script_speech_gets_examples() -> None:
    turn = Conversation(FRONT_DESK).on_speech(Heard("", "the weather the"))
    assert turn.intent == NOT_UNDERSTOOD and "what time is it" in turn.reply and turn.heard == "the weather the"


def test_spoken_time_and_the_tool() -> None:
    assert spoken_time(datetime(2026, 1, 1, 15, 5)) == "3:05 PM"
    assert spoken_time(datetime(2026, 1, 1, 0, 30)) == "12:30 AM"
    assert current_time(timezone="UTC")["status"] == "success"
    assert "Nowhere/Else" in current_time(timezone="Nowhere/Else")["content"][0]["text"]


# --- voice activity ----------------------------------------------------------------------------------


def _feed(detector: SpeechDetector, audio: bytes, piece: int = 640) -> list[SpeechStarted | Utterance]:
    events: list[SpeechStarted | Utterance] = []
    for offset in range(0, len(audio), piece):
        events += detector.feed(audio[offset : offset + piece])
    return events


def test_speech_is_found_quickly_and_end_pointed() -> None:
    speech = Synthesizer(CALLER_VOICE).synthesize("tell me a joke")
    events = _feed(SpeechDetector(), bytes(32000) + speech + bytes(32000))
    assert [type(event) for event in events] == [SpeechStarted, Utterance]
    started, utterance = events
    assert isinstance(started, SpeechStarted) and isinstance(utterance, Utterance)
    assert 0.9 <= started.at_s <= 1.2
    speech_end = 1.0 + len(speech) / 32000
    assert speech_end < utterance.end_s < speech_end + 0.8
    assert len(utterance.pcm16) / 32000 > len(speech) / 32000


def test_steady_noise_and_clicks_are_not_speech() -> None:
    rng = np.random.default_rng(1)
    noise = rng.normal(0, 300, 48000)  # -40 dBFS hiss, which the bare VAD calls speech
    noise[16000:16080] += 20000  # a click
    audio = np.clip(noise, -32768, 32767).astype("<i2").tobytes()
    assert _feed(SpeechDetector(), audio) == []


# --- selection ---------------------------------------------------------------------------------------


def test_voicebot_model_local_selects_the_offline_model() -> None:
    settings = load_settings({"VOICEBOT_MODEL": "local"}, dotenv=None)
    model = create_model(settings)
    assert isinstance(model, OfflineModel)
    assert model.get_audio_config()["input"]["sample_rate"] == 16000
    assert model.synthesizer.voice == BOT_VOICE


def test_the_offline_agent_factory_has_both_tools_and_checks_the_voice() -> None:
    agent = create_agent(CallInfo(call_sid="CA1", stream_sid="MZ1"), Settings())
    assert isinstance(agent.model, OfflineModel)
    assert {"end_conversation", "current_time"} <= set(agent.tool_names)
    with pytest.raises(ConfigError, match="VOICEBOT_VOICE='matthew'"):
        create_agent(CallInfo(call_sid="CA1", stream_sid="MZ1"), replace(Settings(), voice="matthew"))

"""The pieces of telephony.bridge.continuity on their own: the utterance keeper, cut answers, the transcript."""

from __future__ import annotations

import base64
import json
import math

import numpy as np

from telephony.bridge.continuity import CutAnswer, UtteranceKeeper, decoded_length, words_heard
from telephony.bridge.cut_answer import OpenQuestion
from telephony.recording.transcript import TranscriptBuilder

RATE = 16000
FRAME = int(RATE * 0.02) * 2


def speech(seconds: float, hz: float = 300.0) -> bytes:
    samples = 0.3 * 32767 * np.sin(2 * math.pi * hz * np.arange(round(seconds * RATE)) / RATE)
    return samples.astype("<i2").tobytes()


def quiet(seconds: float) -> bytes:
    return bytes(round(seconds * RATE) * 2)


def feed(keeper: UtteranceKeeper, pcm: bytes, now: float = 0.0, chunk: int = FRAME) -> None:
    """In 20 ms chunks, as the bridge sends (any chunking gives the same result)."""
    for offset in range(0, len(pcm), chunk):
        keeper.sent(pcm[offset : offset + chunk], now)


def seconds(pcm: bytes) -> float:
    return len(pcm) / 2 / RATE


def test_nothing_to_carry_over_when_nobody_spoke() -> None:
    keeper = UtteranceKeeper(RATE)
    feed(keeper, quiet(3.0))
    assert keeper.unheard(0.0) == b""


def test_an_utterance_in_progress_is_carried_over_with_its_pre_roll() -> None:
    keeper = UtteranceKeeper(RATE)
    feed(keeper, quiet(2.0) + speech(0.7))
    carried = keeper.unheard(0.0)
    assert abs(seconds(carried) - (0.3 + 0.7)) < 0.03
    assert carried.endswith(speech(0.7)[-FRAME:])


def test_an_utterance_the_model_transcribed_is_never_sent_again() -> None:
    keeper = UtteranceKeeper(RATE)
    feed(keeper, speech(1.0) + quiet(0.8))
    keeper.heard(1.0)
    assert keeper.unheard(1.0) == b""


def test_only_the_utterances_after_the_last_transcript_are_carried() -> None:
    keeper = UtteranceKeeper(RATE)
    feed(keeper, speech(1.0, 300) + quiet(0.8) + speech(0.5, 500))
    keeper.heard(1.0)  # the transcript of the first utterance arrives while the caller says the second
    carried = keeper.unheard(1.0)
    assert abs(seconds(carried) - (0.3 + 0.5)) < 0.03
    assert carried[-FRAME:] == speech(0.5, 500)[-FRAME:]


def test_an_ended_utterance_not_yet_transcribed_is_carried_with_what_followed() -> None:
    """The old connection heard it end but was stopped before it answered: the new one hears it all."""
    keeper = UtteranceKeeper(RATE)
    feed(keeper, quiet(1.0) + speech(0.9) + quiet(0.7))
    assert abs(seconds(keeper.unheard(0.0)) - (0.3 + 0.9 + 0.7)) < 0.03


def test_a_model_that_end_points_sooner_is_not_sent_what_it_heard() -> None:
    keeper = UtteranceKeeper(RATE)
    feed(keeper, speech(0.6) + quiet(0.3) + speech(0.4))  # one utterance to us (0.3 s pause < hangover)
    keeper.heard(1.0)  # ...but the model transcribed the first part already
    feed(keeper, speech(0.2))
    assert abs(seconds(keeper.unheard(1.0)) - 0.2) < 0.03  # only what came after its transcript


def test_what_a_take_took_is_told_utterance_by_utterance() -> None:
    """A model may answer before it transcribes: what it took is kept, utterance by utterance, in case the
    connection goes before the turn reached the history (continuity then gives it to the new connection again)."""
    keeper = UtteranceKeeper(RATE)
    feed(keeper, quiet(0.5) + speech(0.8) + quiet(0.6) + speech(0.4) + quiet(0.6))
    assert keeper.took(1.0)
    first, second = keeper.last_taken
    # each with its pre-roll and the quiet that ended it (the bridge's 0.5 s, up to the next one's pre-roll)
    assert abs(seconds(first[1]) - (0.3 + 0.8 + 0.3)) < 0.03
    assert abs(seconds(second[1]) - (0.3 + 0.4 + 0.5)) < 0.03 and second[1].endswith(quiet(0.5))
    assert first[0] != second[0] and keeper.unheard(1.0) == b""
    feed(keeper, speech(0.5) + quiet(0.2))  # a model that end-points sooner than we do: taken up to now...
    assert keeper.took(2.0)
    [(key, part)] = keeper.last_taken
    assert abs(seconds(part) - (0.3 + 0.5 + 0.2)) < 0.03
    feed(keeper, speech(0.3) + quiet(0.2))  # ...and the rest of that utterance later, under the same key
    assert keeper.took(3.0) and keeper.last_taken[0][0] == key
    feed(keeper, quiet(0.6))
    assert not keeper.took(4.0) and keeper.last_taken == []  # nothing new to take


def test_an_utterance_the_model_ignored_is_let_go() -> None:
    keeper = UtteranceKeeper(RATE, expiry_s=5.0)
    feed(keeper, speech(0.3) + quiet(0.6), now=10.0)
    assert keeper.unheard(12.0) != b""
    assert keeper.unheard(16.0) == b""


def test_a_monologue_is_kept_by_its_last_seconds() -> None:
    keeper = UtteranceKeeper(RATE, max_s=2.0)
    feed(keeper, speech(5.0))
    assert abs(seconds(keeper.unheard(0.0)) - 2.0) < 0.03
    assert keeper.trimmed_bytes > 0


def test_after_a_swap_the_keeper_counts_from_what_the_new_connection_got() -> None:
    keeper = UtteranceKeeper(RATE)
    feed(keeper, quiet(0.5) + speech(0.6))
    carried = keeper.unheard(0.0)
    keeper.restart_with(carried, 0.0)
    feed(keeper, speech(0.4))
    assert abs(seconds(keeper.unheard(0.0)) - (seconds(carried) + 0.4)) < 0.03


def test_chunking_does_not_change_what_is_kept() -> None:
    pcm = quiet(0.45) + speech(0.77) + quiet(0.33) + speech(0.21)
    small, large = UtteranceKeeper(RATE), UtteranceKeeper(RATE)
    feed(small, pcm, chunk=FRAME)
    feed(large, pcm, chunk=3 * FRAME + 14)
    assert small.unheard(0.0) == large.unheard(0.0)


def test_turns_in_no_history_are_the_ones_neither_transcribed_nor_answered_in_full() -> None:
    question = OpenQuestion()
    question.took([(1, b"first, ")])  # a transcript began after a burst of carried-over audio: two turns at once
    question.took([(2, b"second")])
    question.took([(2, b" and its end")])  # the rest of the second, taken when the answer began
    question.answer_started()
    question.transcript_ended()  # the first turn's transcript: in the history now
    question.swap_began()  # the answer is cut
    assert question.ask_again == b"second and its end"
    question.swapped()
    question.took([(3, b"asked")])
    question.answer_started()
    question.answer_done()  # answered in full (a model that never transcribes): not asked again
    question.took([(4, b"next")])
    question.transcript_ended()  # transcribed before its answer began
    question.answer_started()
    question.swap_began()
    assert question.ask_again == b""
    question.took([(5, b"late")])
    question.answer_started()
    question.took([(6, b"meanwhile")])  # the caller spoke on during the answer
    question.answer_done()  # the answer settles the turn it answered, not the one after it
    question.swap_began()
    assert question.ask_again == b"meanwhile"


def test_words_heard_cuts_at_a_word_boundary() -> None:
    text = "Your order shipped on Monday and should arrive by Friday."
    assert words_heard(text, 0.0) == ""
    assert words_heard(text, 1.2) == "Your order shipped"
    assert words_heard(text, 60.0) == text
    assert words_heard("Goodbye, thanks for calling.", 0.4) == "Goodbye"


def test_the_agent_is_told_where_the_caller_stopped_hearing() -> None:
    cut = CutAnswer("timeout", "Your order shipped on Monday.", 1.2, "Your order shipped", tool_pending=False)
    message = cut.message_for_agent()
    assert '"Your order shipped"' in message and "not to be read out" in message
    assert "heard none" in CutAnswer("timeout", "Hello there.", 0.0, "", False).message_for_agent()


def test_a_cut_answer_is_marked_interrupted_in_the_transcript() -> None:
    """Heard and sent match (the rest was never sent), but the answer was cut: interrupted, with the cut."""
    builder = TranscriptBuilder()
    builder.add({"t": 1.0, "kind": "agent", "event": {"type": "bidi_response_start", "response_id": "r1"}})
    block = {"type": "bidi_transcript_block", "role": "assistant", "transcript": "Your order shipped on Monday."}
    builder.add({"t": 1.0, "kind": "agent", "event": block})
    loud = base64.b64encode(b"\x00" * 160).decode()
    for index in range(50):
        message = {"event": "media", "streamSid": "MZ", "media": {"payload": loud}}
        builder.add({"t": 1.0 + index * 0.02, "kind": "twilio_out", "message": message})
    detail = CutAnswer("timeout", "Your order shipped on Monday.", 1.0, "Your order", False).note_detail()
    builder.add({"t": 2.0, "kind": "note", "note": "cut", "detail": detail})
    [bot] = [turn for turn in builder.build({}, None)["turns"] if turn["role"] == "bot"]
    assert bot["heard_s"] == 1.0 and bot["interrupted"] is True
    assert bot["cut"] == {"reason": "timeout", "heard_s": 1.0, "heard_text": "Your order"}
    assert json.loads(detail)["text"] == "Your order shipped on Monday."


def test_the_length_of_base64_audio_is_read_without_decoding_it() -> None:
    for size in range(0, 9):
        data = bytes(range(size))
        assert decoded_length(base64.b64encode(data).decode()) == size

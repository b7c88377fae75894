"""Every call ends with one outcome (telephony.call_outcome), told to the observers and counted in ``/metrics``."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx
import pytest

from agent.tools import transfer_tool
from telephony.bridge.observer import QuietObserver
from telephony.call_info import CallInfo
from telephony.call_outcome import LABELS, CallOutcome, Outcome, decide, from_records, parse_note
from telephony.operations.shutdown import drain

from ..conftest import harness
from ..fakes.model import CallTool, Fail, Hold, Say, ScriptedModel, WaitForAudio, WaitForText
from ..fakes.rest import FakeCallControl


class OutcomeNotes(QuietObserver):
    def __init__(self) -> None:
        self.outcomes: list[CallOutcome | None] = []

    def note(self, kind: str, detail: str) -> None:
        if kind == "outcome":
            self.outcomes.append(parse_note(detail))


async def outcome_of(script: Any, caller: str = "listen", **settings: Any) -> tuple[CallOutcome, str]:
    """One call with ``script``; the outcome its observer was told, and the server's ``/metrics`` after it."""
    notes = OutcomeNotes()

    def observe(call: CallInfo) -> OutcomeNotes:
        return notes

    rest = settings.pop("hangup", FakeCallControl())
    async with harness(script, hangup=rest, observers=[observe], **settings) as h:
        async with h.caller() as call:
            await call.connect()
            talker = asyncio.create_task(call.silence(15))
            if caller == "hang up":
                await call.silence(0.5)
                await call.stop()
            elif caller == "server shuts down":
                await call.silence(0.5)
                await drain(h.app, grace_s=0.1, wrap_up_s=1.0)
            await call.wait_closed(15)
            talker.cancel()
        async with httpx.AsyncClient() as client:
            metrics = (await client.get(f"http://{h.base}/metrics")).text
    (outcome,) = notes.outcomes
    assert outcome is not None
    return outcome, metrics


def counted(metrics: str, outcome: Outcome) -> float:
    found = re.search(rf'^voicebot_call_outcomes_total{{outcome="{outcome.value}"}} (\S+)$', metrics, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


async def test_an_agent_that_cannot_start_is_a_failed_call_with_its_reason() -> None:
    maker = lambda: ScriptedModel([Hold()], fail_start=ConnectionError("no credentials"))  # noqa: E731
    outcome, metrics = await outcome_of(maker)
    assert outcome.code is Outcome.FAILED_AGENT_START and "agent failed to start" in outcome.reason
    assert "no credentials" in outcome.reason and counted(metrics, Outcome.FAILED_AGENT_START) == 1


async def test_a_model_failing_mid_call_is_a_model_error() -> None:
    script = [Say("hi", 0.3, tone_hz=1000), WaitForAudio(0.3), Fail(RuntimeError("model exploded")), Hold()]
    outcome, metrics = await outcome_of(script)
    assert outcome.code is Outcome.FAILED_MODEL_ERROR and "model exploded" in outcome.reason
    assert counted(metrics, Outcome.FAILED_MODEL_ERROR) == 1 and counted(metrics, Outcome.FAILED_AGENT_START) == 0


async def test_the_bot_ending_the_call_and_the_caller_hanging_up() -> None:
    script = [Say("goodbye", 0.3, tone_hz=1000), CallTool("end_conversation", {"reason": "done"}), Hold()]
    by_bot, metrics = await outcome_of(script, hangup_grace_s=0.1)
    assert by_bot.code is Outcome.COMPLETED_BY_BOT and counted(metrics, Outcome.COMPLETED_BY_BOT) == 1
    by_caller, _ = await outcome_of([Say("hello", 0.3), Hold()], caller="hang up")
    assert by_caller.code is Outcome.COMPLETED_BY_CALLER and "stream stopped" in by_caller.reason


async def test_a_call_that_runs_past_its_time_limit_is_a_timeout() -> None:
    outcome, _ = await outcome_of([Hold()], max_call_s=1.0, call_warning_s=0.5, wrap_up_s=0.5)
    assert outcome.code is Outcome.FAILED_TIMEOUT and outcome.reason == "the call did not wrap up in time"


async def test_a_cold_transfer_is_transferred() -> None:
    script = [Say("putting you through", 0.3), CallTool("transfer_call", {"reason": "wants a person"}), Hold()]
    outcome, metrics = await outcome_of(
        script, tools=[transfer_tool("+15550009999")], hangup_grace_s=0.1, caller="listen"
    )
    assert outcome == CallOutcome(Outcome.TRANSFERRED, "transferred to +15550009999")
    assert counted(metrics, Outcome.TRANSFERRED) == 1


async def test_a_call_the_server_wraps_up_at_shutdown_is_completed_by_the_server() -> None:
    polite = [
        WaitForText("Say a short goodbye"),
        Say("Goodbye!", 0.3),
        CallTool("end_conversation", {"reason": "bye"}),
        Hold(),
    ]
    outcome, _ = await outcome_of(polite, caller="server shuts down", hangup_grace_s=0.1)
    assert outcome.code is Outcome.COMPLETED_BY_SERVER and "restarting" in outcome.reason
    stubborn, _ = await outcome_of([Hold()], caller="server shuts down", wrap_up_s=0.5)
    assert stubborn == CallOutcome(Outcome.FAILED_TIMEOUT, "the call did not wrap up in time")


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"crashed": "internal error in reader"}, Outcome.CRASHED),
        ({"failure": ("agent_unresponsive", "agent unresponsive")}, Outcome.FAILED_TIMEOUT),
        ({"failure": ("agent_stream", "gone"), "transferred_to": "+1555"}, Outcome.FAILED_MODEL_ERROR),
        ({"timed_out": "no audio from Twilio: the stream is gone"}, Outcome.FAILED_TIMEOUT),
        ({}, Outcome.COMPLETED_BY_SERVER),
    ],
)
def test_the_first_thing_that_went_wrong_decides(arguments: dict[str, Any], expected: Outcome) -> None:
    assert decide("server", "too many malformed messages (50)", **arguments).code is expected


def test_recordings_without_an_outcome_note_get_one_from_their_records() -> None:
    end = {"kind": "end", "t": 3.0, "reason": "socket closed by Twilio", "ended_by": "caller"}
    error = {"kind": "note", "note": "error", "detail": "agent failed to start: no credentials"}
    assert from_records([end], agent_started=True).code is Outcome.COMPLETED_BY_CALLER
    assert from_records([error, end], agent_started=False).code is Outcome.FAILED_AGENT_START
    assert from_records([error, end], agent_started=True).code is Outcome.FAILED_MODEL_ERROR
    assert from_records([error], agent_started=True).code is Outcome.CRASHED
    assert parse_note('{"code": "no-such-outcome"}') is None and parse_note("not json") is None
    assert list(LABELS) == list(Outcome), "every outcome has a label, in the documented order"

"""How long a warm transfer takes, on the real app with a simulated Twilio, both legs simulated callers.

    uv run python benchmarks/warm_transfer.py [--runs 5]

"Transfer" is the moment the caller's agent calls ``transfer_call`` (right after starting its 0.6 s hand-off
line, as a model does). Measured, per run, on one monotonic clock:

- transfer -> hold music: the hand-off line finishes playing, then the REST update moves the caller;
- transfer -> briefing heard: the first frame of briefing audio played at the person's end. This includes the
  ring time (simulated, given per row) and the briefing model's connection time (simulated, given per row;
  the bridge pre-warms the briefing agent while the phone rings, so it is hidden when ringing is longer);
- answer -> briefing heard: the bridge's own part once the person picks up.

The fake Twilio answers REST requests at once and has no network delay: on a real line add Twilio's REST
latency (about 0.2-0.5 s per request, two before the ringing starts) and the stream set-up (about 0.5-1 s).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import time
from dataclasses import replace
from typing import Any

from strands.bidi import BidiAgent

from agent.tools import accept_transfer, decline_transfer, end_conversation, transfer_tool
from telephony.app import create_app
from telephony.call_info import CallInfo
from telephony.config import Settings
from telephony.simulation.caller.simulated_caller import ULAW_SILENCE
from telephony.simulation.local_app.loopback import serve_app
from telephony.twilio.calls_api import TwilioCallsApi
from tests.fakes.model import CallTool, Hold, Say, ScriptedModel, UserSaid, WaitForText
from tests.fakes.twilio_calls import FakeTwilio, Person

TOKEN, ACCOUNT = "benchmark-token", "AC" + "3" * 32
CALLER, OUR_NUMBER, PERSON = "CA" + "c" * 32, "+15550002222", "+15557654321"
SETTINGS = Settings(
    public_url="https://bot.example.com",
    twilio_account_sid=ACCOUNT,
    twilio_auth_token=TOKEN,
    twilio_phone_number=OUR_NUMBER,
    transfer_to=PERSON,
    transfer_mode="warm",
    greeting="",
    prewarm=False,
    hangup_grace_s=0.6,
)
HAND_OFF_S = 0.6


class ToolClock:
    """An observer noting when the caller's agent asked for the transfer."""

    def __init__(self, marks: dict[str, float]) -> None:
        self._marks = marks

    def agent_event(self, event: Any) -> None:
        if isinstance(event, dict) and event.get("type") == "bidi_tool_use_blocks":
            if any(use.get("name") == "transfer_call" for use in event.get("tool_uses") or []):
                self._marks.setdefault("transfer", time.monotonic())

    def model_audio(self, *_: Any) -> None: ...
    def twilio_received(self, text: str) -> None: ...
    def twilio_sent(self, text: str) -> None: ...
    def agent_input(self, item: Any) -> None: ...
    def note(self, kind: str, detail: str) -> None: ...
    async def call_ended(self, reason: str, ended_by: str) -> None: ...


async def one_run(ring_s: float, model_start_s: float) -> dict[str, float]:
    marks: dict[str, float] = {}
    twilio = FakeTwilio(SETTINGS.public_url or "", TOKEN, ACCOUNT)
    twilio.people[PERSON] = Person(ring_s=ring_s)

    def caller_agent(call: CallInfo) -> BidiAgent:
        script = [
            UserSaid("a person please"),
            Say("Let me put you through", HAND_OFF_S, tone_hz=1000),
            CallTool("transfer_call", {"reason": "wants a human", "summary": "wants to move a booking"}),
            Hold(),
        ]
        return BidiAgent(model=ScriptedModel(script), tools=[end_conversation, transfer_tool(PERSON)])

    def briefing_agent(call: CallInfo) -> BidiAgent:
        script = [WaitForText("Brief them now"), Say("Hello, I have a caller on hold", 1.0, tone_hz=700), Hold()]
        model = ScriptedModel(script, start_delay=model_start_s)
        return BidiAgent(model=model, tools=[accept_transfer, decline_transfer])

    control = TwilioCallsApi(ACCOUNT, TOKEN, http_client=twilio)
    app = create_app(
        replace(SETTINGS),
        agent_factory=caller_agent,
        call_control=control,
        briefing_factory=briefing_agent,
        observers=[lambda call: ToolClock(marks) if call.call_sid == CALLER else None],
    )
    async with serve_app(app) as base:
        twilio.attach(base)
        caller = await twilio.incoming(CALLER, "+15550001111", OUR_NUMBER)
        deadline = time.monotonic() + 30
        person = None
        while time.monotonic() < deadline:
            person = next((call for call in twilio.calls.values() if call.to == PERSON), None)
            if person and person.streams and any(f.payload != ULAW_SILENCE for f in person.stream.heard):
                break
            await asyncio.sleep(0.01)
        assert person is not None and person.streams, "the person never heard the briefing"
        stream = person.stream
        first = next(f for f in stream.heard if f.payload != ULAW_SILENCE)
        hold_at = next(at for at, what in caller.heard if what.startswith("hold:"))
        answered_at = stream.started
        await person.stream.dtmf("1")
        while caller.hearing != "conference" and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        await twilio.aclose()
    transfer = marks["transfer"]
    return {
        "hold": hold_at - transfer,
        "briefing": stream.started + first.at - transfer,
        "after_answer": stream.started + first.at - answered_at,
    }


async def main(runs: int) -> None:
    logging.basicConfig(level=logging.WARNING)
    rows = [(0.0, 0.0), (0.0, 0.8), (3.0, 0.8)]
    print(f"warm transfer timing, {runs} runs per row (median / max, seconds)")
    print(
        "| ring | briefing model connects in | transfer -> hold music | transfer -> briefing heard "
        "| answer -> briefing heard |"
    )
    print("|---|---|---|---|---|")
    for ring_s, model_s in rows:
        results = [await one_run(ring_s, model_s) for _ in range(runs)]

        def cell(key: str, results: list[dict[str, float]] = results) -> str:
            values = [result[key] for result in results]
            return f"{statistics.median(values):.2f} / {max(values):.2f}"

        print(f"| {ring_s:.1f} s | {model_s:.1f} s | {cell('hold')} | {cell('briefing')} | {cell('after_answer')} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    asyncio.run(main(parser.parse_args().runs))

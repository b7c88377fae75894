"""Offline replay: the recorded agent side through the real bridge, lined up with the recorded call.

The agent replays the recording's model events (:class:`agent.replay_model.ReplayModel`); the settings are the
environment's call behaviour without a Twilio account, and the caller waits until the bridge has caught up.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from telephony.call_info import CallInfo
from telephony.config import Settings
from telephony.recording.format import Recording
from telephony.simulation.caller.script import CallerScript, Linger, play
from telephony.simulation.caller.simulated_caller import SimulatedCaller
from telephony.twilio.media_streams import media_frames

if TYPE_CHECKING:
    from strands.bidi import BidiAgent

    from agent.replay_model import ReplayModel

CATCH_UP_TIMEOUT_S = 10.0


def replay_agent_factory(recording: Recording) -> Callable[[CallInfo], BidiAgent]:
    """An agent factory (as for ``voicebot serve --agent``) whose agent replays ``recording``'s agent side.

    Its tools are ``end_conversation`` and, if the recorded call was transferred, ``transfer_call`` to the
    same destination, so the recorded tool calls act again.
    """
    from strands.bidi import BidiAgent

    from agent.replay_model import ReplayModel
    from agent.tools import end_conversation, transfer_tool

    transfers = [record.get("detail", "") for record in recording.of_kind("note") if record.get("note") == "transfer"]

    def create_agent(call: CallInfo) -> BidiAgent:
        tools: list[Any] = [end_conversation]
        if transfers:
            tools.append(transfer_tool(str(transfers[0])))
        model = ReplayModel(recording.records, recording.model_rates)
        return BidiAgent(model=model, tools=tools, system_prompt="Replay of a recorded call.")

    return create_agent


async def play_against_replay(
    caller: SimulatedCaller, recording: Recording, model: Callable[[], ReplayModel | None]
) -> None:
    """The caller side of ``recording``, against a bridge whose agent replays the same recording.

    Lined up with the recorded call however slowly this machine runs: the first frame goes once the model
    has started (frames the recorded bridge dropped before its agent existed are skipped), and the caller
    hangs up only once the model has been given the caller audio it had been given then, and the bridge has
    sent as many messages as it had sent by then.
    """
    await wait_for(lambda: (current := model()) is not None and current.started)
    replay_model = model()
    assert replay_model is not None
    heard = float(((recording.end or {}).get("input") or {}).get("audio_s", 0.0))
    sent = sent_before_hang_up(recording)

    counted, received = 0, 0  # messages the caller has received that are counted, and their steps

    def caught_up() -> bool:
        nonlocal counted, received
        new = caller.received[counted:]  # polled often: count only what arrived since the last poll
        counted += len(new)
        received += sum(_steps(item.message) for item in new)
        return replay_model.audio_seconds >= heard - 1e-5 and received >= sent

    async def wait_until_caught_up() -> None:
        try:
            await wait_for(caught_up, CATCH_UP_TIMEOUT_S)
        except TimeoutError:
            pass  # hang up anyway: the comparison shows what the bridge did not send

    script = CallerScript.from_recording(recording).without_first_frames(recording.frames_before_model)
    await play(caller, script, Linger(quiet_s=None), before_hang_up=wait_until_caught_up)


def sent_before_hang_up(recording: Recording) -> int:
    """How much the bridge had sent when the caller's ``stop`` arrived (all of it if none did), in :func:`_steps`."""
    sent = 0
    for record in recording.records:
        message = record.get("message")
        if record.get("kind") == "twilio_in" and isinstance(message, dict) and message.get("event") == "stop":
            break
        if record.get("kind") == "twilio_out":
            sent += _steps(message)
    return sent


def _steps(message: Any) -> int:
    """A message to Twilio counted so that joining frames changes nothing: its frames, or 1 (a mark, a clear)."""
    return media_frames(message) or 1


def offline_settings(settings: Settings, recording: Recording, record: Path | None = None) -> Settings:
    """The environment's call behaviour, with no Twilio account and the recorded greeting (if any).

    Caller audio reaches the replay model frame by frame (20 ms sends): the model re-emits each event
    once it has been given as much audio as when it was recorded, and whole frames hit that point
    exactly whatever chunk size the recording was made with.
    """
    return replace(
        settings,
        send_chunk_ms=20,
        send_chunk_speaking_ms=20,
        send_chunk_silence_ms=20,
        public_url=None,
        twilio_account_sid=None,
        twilio_auth_token=None,
        host="127.0.0.1",
        greeting=recorded_greeting(recording),
        record_dir=str(record) if record else None,
    )


def recorded_greeting(recording: Recording) -> str:
    """The text the bridge gave the agent before anything from the caller (the configured greeting)."""
    for record in recording.records:
        message = record.get("message")
        if record.get("kind") == "twilio_in" and isinstance(message, dict) and message.get("event") == "dtmf":
            return ""
        if record.get("kind") == "agent_text":
            return str(record.get("text", ""))
    return ""


async def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the replayed agent was not ready within {timeout:g}s")
        await asyncio.sleep(0.005)

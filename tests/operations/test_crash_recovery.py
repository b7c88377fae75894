"""A `voicebot serve` killed mid-call (SIGKILL: nothing runs at exit) loses nothing that reached disk.

After a restart on the same record folder, the call is listed with its transcript, its key press, its duration
and its audio, marked recovered, its outcome "crashed"; and no call is left in progress.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import wave
from pathlib import Path

import httpx

from ..fakes.twilio import FakeTwilioCall
from .test_shutdown import server_process

TOKEN = "crash-test-console-token"


async def wait_for(condition, seconds: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not within {seconds} s: {condition}")


async def test_a_call_cut_by_a_killed_server_is_recovered_after_a_restart(tmp_path: Path) -> None:
    env = {"VOICEBOT_RECORD_DIR": str(tmp_path), "VOICEBOT_CONSOLE": "1", "VOICEBOT_CONSOLE_TOKEN": TOKEN}
    async with server_process("tests.fakes.agents:chatty_agent", **env) as (process, port):
        async with FakeTwilioCall(f"ws://127.0.0.1:{port}/media-stream") as call:
            await call.connect()
            talker = asyncio.create_task(call.silence(30))
            await wait_for(lambda: len(call.heard) >= 10)  # the greeting is playing
            await call.dtmf("5")
            (folder,) = tmp_path.iterdir()
            events = folder / "events.jsonl"
            await wait_for(lambda: b"It is noon." in events.read_bytes())  # the answer reached disk
            await asyncio.sleep(1.0)  # a second of the long reply, then the server dies mid-sentence
            os.kill(process.pid, signal.SIGKILL)
            await process.wait()
            talker.cancel()
    assert not (folder / "transcript.json").exists()

    async with server_process("tests.fakes.agents:chatty_agent", **env) as (_, port):
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=headers) as client:
            listed = (await client.get("/console/api/calls")).json()
            (row,) = listed["calls"]
            assert row["recovered"] is True and row["complete"] is True
            assert row["outcome"] == "crashed" and row["outcome_label"] == "crashed"
            assert row["duration_s"] > 1.0 and row["turns"] >= 3 and row["has_audio"]
            assert listed["live"] == [] and listed["outcomes"]["crashed"] == 1
            transcript = (await client.get(f"/console/api/calls/{folder.name}")).json()
    assert transcript["recovered"] is True and transcript["outcome"]["code"] == "crashed"
    texts = [(turn["role"], turn["text"]) for turn in transcript["turns"] if turn["role"] != "tool"]
    assert texts[:4] == [
        ("bot", "Hello, front desk."),
        ("bot", "You pressed five."),
        ("caller", "what time is it"),
        ("bot", "It is noon."),
    ]
    keys = [event for event in transcript["events"] if event["kind"] == "dtmf"]
    assert [key["detail"] for key in keys] == ["5"]
    answer = transcript["turns"][1]
    assert keys[0]["t"] <= answer["start"], "the key press comes before the bot's answer to it"
    assert transcript.pop("summary")["recovered"] is True
    assert transcript == json.loads((folder / "transcript.json").read_text())
    with wave.open(str(folder / "call.wav")) as audio:
        assert audio.getnframes() / audio.getframerate() > 1.0

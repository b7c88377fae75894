"""Calls that go wrong, in headless Chromium at 1280×800 and 390×844: a call whose agent cannot start is listed as
failed with its reason (a filter and a count per outcome), the model's own error is what the softphone says, key
presses are on the recording's timeline and in transcript.json, and a ``voicebot serve`` stopped and then killed
mid-call: the softphone says which, and after a restart the killed call is recovered (transcript, duration) and no
call stays in progress.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from telephony.app import create_app
from telephony.call_info import CallInfo

from ..conftest import harness, serve
from ..fakes.model import Fail, Hold, Say, WaitForText
from ..operations.server_process import voicebot_serve as served
from ..ports import free_port
from .test_console_browser import (
    ARTIFACTS,
    SECRET,
    STEP_TIMEOUT_MS,
    console_browser,
    open_page,
    wait_for_recording,
    wait_for_stats,
    write_microphone_wav,
    write_wav,
)
from .test_console_browser import pytestmark as needs_chromium
from .test_console_pages import console_settings, fits, no_serious_violations
from .test_console_watch import DESKTOP, PHONE, SIZES

pytestmark = needs_chromium

ROOT = Path(__file__).resolve().parents[2]


async def calls_api(base: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=f"http://{base}", auth=("operator", SECRET)) as client:
        return dict((await client.get("/console/api/calls")).json())


async def test_a_call_whose_agent_cannot_start_is_listed_as_failed_with_its_reason(tmp_path: Path) -> None:
    def no_credentials(call: CallInfo) -> Any:
        raise ValueError("no AWS credentials found")

    settings = console_settings(tmp_path, hangup_mark_timeout_s=1.0)
    app = create_app(settings, agent_factory=no_credentials)
    microphone = write_microphone_wav(tmp_path / "microphone.wav", seconds=10)
    async with serve(app) as base, console_browser(microphone) as (context, _):
        phone, phone_errors = await open_page(context, f"http://{base}/console")
        await phone.click("#call")
        await wait_for_stats(phone, "s.state === 'ended'")
        status = await phone.locator("#status").inner_text()  # the softphone says why, and what to do
        assert "the agent could not start" in status and "no AWS credentials found" in status, status
        assert "--model" in status
        await phone.locator(".entry.error", has_text="agent failed to start").wait_for(timeout=STEP_TIMEOUT_MS)
        await phone.screenshot(path=ARTIFACTS / "9-softphone-agent-failed.png", full_page=True)
        call_sid = await phone.evaluate("window.voicebotConsole.stats.callSid")
        row = await wait_for_recording(base, call_sid)
        assert row["outcome"] == "failed-agent-start" and "no AWS credentials found" in row["outcome_reason"], row
        listed = await calls_api(base)
        assert listed["outcomes"]["failed-agent-start"] == 1
        page, errors = await open_page(context, f"http://{base}/console/calls")
        for size, viewport in SIZES.items():
            await page.set_viewport_size(viewport)
            await page.goto(f"http://{base}/console/calls")
            failed = page.locator(f"#calls tr[data-name='{row['name']}'][data-outcome='failed-agent-start']")
            await failed.wait_for(timeout=STEP_TIMEOUT_MS)
            text = await failed.inner_text()
            assert row["outcome_label"] in text and "no AWS credentials found" in text, text
            # The filter and the header's counts come from the server's documented set.
            options = await page.locator("#outcome-options option").evaluate_all("os => os.map(o => o.value)")
            assert options == list(listed["outcome_labels"]), options
            count = page.locator("#outcome-counts button[data-outcome='failed-agent-start']")
            assert (await count.inner_text()).endswith(": 1")
            await page.select_option("#filter-outcome", "completed-by-caller")
            await page.wait_for_function("() => document.querySelectorAll('#calls tbody tr').length === 0")
            await count.click()  # a count is a filter too
            await page.wait_for_function(
                "() => document.getElementById('filter-outcome').value === 'failed-agent-start'"
            )
            await failed.click()
            outcome = page.locator("#call-outcome.failure[data-outcome='failed-agent-start']")
            await outcome.wait_for(timeout=STEP_TIMEOUT_MS)
            assert "no AWS credentials found" in await outcome.inner_text()
            assert await page.evaluate("document.activeElement.id") == "call-title"
            await fits(page)
            await page.screenshot(path=ARTIFACTS / f"25-calls-{size}-failed-start.png")
            await no_serious_violations(page, f"calls-{size}-failed-start")
        assert phone_errors == [] and errors == []


async def test_the_softphone_says_the_models_own_error(tmp_path: Path) -> None:
    script = [Say("Hello.", 0.5, tone_hz=600), WaitForText("pressed 9"), Fail(RuntimeError("model stream broke: 503"))]
    microphone = write_microphone_wav(tmp_path / "microphone.wav", seconds=20)
    async with (
        harness(script, settings=console_settings(tmp_path, hangup_mark_timeout_s=1.0)) as h,
        console_browser(microphone) as (context, _),
    ):
        page, errors = await open_page(context, f"http://{h.base}/console")
        await page.set_viewport_size(PHONE)
        await page.click("#call")
        await wait_for_stats(page, "s.state === 'in-call' && s.playedMs > 300")
        await page.click("#keypad button[data-digit='9']")
        await wait_for_stats(page, "s.state === 'ended' && s.failure !== null")
        status = await page.inner_text("#status")
        assert "The call failed" in status and "model stream broke: 503" in status, status
        assert "socket closed" not in status
        await page.screenshot(path=ARTIFACTS / "26-softphone-390px-model-error.png")
        row = await wait_for_recording(h.base, h.calls[0].call_sid)
        assert row["outcome"] == "failed-model-error", row
        await page.set_viewport_size(DESKTOP)
        await page.goto(f"http://{h.base}/console/calls#{row['name']}")
        await page.locator("#call-outcome.failure").wait_for(timeout=STEP_TIMEOUT_MS)
        assert "model stream broke" in await page.inner_text("#call-outcome")
        assert errors == []


async def test_key_presses_are_on_the_recordings_timeline_and_in_transcript_json(tmp_path: Path) -> None:
    script = [
        Say("Welcome. Press 5 for opening hours.", 0.6, tone_hz=600),
        WaitForText("pressed 5"),
        Say("We open at nine.", 0.6, tone_hz=500),
        Hold(),
    ]
    microphone = write_microphone_wav(tmp_path / "microphone.wav", seconds=20)
    async with (
        harness(script, settings=console_settings(tmp_path)) as h,
        console_browser(microphone) as (context, _),
    ):
        page, errors = await open_page(context, f"http://{h.base}/console")
        await page.click("#call")
        await wait_for_stats(page, "s.state === 'in-call' && s.playedMs > 500")
        await page.locator("body").press("5")  # the keyboard reaches the keypad
        await page.locator(".entry.turn.bot", has_text="open at nine").wait_for(timeout=STEP_TIMEOUT_MS)
        await page.click("#hangup")
        row = await wait_for_recording(h.base, h.calls[0].call_sid)
        transcript = json.loads((tmp_path / "calls" / row["name"] / "transcript.json").read_text())
        keys = [event for event in transcript["events"] if event["kind"] == "dtmf"]
        assert len(keys) == 1 and "5" in keys[0]["label"], transcript["events"]
        answer = next(turn for turn in transcript["turns"] if "open at nine" in (turn.get("text") or ""))
        assert keys[0]["t"] <= answer["start"], (keys, answer)
        for size, viewport in SIZES.items():
            await page.set_viewport_size(viewport)
            await page.goto(f"http://{h.base}/console/calls#{row['name']}")
            key = page.locator("#turns .entry.event.kind-dtmf")
            await key.wait_for(timeout=STEP_TIMEOUT_MS)
            assert "5" in await key.inner_text()
            assert await page.locator(".lane[data-role='event'] .event-mark.kind-dtmf").count() == 1
            texts = await page.locator("#turns .entry .text").all_inner_texts()
            at = next(i for i, text in enumerate(texts) if "5" in text and "Press" not in text)
            assert "open at nine" in " ".join(texts[at + 1 :]) and "Press 5" in " ".join(texts[:at]), texts
            await fits(page)
            await page.screenshot(path=ARTIFACTS / f"27-calls-{size}-key-press.png")
            await no_serious_violations(page, f"calls-{size}-key-press")
        assert errors == []


# --- a real `voicebot serve`, stopped and killed mid-call ---------------------------------------------------------


@asynccontextmanager
async def voicebot_serve(folder: Path, port: int) -> AsyncIterator[asyncio.subprocess.Process]:
    """``voicebot serve`` with the console on, recording, and the turn-taking fake agent (it answers pauses)."""
    environment = {name: os.environ[name] for name in ("PATH", "HOME", "LANG", "TMPDIR") if name in os.environ}
    environment |= {
        "PYTHONPATH": str(ROOT),
        "AWS_EC2_METADATA_DISABLED": "true",
        "NO_PROXY": "127.0.0.1,localhost",
        "VOICEBOT_CONSOLE": "1",
        "VOICEBOT_CONSOLE_TOKEN": SECRET,
        "VOICEBOT_RECORD_DIR": str(folder / "calls"),
        "VOICEBOT_AGENT": "tests.fakes.turns:turn_taking_agent",
        "VOICEBOT_SHUTDOWN_GRACE": "0.5",
        "VOICEBOT_WRAP_UP_SECONDS": "1.5",
    }
    async with served(port, environment, folder / f"serve-{port}.log", log_mode="ab", stop="kill") as process:
        yield process


def write_talking_wav(path: Path, seconds: float = 60.0, rate: int = 48000) -> Path:
    """A caller who talks for 1 s, then waits 3 s for the answer, again and again (the fake agent answers pauses)."""
    t = np.arange(int(seconds * rate)) / rate
    talking = (t % 4.0) < 1.0
    signal_ = 0.4 * np.sin(2 * np.pi * 300 * t) * talking
    return write_wav(path, (signal_ * 32767).astype("<i2"), rate)


async def test_a_server_stopped_then_killed_mid_call_and_the_calls_after_a_restart(tmp_path: Path) -> None:
    port = free_port()
    base = f"127.0.0.1:{port}"
    microphone = write_talking_wav(tmp_path / "talking.wav")
    async with console_browser(microphone) as (context, _):
        # Stopped (SIGTERM): the server drains, asks the bot to say goodbye, and the page says the server stopped.
        async with voicebot_serve(tmp_path, port) as process:
            page, _errors = await open_page(context, f"http://{base}/console")
            await page.set_viewport_size(PHONE)
            await page.click("#call")
            await wait_for_stats(page, "s.state === 'in-call' && s.playedMs > 1500")
            process.send_signal(signal.SIGTERM)
            await wait_for_stats(page, "s.state === 'ended' && s.endedBy !== null")
            stopped = await page.inner_text("#status")
            assert "The server stopped" in stopped and "The phone service is restarting" in stopped, stopped
            wrap_up = page.locator(".entry.error", has_text="asked the bot to say goodbye")
            await wrap_up.wait_for(timeout=STEP_TIMEOUT_MS)
            await page.screenshot(path=ARTIFACTS / "28-softphone-390px-server-stopped.png")
            await asyncio.wait_for(process.wait(), 60)

        # Killed (SIGKILL) three caller turns into a call (on a desktop-sized screen): the connection was lost.
        async with voicebot_serve(tmp_path, port) as process:
            await page.set_viewport_size(DESKTOP)
            await page.goto(f"http://{base}/console")
            await page.click("#call")
            await page.locator(".entry.turn.caller").nth(2).wait_for(timeout=STEP_TIMEOUT_MS)  # about 4 s in
            killed_sid = await page.evaluate("window.voicebotConsole.stats.callSid")
            process.kill()
            await process.wait()
            await wait_for_stats(page, "s.state === 'ended'")
            lost = await page.inner_text("#status")
            assert "connection to the server was lost" in lost, lost
            await page.screenshot(path=ARTIFACTS / "29-softphone-1280px-connection-lost.png")

        # Restarted: the killed call is recovered, with its transcript and duration; nothing is in progress.
        async with voicebot_serve(tmp_path, port):
            listed = await calls_api(base)
            assert listed["live"] == [] and all(row["outcome"] for row in listed["calls"]), listed
            killed = next(row for row in listed["calls"] if row["call_sid"] == killed_sid)
            assert killed["recovered"] and killed["outcome"] == "crashed" and killed["duration_s"] > 1, killed
            assert killed["turns"] >= 2, killed
            for size, viewport in SIZES.items():
                await page.set_viewport_size(viewport)
                await page.goto(f"http://{base}/console/calls")
                row = page.locator(f"#calls tr[data-name='{killed['name']}'][data-recovered='true']")
                await row.wait_for(timeout=STEP_TIMEOUT_MS)
                assert "recovered" in await row.inner_text()
                assert await page.locator("#calls tr[data-kind='live'], #calls tr[data-kind='cut-short']").count() == 0
                await row.click()
                await page.locator("#call-outcome[data-recovered='true']").wait_for(timeout=STEP_TIMEOUT_MS)
                assert await page.locator("#turns .entry.turn.caller").count() >= 2
                assert "Recovered" in await page.inner_text("#call-outcome")
                await fits(page)
                await page.screenshot(path=ARTIFACTS / f"30-calls-{size}-recovered.png")
                await no_serious_violations(page, f"calls-{size}-recovered")

"""The call console in a real browser: headless Chromium with a fake microphone fed from a generated WAV.

The page rings the bot over ``/media-stream`` (Twilio signatures on, so the console's own token must
get it in), hears the greeting, shows the transcript, has its playback cleared by a barge-in, and is
hung up on by the bot's goodbye; then the calls page lists the recording and plays it. Two bots: the
scripted fake model (tests/fakes/model.py), deterministic enough to check the protocol closely, and the
offline model (agent.offline: pocketsphinx + espeak-ng), talked to with real speech said into the fake
microphone. Screenshots and timings go to tests/artifacts/console/ (git-ignored).

Needs Chromium (Debian's ``chromium``; ``.ci/run`` installs it) and Playwright's Python package (dev
dependency; its own browser download is never used). Skipped, saying why, where either is missing.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import shutil
import time
import wave
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from telephony.app import create_app
from telephony.config import Settings

from ..audio import dominant_hz, pcm
from ..conftest import TEST_SETTINGS, harness, serve
from ..fakes.model import BargeIn, CallTool, Hold, Say, Sleep, UserSaid, WaitForAudio

playwright_api = pytest.importorskip(
    "playwright.async_api", reason="Playwright is not installed: `uv sync` installs the dev dependencies"
)

ARTIFACTS = Path(__file__).parents[1] / "artifacts" / "console"
SECRET = "browser-console-secret"
CHROMIUM_FLAGS = [
    # The network is closed here: no background requests, no updates, no sync, no first-run pages.
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
    "--disable-default-apps",
    "--disable-dev-shm-usage",
    # A microphone without a person: allow it, and feed it from a file.
    "--use-fake-ui-for-media-stream",
    "--use-fake-device-for-media-stream",
    "--autoplay-policy=no-user-gesture-required",
]
MIC_TONE_HZ = 300.0
STEP_TIMEOUT_MS = 15_000


def chromium_path() -> str | None:
    """Debian's Chromium, or whatever VOICEBOT_CHROMIUM names (never Playwright's own download)."""
    for candidate in (os.environ.get("VOICEBOT_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


pytestmark = pytest.mark.skipif(
    chromium_path() is None,
    reason="no Chromium: install Debian's `chromium` (apt-get install chromium; .ci/run does) "
    "or point VOICEBOT_CHROMIUM at a Chromium binary",
)


def write_microphone_wav(path: Path, seconds: float = 20.0, rate: int = 48000) -> Path:
    """A voice-like test signal: a 300 Hz tone with a syllable-rate (4 Hz) swell, 16-bit mono."""
    t = np.arange(int(seconds * rate)) / rate
    envelope = 0.55 + 0.45 * np.sin(2 * np.pi * 4 * t)
    signal = 0.4 * envelope * np.sin(2 * np.pi * MIC_TONE_HZ * t)
    return write_wav(path, (signal * 32767).astype("<i2"), rate)


def write_wav(path: Path, samples: np.ndarray, rate: int) -> Path:
    """16-bit mono WAV, the format Chromium's fake microphone reads."""
    with wave.open(str(path), "wb") as file:
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(rate)
        file.writeframes(samples.astype("<i2").tobytes())
    return path


@asynccontextmanager
async def console_browser(microphone: Path) -> AsyncIterator[tuple[Any, float]]:
    """A browser context logged in to the console, and how long Chromium took to start."""
    async with playwright_api.async_playwright() as playwright:
        started = time.monotonic()
        browser = await playwright.chromium.launch(
            executable_path=chromium_path(),
            headless=True,
            args=[*CHROMIUM_FLAGS, f"--use-file-for-fake-audio-capture={microphone}"],
        )
        launch_s = time.monotonic() - started
        try:
            context = await browser.new_context(
                http_credentials={"username": "operator", "password": SECRET},
                permissions=["microphone"],
                viewport={"width": 1200, "height": 800},
            )
            yield context, launch_s
        finally:
            await browser.close()


async def open_page(context: Any, url: str) -> tuple[Any, list[str]]:
    """A page at ``url`` whose script errors are collected (a test fails on any)."""
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    await page.goto(url)
    return page, errors


async def stats(page: Any) -> dict[str, Any]:
    return dict(await page.evaluate("window.voicebotConsole.stats"))


async def wait_for_stats(page: Any, condition: str) -> None:
    """Wait until a JavaScript ``condition`` on ``s`` (the page's call stats) holds."""
    # A function, not an expression: the page's CSP forbids eval, which expressions are polled with.
    await page.wait_for_function(f"() => (s => {condition})(window.voicebotConsole.stats)", timeout=STEP_TIMEOUT_MS)


def record_timing(name: str, seconds: float) -> None:
    """Merge one figure into timings.json under a file lock: pytest-xdist workers write it at the same time."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / "timings.json"
    with (ARTIFACTS / "timings.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        timings = json.loads(path.read_text()) if path.is_file() else {}
        timings[name] = round(seconds, 2)
        path.write_text(json.dumps(timings, indent=2) + "\n")


async def wait_for_recording(base: str, call_sid: str) -> dict[str, Any]:
    """The calls API's row for ``call_sid`` once its recording is finished."""
    async with httpx.AsyncClient(base_url=f"http://{base}", auth=("operator", SECRET)) as client:
        for _ in range(100):
            calls = (await client.get("/console/api/calls")).json()["calls"]
            row = next((call for call in calls if call["call_sid"] == call_sid), None)
            if row is not None and row["complete"]:
                return dict(row)
            await asyncio.sleep(0.1)
    raise AssertionError(f"no finished recording of {call_sid}")


LONG_ANSWER = "We open at nine, and on weekdays we close at six, except on Thursdays when"
SPOKEN_WORDS_PER_S = 2.7
"""The calls page's pace for a turn cut short (calls.js): it shows the share of words the heard audio covers."""


async def heard_words(base: str, name: str) -> int:
    """How many words of the interrupted turn the calls page should show as heard, from the recording's figures."""
    async with httpx.AsyncClient(base_url=f"http://{base}", auth=("operator", SECRET)) as client:
        transcript = (await client.get(f"/console/api/calls/{name}")).json()
    turn = next(turn for turn in transcript["turns"] if turn["role"] == "bot" and turn["interrupted"])
    words = LONG_ANSWER.split()
    full_s = max(turn["sent_s"], len(words) / SPOKEN_WORDS_PER_S)
    return round(len(words) * min(1.0, turn["heard_s"] / full_s))


CONVERSATION = [
    Say("Hello! You're through to the test bot.", 1.2, tone_hz=600),
    # Longer than the greeting: a caller's turn while the page still plays its end is an early barge-in, and the
    # bridge clears the greeting's last 0.2 s (what two full-suite runs met when Chromium's microphone started quickly).
    WaitForAudio(2.0),
    UserSaid("What are your opening hours?"),
    Say(LONG_ANSWER, 5.0, tone_hz=500),
    Sleep(1.6),  # the caller talks over the answer 1.6 s into it
    BargeIn(),
    WaitForAudio(0.4),
    UserSaid("Thanks, goodbye."),
    Say("Goodbye!", 0.8, tone_hz=400),
    CallTool("end_conversation", {"reason": "the caller said goodbye"}),
    Hold(),
]


async def test_a_console_call_through_the_phone_audio_path_then_its_recording(tmp_path: Path) -> None:
    microphone = write_microphone_wav(tmp_path / "microphone.wav")
    settings = replace(
        TEST_SETTINGS,
        console=True,
        console_token=SECRET,
        twilio_auth_token="twilio-auth-token",  # Twilio signatures on: the console must not need one
        record_dir=str(tmp_path / "calls"),
        hangup_grace_s=0.3,
    )
    async with harness(CONVERSATION, settings=settings) as h, console_browser(microphone) as (context, launch_s):
        record_timing("chromium_launch_s", launch_s)
        page, errors = await open_page(context, f"http://{h.base}/console")
        started = time.monotonic()
        await page.click("#call")

        # The bot answers: its greeting arrives as μ-law media and plays through the page's worklet.
        await wait_for_stats(page, "s.state === 'in-call' && s.playedMs > 800")
        record_timing("click_to_greeting_heard_s", time.monotonic() - started)
        await page.locator(".entry.turn.bot", has_text="through to the test bot").wait_for(timeout=STEP_TIMEOUT_MS)
        await page.locator(".entry.turn.caller", has_text="opening hours").wait_for(timeout=STEP_TIMEOUT_MS)
        await page.screenshot(path=ARTIFACTS / "1-softphone-in-call.png", full_page=True)

        # The long answer queues seconds of audio in the page; the barge-in's `clear` empties it.
        await wait_for_stats(page, "s.clears >= 1")
        barge = await stats(page)
        assert barge["maxQueuedMs"] > 2000 and barge["lastClearDroppedMs"] > 1000, barge
        await page.locator(".entry.barge-in").wait_for(timeout=STEP_TIMEOUT_MS)
        await page.locator(".entry.cleared").wait_for(timeout=STEP_TIMEOUT_MS)
        await page.screenshot(path=ARTIFACTS / "2-softphone-barge-in.png", full_page=True)

        # The goodbye is heard, then the bot hangs up: the server closes the stream.
        await wait_for_stats(page, "s.state === 'ended' && s.endedBy !== null")
        record_timing("click_to_hang_up_s", time.monotonic() - started)
        await page.locator(".entry.ended", has_text="Call ended by agent").wait_for(timeout=STEP_TIMEOUT_MS)
        await page.locator(".entry.tool", has_text="end_conversation").wait_for(timeout=STEP_TIMEOUT_MS)
        await page.screenshot(path=ARTIFACTS / "3-softphone-ended.png", full_page=True)
        final = await stats(page)
        assert final["endedBy"] == "agent" and final["closeCode"] == 1000 and final["errors"] == []
        assert final["marksEchoed"] >= 3 and final["framesSent"] > 100

        # What the page's microphone sent reached the model as the WAV's tone, through 8 kHz μ-law.
        model = h.model
        heard = pcm(bytes(model.audio_received))
        loud = heard[np.abs(heard) > 1000]
        assert len(loud) > model.input_rate // 2, "the model got no audible caller audio from the page"
        assert abs(dominant_hz(heard[-model.input_rate :], model.input_rate) - MIC_TONE_HZ) < 15

        # The calls page lists the recording, opens it on a timeline, and plays it.
        row = await wait_for_recording(h.base, final["callSid"])
        assert row["ended_by"] == "agent" and row["turns"] >= 4 and row["tool_calls"] == 1 and row["barge_ins"] == 1
        await page.goto(f"http://{h.base}/console/calls")
        await page.locator(f"#calls tr[data-name='{row['name']}']").click()
        # The view is shown before its transcript arrives; the page names the call once it has drawn it.
        await page.locator(f"#call-view[data-name='{row['name']}']:not([hidden])").wait_for(timeout=STEP_TIMEOUT_MS)
        assert await page.locator(".lane[data-role='bot'] .bar").count() >= 2
        assert await page.locator(".lane[data-role='bot'] .bar.interrupted").count() == 1
        # What the caller heard, then the rest struck out. How much was heard depends on when the page's
        # microphone audio reached the bridge (bursty on a loaded machine), so the split is checked against
        # the recording's own figures; 1.6 s of caller audio before the barge-in is about 4 words.
        interrupted = page.locator("#turns .entry.interrupted")
        heard, unheard = [await interrupted.locator(part).inner_text() for part in (".heard", ".unheard")]
        expected = await heard_words(h.base, row["name"])
        assert 1 <= expected < len(LONG_ANSWER.split()) - 2, expected
        assert heard.split() == LONG_ANSWER.split()[:expected] and unheard.split() == LONG_ANSWER.split()[expected:]
        assert "Thursdays" in unheard
        assert await page.locator(".lane[data-role='tool'] .bar").count() == 1
        await page.screenshot(path=ARTIFACTS / "4-calls-page.png", full_page=True)
        await page.evaluate("document.getElementById('player').play()")
        playing = "() => document.getElementById('player').currentTime > 0.5"
        await page.wait_for_function(playing, timeout=STEP_TIMEOUT_MS)
        duration = await page.evaluate("document.getElementById('player').duration")
        assert abs(duration - row["duration_s"]) < 1.5, (duration, row["duration_s"])
        await page.screenshot(path=ARTIFACTS / "5-calls-page-playing.png", full_page=True)
        assert errors == []


async def test_the_caller_hangs_up_from_the_page(tmp_path: Path) -> None:
    microphone = write_microphone_wav(tmp_path / "microphone.wav", seconds=5)
    settings = replace(TEST_SETTINGS, console=True, console_token=SECRET)
    async with (
        harness([Say("Hello there.", 0.6, tone_hz=600), Hold()], settings=settings) as h,
        console_browser(microphone) as (context, _),
    ):
        page, errors = await open_page(context, f"http://{h.base}/console")
        await page.click("#call")
        await wait_for_stats(page, "s.state === 'in-call' && s.playedMs > 400")
        await page.click("#hangup")
        await wait_for_stats(page, "s.state === 'ended' && s.endedBy !== null")
        final = await stats(page)
        assert final["endedBy"] == "caller" and errors == []
        await page.locator(".entry.ended", has_text="Call ended by caller").wait_for(timeout=STEP_TIMEOUT_MS)
    assert h.models[0].stopped


def write_caller_wav(path: Path, lines: list[tuple[float, str]], total_s: float, rate: int = 16000) -> Path:
    """The caller's side of a conversation, spoken by espeak-ng: each line starts at its time (seconds)."""
    from agent.offline import CALLER_VOICE, Synthesizer

    voice = Synthesizer(CALLER_VOICE, sample_rate=rate)
    audio = np.zeros(int(total_s * rate), dtype=np.int16)
    for start_s, text in lines:
        speech = np.frombuffer(voice.synthesize(text), dtype="<i2")
        start = int(start_s * rate)
        audio[start : start + len(speech)] = speech[: len(audio) - start]
    return write_wav(path, audio, rate)


async def test_talking_with_the_offline_model_from_the_console(tmp_path: Path) -> None:
    """Real speech both ways: espeak-ng says the caller's lines into the page's microphone, the offline
    model (pocketsphinx + espeak-ng) hears them through 8 kHz μ-law, answers, uses its clock tool and
    hangs up on goodbye. The caller's first line talks over the bot's greeting."""
    from agent.offline import create_agent as offline_agent

    lines = [(2.5, "what time is it"), (9.0, "goodbye")]
    microphone = write_caller_wav(tmp_path / "caller.wav", lines, total_s=30.0)
    settings = replace(
        TEST_SETTINGS,
        console=True,
        console_token=SECRET,
        greeting=Settings().greeting,  # the offline bot greets when told the caller is connected
        record_dir=str(tmp_path / "calls"),
        hangup_grace_s=0.3,
        start_timeout_s=5.0,
        agent_start_timeout_s=10.0,
    )
    app = create_app(settings, agent_factory=lambda call: offline_agent(call, settings))
    async with serve(app) as base, console_browser(microphone) as (context, _):
        page, errors = await open_page(context, f"http://{base}/console")
        started = time.monotonic()
        await page.click("#call")
        await page.locator(".entry.turn.caller", has_text="what time is it").wait_for(timeout=STEP_TIMEOUT_MS)
        await page.locator(".entry.tool", has_text="current_time").wait_for(timeout=STEP_TIMEOUT_MS)
        answer = page.locator(".entry.turn.bot .text", has_text=re.compile(r"^It is \d"))
        await answer.wait_for(timeout=STEP_TIMEOUT_MS)
        await page.screenshot(path=ARTIFACTS / "6-offline-model-in-call.png", full_page=True)
        await wait_for_stats(page, "s.state === 'ended' && s.endedBy !== null")
        record_timing("offline_model_call_s", time.monotonic() - started)
        await page.locator(".entry.turn.caller", has_text="goodbye").wait_for(timeout=STEP_TIMEOUT_MS)
        await page.screenshot(path=ARTIFACTS / "7-offline-model-ended.png", full_page=True)
        final = await stats(page)
        assert final["endedBy"] == "agent" and final["errors"] == [] and errors == []
        assert final["clears"] >= 1, "the caller's first line talked over the greeting: playback must be cleared"
        assert await page.locator(".entry.barge-in").count() >= 1

        # transcript.json: the caller's question spans their words in caller.wav, and the answer has its latency.
        row = await wait_for_recording(base, final["callSid"])
        folder = tmp_path / "calls" / row["name"]
        transcript = json.loads((folder / "transcript.json").read_text())
        question = next(turn for turn in transcript["turns"] if turn["role"] == "caller" and "time" in turn["text"])
        with wave.open(str(folder / "caller.wav"), "rb") as source:
            caller_audio = np.frombuffer(source.readframes(source.getnframes()), dtype="<i2")
        frames = caller_audio[: len(caller_audio) // 160 * 160].reshape(-1, 160).astype(np.float64)
        voiced = np.flatnonzero(np.sqrt(np.mean(frames**2, axis=1)) > 200) * 0.02
        said = voiced[(voiced > question["start"] - 1.0) & (voiced < question["recognised_at"])]
        assert abs(question["start"] - said[0]) < 0.1 and abs(question["end"] - (said[-1] + 0.02)) < 0.1, question
        assert 0.5 < question["end"] - question["start"] < 2.0 and question["recognised_at"] > question["end"]
        answer_turn = next(turn for turn in transcript["turns"] if turn["role"] == "bot" and "It is" in turn["text"])
        # Its latency runs from the end of the question to the answer's first audio (how fast is benchmarks' business).
        assert answer_turn["latency_s"] > 0.1 and answer_turn["start"] > question["recognised_at"], answer_turn
        assert abs(answer_turn["latency_s"] - (answer_turn["start"] - question["end"])) < 0.002, answer_turn

        # The calls page shows it: the question at its time, the answer's latency, the tool call readable.
        await page.set_viewport_size({"width": 1280, "height": 1000})
        await page.goto(f"http://{base}/console/calls")
        await page.locator(f"#calls tr[data-name='{row['name']}']").click()
        await page.locator("#turns .latency").first.wait_for(timeout=STEP_TIMEOUT_MS)
        await page.locator("#turns .entry.tool", has_text="current_time()").wait_for(timeout=STEP_TIMEOUT_MS)
        await page.wait_for_function("() => window.voicebotCalls.levels && window.voicebotCalls.levels.bot > 10")
        await page.screenshot(path=ARTIFACTS / "15-calls-page-offline-model.png")
        assert errors == []

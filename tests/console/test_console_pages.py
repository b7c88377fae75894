"""The console's pages as a user meets them, in headless Chromium: live calls on the calls page and their
recordings, the keypad, a phone-sized screen, the keyboard, and an
automated accessibility check (axe-core, bundled by axe-playwright-python: nothing is fetched).

Screenshots go to tests/artifacts/console/ (git-ignored), at 1280 px and 390 px wide.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ..conftest import TEST_SETTINGS, harness
from ..fakes.model import Hold, Say, UserSaid, WaitForAudio, WaitForText
from .test_console_browser import (
    ARTIFACTS,
    SECRET,
    STEP_TIMEOUT_MS,
    console_browser,
    open_page,
    record_timing,
    wait_for_recording,
    wait_for_stats,
    write_microphone_wav,
)
from .test_console_browser import pytestmark as needs_chromium

pytestmark = needs_chromium  # like test_console_browser.py: Debian's Chromium or skip, never Playwright's download

axe_api = pytest.importorskip(
    "axe_playwright_python.async_playwright", reason="`uv sync` installs axe-playwright-python"
)

PHONE = {"width": 390, "height": 844}
WIDE = {"width": 1280, "height": 900}
SERIOUS = ("serious", "critical")


async def no_serious_violations(page: Any, name: str) -> None:
    """axe-core on the page as it is now; serious and critical findings fail the test (the report is kept)."""
    results = await axe_api.Axe().run(page)
    violations = [item for item in results.response["violations"] if item.get("impact") in SERIOUS]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"axe-{name}.txt").write_text(results.generate_report())
    found = [(item["id"], item["help"], [node["target"] for node in item["nodes"]]) for item in violations]
    assert violations == [], found


async def fits(page: Any) -> None:
    """Nothing wider than the screen: no sideways scrolling."""
    widths = await page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    wide = await page.evaluate(
        "[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)"
        ".slice(0, 5).map(e => e.tagName + '#' + e.id + '.' + e.className)"
    )
    assert widths[0] <= widths[1], f"the page lays out {widths[0]} px wide on a {widths[1]} px screen: {wide}"


def console_settings(tmp_path: Path, **overrides: Any) -> Any:
    return replace(TEST_SETTINGS, console=True, console_token=SECRET, record_dir=str(tmp_path / "calls"), **overrides)


async def test_a_live_call_on_the_calls_page_then_its_recording_and_the_keypad(tmp_path: Path) -> None:
    """The calls page lists a call while it is going on (refreshing itself), follows it live, and opens
    its recording once it has ended; the keypad's digits reach the agent as Twilio's dtmf events."""
    script = [
        Say("Welcome. Press 1 for opening hours.", 0.8, tone_hz=600),
        WaitForText("pressed 1"),
        Say("We open at nine.", 0.8, tone_hz=500),
        WaitForAudio(0.5),
        UserSaid("thank you"),
        Hold(),
    ]
    microphone = write_microphone_wav(tmp_path / "microphone.wav", seconds=30)
    async with (
        harness(script, settings=console_settings(tmp_path)) as h,
        console_browser(microphone) as (context, _),
    ):
        phone, phone_errors = await open_page(context, f"http://{h.base}/console")
        calls, calls_errors = await open_page(context, f"http://{h.base}/console/calls")
        await calls.locator("#call-placeholder").wait_for(timeout=STEP_TIMEOUT_MS)
        await phone.fill("#from", "+15550100")
        await phone.click("#call")
        await wait_for_stats(phone, "s.state === 'in-call' && s.playedMs > 700")
        await phone.click("#keypad button[data-digit='1']")
        await phone.locator(".entry.dtmf", has_text="pressed 1").wait_for(timeout=STEP_TIMEOUT_MS)
        await phone.locator(".entry.turn.bot", has_text="open at nine").wait_for(timeout=STEP_TIMEOUT_MS)
        assert any("pressed 1 on their keypad" in text for text in h.model.texts)

        # The calls page, opened before the call, shows it live without a reload, and follows it.
        live_row = calls.locator("#calls tr[data-kind='live']", has_text="+15550100")
        await live_row.wait_for(timeout=STEP_TIMEOUT_MS)
        assert "ScriptedModel" in await live_row.inner_text() or "scripted" in await live_row.inner_text()
        await live_row.focus()
        await calls.keyboard.press("Enter")  # rows are reachable and opened with the keyboard
        await calls.locator("#live-events .entry.turn.bot", has_text="open at nine").wait_for(timeout=STEP_TIMEOUT_MS)
        await calls.locator("#live-events .entry.dtmf", has_text="pressed 1").wait_for(timeout=STEP_TIMEOUT_MS)
        await calls.screenshot(path=ARTIFACTS / "8-calls-page-live-call.png", full_page=True)

        # The caller hangs up: the live view turns into the call's recording, with no 404 and no script error.
        await phone.click("#hangup")
        await calls.locator("#recording-view:not([hidden]) #turns .entry").first.wait_for(timeout=STEP_TIMEOUT_MS)
        name = await calls.locator("#call-view").get_attribute("data-name")
        assert name and name.endswith(h.calls[0].call_sid)
        row = await wait_for_recording(h.base, h.calls[0].call_sid)
        assert row["from_number"] == "+15550100" and row["model"] == "scripted"
        await calls.locator(f"#calls tr[data-name='{name}'][data-kind='recorded']").wait_for(timeout=STEP_TIMEOUT_MS)
        assert phone_errors == [] and calls_errors == []
        assert await calls.evaluate("window.voicebotCalls.errors") == []


async def test_pages_on_a_phone_sized_screen_with_the_keyboard_and_an_accessibility_check(tmp_path: Path) -> None:
    """390 px wide: no sideways scrolling, the call log on screen; disabled buttons look disabled; the
    recording's turns are keyboard-playable, the playing one highlighted; either side plays alone; the
    files download; axe-core finds nothing serious on either page."""
    script = [
        Say("Hello! You're through to the test bot.", 1.2, tone_hz=600),
        WaitForAudio(1.0),
        UserSaid("What are your opening hours?"),
        Say("We open at nine and close at six.", 1.5, tone_hz=500),
        Hold(),
    ]
    microphone = write_microphone_wav(tmp_path / "microphone.wav", seconds=20)
    started = time.monotonic()
    async with (
        harness(script, settings=console_settings(tmp_path, hangup_grace_s=0.3)) as h,
        console_browser(microphone) as (context, _),
    ):
        page, errors = await open_page(context, f"http://{h.base}/console")
        await page.set_viewport_size(PHONE)
        await fits(page)
        assert await page.locator("#log-empty").is_visible()  # the empty call log says what will appear there
        hang_up = await page.evaluate(
            "(() => { const s = getComputedStyle(document.getElementById('hangup'));"
            " return [s.cursor, s.backgroundColor, s.borderStyle]; })()"
        )
        assert hang_up[0] == "not-allowed" and hang_up[2] == "dashed", hang_up  # disabled, and looks it
        await no_serious_violations(page, "softphone-idle")
        await page.screenshot(path=ARTIFACTS / "10-softphone-390px-idle.png", full_page=True)
        await page.click("#call")
        await page.locator(".entry.turn.bot", has_text="open at nine").wait_for(timeout=STEP_TIMEOUT_MS)
        await fits(page)
        log_box = await page.locator("#events").bounding_box()
        assert log_box is not None and log_box["x"] >= 0 and log_box["x"] + log_box["width"] <= PHONE["width"]
        await no_serious_violations(page, "softphone-in-call")
        await page.screenshot(path=ARTIFACTS / "11-softphone-390px-in-call.png", full_page=True)
        await page.click("#hangup")
        await wait_for_stats(page, "s.state === 'ended'")
        row = await wait_for_recording(h.base, h.calls[0].call_sid)

        # The calls page on a phone: cards instead of a table, nothing off to the side.
        await page.goto(f"http://{h.base}/console/calls")
        await page.locator(f"#calls tr[data-name='{row['name']}']").wait_for(timeout=STEP_TIMEOUT_MS)
        await fits(page)
        await page.screenshot(path=ARTIFACTS / "12-calls-390px-list.png", full_page=True)
        await page.focus(f"#calls tr[data-name='{row['name']}']")
        await page.keyboard.press("Enter")
        await page.locator("#recording-view:not([hidden]) #turns .entry").first.wait_for(timeout=STEP_TIMEOUT_MS)
        await page.wait_for_function("() => window.voicebotCalls.levels && window.voicebotCalls.levels.caller > 10")
        await fits(page)
        await page.screenshot(path=ARTIFACTS / "13-calls-390px-call.png", full_page=True)

        # Every file of the recording downloads.
        links = await page.locator("#downloads a").evaluate_all("links => links.map(link => link.href)")
        assert len(links) == 5
        for link in links:
            response = await page.request.get(link)
            assert response.status == 200 and len(await response.body()) > 0, link

        # Enter on the caller's turn plays the question (the turn spans the caller's speech), highlighted.
        await page.set_viewport_size(WIDE)
        caller_turn = page.locator("#turns .entry.turn.caller").first
        await caller_turn.focus()
        await page.keyboard.press("Enter")
        await page.wait_for_function("() => !document.getElementById('player').paused")
        await page.locator("#turns .entry.playing[aria-current='true']").wait_for(timeout=STEP_TIMEOUT_MS)
        # One side alone: the bot's track, from where the player was.
        await page.check("#listen input[value='bot.wav']")
        await page.wait_for_function("() => document.getElementById('player').src.endsWith('/files/bot.wav')")
        await page.locator("#call-view").screenshot(path=ARTIFACTS / "14-calls-1280px-playing.png")
        await no_serious_violations(page, "calls-page")
        assert errors == []
    record_timing("phone_screen_and_axe_s", time.monotonic() - started)

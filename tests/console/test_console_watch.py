"""Watching and debugging calls in the console, in headless Chromium at 1280×800 and 390×844: the chosen call
comes into view, every event reads in order on its timeline with each answer's latency in stages, find and
search in what was said, the raw events, listening in on a live call, and the softphone's controls (timer,
mute, keyboard digits, controls on screen, sign-in and failure messages). axe-core finds nothing serious.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from telephony.app import create_app
from telephony.call_info import CallInfo

from ..conftest import harness, serve
from ..fakes.model import Hold, Say, Sleep, WaitForText
from .recordings import RICH_SID, write_many
from .test_console_browser import (
    ARTIFACTS,
    STEP_TIMEOUT_MS,
    console_browser,
    open_page,
    wait_for_stats,
    write_microphone_wav,
)
from .test_console_browser import pytestmark as needs_chromium
from .test_console_pages import console_settings, fits, no_serious_violations

pytestmark = needs_chromium

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
SIZES = {"1280px": DESKTOP, "390px": PHONE}


async def on_screen(page: Any, selector: str) -> bool:
    """The element's box lies within the viewport (at least partly, and its top edge inside)."""
    script = f"""() => {{
        const box = document.querySelector({json.dumps(selector)}).getBoundingClientRect();
        return box.height > 0 && box.top >= 0 && box.top < window.innerHeight && box.bottom <= window.innerHeight + 1;
    }}"""
    return bool(await page.evaluate(script))


async def calls_state(page: Any, expression: str) -> Any:
    return await page.evaluate(f"(s => {expression})(window.voicebotCalls)")


async def test_the_chosen_call_comes_into_view_and_reads_in_order_with_latency_stages(tmp_path: Path) -> None:
    """13 calls: the oldest, chosen at the bottom of the list, is brought into view at both sizes; its key press,
    barge-in, model swap and hang-up are rows among its turns and marks on the timeline, in time order; answers
    show their latency in stages; a time axis; find in the call, search across calls; the raw events."""
    settings = console_settings(tmp_path)
    rich = write_many(Path(settings.record_dir), 13)
    app = create_app(settings, agent_factory=_unused)
    async with serve(app) as base, console_browser(write_microphone_wav(tmp_path / "mic.wav", 2)) as (context, _):
        page, errors = await open_page(context, f"http://{base}/console/calls")
        for size, viewport in SIZES.items():
            await page.set_viewport_size(viewport)
            await page.goto(f"http://{base}/console/calls")
            row = page.locator(f"#calls tr[data-name='{rich}']")
            await row.wait_for(timeout=STEP_TIMEOUT_MS)
            await row.scroll_into_view_if_needed()
            await row.click()
            await page.locator("#turns .entry.event.kind-dtmf").wait_for(timeout=STEP_TIMEOUT_MS)
            await page.wait_for_function("() => document.activeElement.id === 'call-title'")
            assert await on_screen(page, "#call-title"), f"{size}: the chosen call's view is not on screen"

            # Turns and events in the order they happened.
            rows = await page.locator("#turns .entry").evaluate_all(
                "items => items.map(i => [i.classList.contains('event') ? 'event' : 'turn',"
                " i.querySelector('time').textContent])"
            )
            times = [float(text.split()[0]) for _, text in rows]
            assert times == sorted(times), rows
            texts = await page.locator("#turns .entry .text").all_inner_texts()
            key = next(i for i, text in enumerate(texts) if "key 1" in text)
            assert "Press 1" in texts[key - 1] and "open at nine" in texts[key + 1], texts
            for kind in ("dtmf", "barge_in", "model_swap", "hangup"):
                assert await page.locator(f"#turns .entry.event.kind-{kind}").count() == 1, kind
                assert await page.locator(f".lane[data-role='event'] .event-mark.kind-{kind}").count() == 1, kind
            assert await page.locator("#turns .entry.event.kind-tool_call").count() == 0  # the tool's turn says it
            assert await page.locator(".lane[data-role='tool'] .bar").count() == 1

            # Each answer's latency in stages, on its row and as a span before it on the timeline.
            stages = page.locator("#turns .entry.turn.bot .stages").first
            assert await stages.locator(".stage").count() == 3
            assert "heard by the model +0.20 s" in (await stages.get_attribute("aria-label") or "")
            assert await page.locator(".lane[data-role='bot'] .latency-span").count() == 2
            assert await page.locator("#axis .tick").count() >= 3

            # Find in the call; the raw events (audio frames left out unless asked for).
            await page.fill("#find-in-call", "nine")
            await page.wait_for_function("() => window.voicebotCalls.found === 1")
            await page.locator("#raw-events summary").click()
            await page.wait_for_function("() => window.voicebotCalls.rawLines === 7")
            await page.check("#raw-media")
            await page.wait_for_function("() => window.voicebotCalls.rawLines === 37")
            await fits(page)
            await page.screenshot(path=ARTIFACTS / f"20-calls-{size}-chosen-call.png")
            await no_serious_violations(page, f"calls-{size}-chosen-call")

            # Back to the list; search in what was said finds the one call that said it.
            await page.click("#back-to-list")
            await page.fill("#filter-text", "ten past three")
            await page.wait_for_function("() => window.voicebotCalls.searchMatches === 1")
            await page.wait_for_function("() => document.querySelectorAll('#calls tbody tr').length === 1")
            assert RICH_SID in (await page.locator("#calls tbody tr").get_attribute("data-key") or "")
            assert "ten past three" in await page.locator("#calls tbody tr .said").inner_text()
        assert errors == [] and await calls_state(page, "s.errors") == []


async def test_listening_in_on_a_live_call_from_the_calls_page(tmp_path: Path) -> None:
    """A call from the softphone; the calls page (on a phone-sized screen) listens in: both sides' frames arrive
    and play, read-only; it stops when the call ends and the recording opens."""
    script = [Say("Welcome to the test bot.", 0.8, tone_hz=600), WaitForText("pressed 2")]
    script += [Say("You pressed two. " * 4, 6.0, tone_hz=500), Sleep(0.5), Hold()]
    microphone = write_microphone_wav(tmp_path / "microphone.wav", seconds=30)
    async with (
        harness(script, settings=console_settings(tmp_path)) as h,
        console_browser(microphone) as (context, _),
    ):
        phone, phone_errors = await open_page(context, f"http://{h.base}/console")
        calls, calls_errors = await open_page(context, f"http://{h.base}/console/calls")
        await calls.set_viewport_size(PHONE)
        await phone.click("#call")
        await wait_for_stats(phone, "s.state === 'in-call' && s.playedMs > 500")
        live_row = calls.locator("#calls tr[data-kind='live']")
        await live_row.wait_for(timeout=STEP_TIMEOUT_MS)
        await live_row.click()
        await calls.locator("#listen-in").click()
        await calls.wait_for_function(
            "() => window.voicebotCalls.listen && window.voicebotCalls.listen.state === 'listening'"
        )
        assert await calls.get_attribute("#listen-in", "aria-pressed") == "true"
        await phone.click("#keypad button[data-digit='2']")  # the bot answers: its frames reach the listener
        await calls.wait_for_function(
            "() => window.voicebotCalls.listen.caller > 25 && window.voicebotCalls.listen.bot > 25",
            timeout=STEP_TIMEOUT_MS,
        )
        assert await on_screen(calls, "#listen-in")
        await fits(calls)
        await calls.screenshot(path=ARTIFACTS / "21-calls-390px-listening.png")
        await no_serious_violations(calls, "calls-390px-listening")
        await calls.set_viewport_size(DESKTOP)
        await no_serious_violations(calls, "calls-1280px-listening")
        await phone.click("#hangup")
        await calls.wait_for_function("() => window.voicebotCalls.listen.state === 'ended'", timeout=STEP_TIMEOUT_MS)
        await calls.locator("#recording-view:not([hidden]) #turns .entry").first.wait_for(timeout=STEP_TIMEOUT_MS)
        assert phone_errors == [] and calls_errors == []


async def test_the_softphone_keyboard_timer_mute_and_controls_stay_on_screen(tmp_path: Path) -> None:
    """At both sizes: the keyboard's digits reach the keypad (and the agent), the call timer runs, Mute shows its
    state, and Hang up stays on screen while the call log grows."""
    script = [Say("Hello, press any key.", 0.6, tone_hz=600)]
    for digit in "1234567890":
        script += [WaitForText(f"pressed {digit}"), Say(f"You pressed {digit}.", 0.3, tone_hz=500)]
    script += [Hold()]
    microphone = write_microphone_wav(tmp_path / "microphone.wav", seconds=60)
    for size, viewport in SIZES.items():
        async with (
            harness(script, settings=console_settings(tmp_path / size)) as h,
            console_browser(microphone) as (context, _),
        ):
            page, errors = await open_page(context, f"http://{h.base}/console")
            await page.set_viewport_size(viewport)
            await page.click("#call")
            await wait_for_stats(page, "s.state === 'in-call' && s.playedMs > 400")
            for digit in "1234567890":
                await page.locator("body").press(digit)
                await page.locator(".entry.turn.bot", has_text=f"You pressed {digit}").wait_for(timeout=STEP_TIMEOUT_MS)
            assert any("pressed 0 on their keypad" in text for text in h.model.texts)
            await wait_for_stats(page, "s.dtmfSent === 10 && s.timer !== '0:00'")
            assert await page.locator("#call-timer").inner_text() != "0:00"
            await page.click("#mute")
            await wait_for_stats(page, "s.muted")
            assert await page.get_attribute("#mute", "aria-pressed") == "true"
            assert await page.locator("#mute-state").is_visible() and await page.inner_text("#mute") == "Unmute"
            assert await on_screen(page, "#hangup"), f"{size}: Hang up scrolled away"
            await fits(page)
            await page.screenshot(path=ARTIFACTS / f"22-softphone-{size}-keyboard-and-mute.png")
            await no_serious_violations(page, f"softphone-{size}-in-call-muted")
            await page.click("#mute")
            await page.click("#hangup")
            await wait_for_stats(page, "s.state === 'ended' && s.endedBy === 'caller'")
            assert "you hung up" in await page.inner_text("#status")
            assert errors == []


async def test_sign_in_errors_and_an_unreachable_server_say_what_happened(tmp_path: Path) -> None:
    """A wrong token shows a sign-in page, not JSON; pressing Call when the server has gone says it is unreachable."""
    settings = console_settings(tmp_path)
    microphone = write_microphone_wav(tmp_path / "microphone.wav", seconds=5)
    async with console_browser(microphone) as (context, _):
        app = create_app(settings, agent_factory=_unused)
        async with serve(app) as base:
            browser = context.browser
            wrong = await browser.new_context(http_credentials={"username": "operator", "password": "wrong"})
            for size, viewport in SIZES.items():
                refused = await wrong.new_page()
                await refused.set_viewport_size(viewport)
                response = await refused.goto(f"http://{base}/console/calls")
                assert response is not None and response.status == 401
                assert await refused.locator("h1").inner_text() == "Sign in to the voicebot console"
                assert "not the console token" in await refused.inner_text("#sign-in-reason")
                assert "{" not in await refused.inner_text("body")
                styled = "getComputedStyle(document.querySelector('main')).backgroundColor"
                assert await refused.evaluate(styled) == "rgb(255, 255, 255)"  # its inline style passed the CSP
                await fits(refused)
                await no_serious_violations(refused, f"sign-in-{size}")
                await refused.screenshot(path=ARTIFACTS / f"23-sign-in-{size}.png")
            await wrong.close()
            async with httpx.AsyncClient(base_url=f"http://{base}") as client:  # scripts still get JSON
                refused_api = await client.get("/console/api/calls", headers={"Authorization": "Bearer x"})
                assert refused_api.status_code == 401 and "detail" in refused_api.json()
            page, _errors = await open_page(context, f"http://{base}/console")
            await page.set_viewport_size(PHONE)
        for size, viewport in SIZES.items():  # the server has stopped
            await page.set_viewport_size(viewport)
            await page.evaluate("document.getElementById('status').textContent = ''")
            await page.click("#call")
            await page.wait_for_function("() => document.getElementById('status').textContent.includes('Cannot reach')")
            status = await page.inner_text("#status")
            assert "is voicebot serve running" in status and "microphone" not in status, status
            assert await page.is_enabled("#call")  # ready to call again once the server is back
            await page.screenshot(path=ARTIFACTS / f"24-softphone-{size}-server-unreachable.png")


def _unused(call: CallInfo) -> Any:  # pragma: no cover - the pages under test place no call
    raise AssertionError("no agent should be built")

"""The settings tests and benchmarks run the app with: short timeouts, no greeting, no prewarm."""

from __future__ import annotations

from telephony.config import Settings

TEST_SETTINGS = Settings(
    public_url="https://bot.example.com",
    greeting="",
    hangup_grace_s=0.3,
    hangup_mark_timeout_s=2.0,
    start_timeout_s=3.0,
    agent_start_timeout_s=3.0,
    prewarm=False,  # tests that post /twiml turn it on themselves (tests/test_prewarm.py)
)

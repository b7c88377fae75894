"""Settings for how each call goes: the agent and its model, audio, call start, limits and transfer."""

from __future__ import annotations

from dataclasses import dataclass

from .declare import setting
from .rules import (
    AGENT_SPEC,
    DIAL_DESTINATION,
    FRAME_MULTIPLE,
    HOLD_SOUND,
    MODEL_PROVIDERS,
    NOVA_RATES,
    POSITIVE_SECONDS,
    RING_TIMEOUT,
    TRANSFER_MODES,
    TRANSFER_TARGETS,
    at_least,
    between,
    one_of,
)

DEFAULT_AGENT = "agent.factory:create_agent"
DEFAULT_BRIEFING_AGENT = "agent.briefing:create_briefing_agent"
TWILIO_HOLD_MUSIC = "https://twimlets.com/holdmusic?Bucket=com.twilio.music.classical"
"""Twilio's own hold-music twimlet: what a conference plays while waiting when no waitUrl is given."""


@dataclass(frozen=True)
class ModelSettings:
    """The agent and its model

    What every call talks to. Agent factories receive these as `telephony.config.AgentSettings`.
    """

    agent: str = setting(
        "VOICEBOT_AGENT",
        DEFAULT_AGENT,
        "The agent factory: a function taking a `telephony.CallInfo` and returning a `BidiAgent`.",
        rule=AGENT_SPEC,
        flag="--agent",
    )
    model: str = setting(
        "VOICEBOT_MODEL",
        "nova",
        "The default agent's model: `nova`, `openai`, `gemini` (install the extra: `uv sync --extra openai`) or "
        "`local` (the offline model).",
        rule=one_of(
            MODEL_PROVIDERS, f"{{variable}}={{value!r}} is unknown: choose one of {', '.join(MODEL_PROVIDERS)}"
        ),
        flag="--model",
    )
    model_id: str | None = setting(
        "VOICEBOT_MODEL_ID",
        None,
        "Model id for the chosen provider.",
        shown_default="the provider's (nova: `amazon.nova-2-5-sonic`)",
    )
    voice: str | None = setting(
        "VOICEBOT_VOICE", None, "Voice id (offline model: an espeak-ng voice).", shown_default="the model's (`matthew`)"
    )
    aws_region: str = setting("AWS_REGION", "us-east-1", "AWS region for Nova Sonic.")
    nova_output_rate: int = setting(
        "VOICEBOT_NOVA_OUTPUT_RATE",
        16000,
        "Rate Nova Sonic speaks at (the bridge resamples any of them to the phone's 8 kHz; at 8000 Nova itself does, "
        "and sends half the bytes: docs/benchmarks.md measures the cost).",
        rule=one_of(NOVA_RATES, "{variable}={value} is not a rate Nova Sonic speaks: use 8000, 16000 or 24000"),
    )
    system_prompt: str | None = setting(
        "VOICEBOT_SYSTEM_PROMPT", None, "Replaces the default system prompt.", shown_default="a phone-style prompt"
    )
    greeting: str = setting(
        "VOICEBOT_GREETING",
        "The caller has just been connected. Greet them in one short sentence.",
        "Text sent to the agent when the call starts so it speaks first (an empty variable keeps this default).",
    )
    tool_timeout_s: float = setting(
        "VOICEBOT_TOOL_TIMEOUT",
        20.0,
        "A tool call that runs longer is cancelled; the agent gets an error result it can speak about.",
        rule=POSITIVE_SECONDS,
    )


@dataclass(frozen=True)
class AudioSettings:
    """Audio and turn-taking"""

    inbound_buffer_ms: int = setting(
        "VOICEBOT_INBOUND_BUFFER_MS",
        2000,
        "Caller audio held while the model cannot take it (reconnects); older audio is dropped and counted.",
        rule=between(100, 60_000),
    )
    send_chunk_ms: int = setting(
        "VOICEBOT_SEND_CHUNK_MS",
        60,
        "Caller audio handed to the model per send while the bot is quiet.",
        rule=FRAME_MULTIPLE,
    )
    send_chunk_speaking_ms: int = setting(
        "VOICEBOT_SEND_CHUNK_SPEAKING_MS",
        40,
        "Caller audio handed to the model per send while the caller hears the bot (barge-in speed).",
        rule=FRAME_MULTIPLE,
    )
    send_chunk_silence_ms: int = setting(
        "VOICEBOT_SEND_CHUNK_SILENCE_MS",
        200,
        "Caller audio handed to the model per send in long caller silence (the caller's onset flushes it at once).",
        rule=FRAME_MULTIPLE,
    )
    speech_window_ms: int = setting(
        "VOICEBOT_SPEECH_WINDOW_MS",
        2000,
        "Small sends continue this long after the caller's last voiced frame (the model's end-pointing wait).",
        rule=between(0, 10_000),
    )
    speech_window_bot_ms: int = setting(
        "VOICEBOT_SPEECH_WINDOW_BOT_MS",
        300,
        "The same while the bot is answering (the model has end-pointed): a new onset still flushes at once.",
        rule=between(0, 10_000),
    )
    restart_hold_ms: int = setting(
        "VOICEBOT_RESTART_HOLD_MS",
        15000,
        "Caller audio held while the model's connection is replaced or first set up, delivered in order after.",
        rule=between(
            1000,
            120_000,
            "{variable} must be between 1000 and 120000: the caller audio held while the model's connection is "
            "replaced (set it above the longest connection set-up you expect)",
        ),
    )
    mark_interval_ms: int = setting(
        "VOICEBOT_MARK_INTERVAL_MS", 500, "How often a progress mark follows bot audio.", rule=between(100, 10_000)
    )
    pace_lead_ms: int = setting(
        "VOICEBOT_PACE_LEAD_MS",
        0,
        "Pace bot audio to Twilio this far ahead of playback; 0 sends it as fast as the model speaks.",
        rule=between(
            0, 10_000, "{variable} must be between 0 (off: send as fast as the model speaks) and 10000", "0 to 10000"
        ),
    )
    hangup_grace_s: float = setting(
        "VOICEBOT_HANGUP_GRACE",
        0.6,
        "Seconds of quiet after the goodbye's last mark before hanging up.",
        rule=POSITIVE_SECONDS,
    )
    hangup_mark_timeout_s: float = setting(
        "VOICEBOT_HANGUP_MARK_TIMEOUT",
        3.0,
        "Cap, past the estimated end of playback, if Twilio's marks never return.",
        rule=POSITIVE_SECONDS,
    )


@dataclass(frozen=True)
class CallStartSettings:
    """Starting a call"""

    start_timeout_s: float = setting(
        "VOICEBOT_START_TIMEOUT", 10.0, "Seconds to wait for Twilio's `start` message.", rule=POSITIVE_SECONDS
    )
    agent_start_timeout_s: float = setting(
        "VOICEBOT_AGENT_START_TIMEOUT", 15.0, "Seconds to wait for the agent to connect.", rule=POSITIVE_SECONDS
    )
    prewarm: bool = setting(
        "VOICEBOT_PREWARM", True, "Connect the agent when the webhook arrives, not when the stream starts."
    )
    prewarm_ttl_s: float = setting(
        "VOICEBOT_PREWARM_TTL",
        30.0,
        "Give a pre-warmed agent up after this long if no stream comes.",
        rule=POSITIVE_SECONDS,
    )


@dataclass(frozen=True)
class LimitSettings:
    """Call limits

    Every call ends, however the caller, Twilio or the model behave.
    """

    max_calls: int = setting(
        "VOICEBOT_MAX_CALLS", 50, 'Concurrent calls; beyond it callers hear "all our lines are busy".', rule=at_least(1)
    )
    max_call_s: float = setting("VOICEBOT_MAX_CALL_SECONDS", 3600.0, "Longest call.", rule=POSITIVE_SECONDS)
    call_warning_s: float = setting(
        "VOICEBOT_CALL_WARNING_SECONDS",
        60.0,
        "The agent is told to wrap up this long before the longest call ends (at least 0, less than the longest call).",
    )
    wrap_up_s: float = setting(
        "VOICEBOT_WRAP_UP_SECONDS",
        20.0,
        "Then it has this long to say goodbye before the call is ended.",
        rule=POSITIVE_SECONDS,
    )
    caller_silence_timeout_s: float = setting(
        "VOICEBOT_CALLER_SILENCE_TIMEOUT",
        15.0,
        "No audio frames from Twilio for this long: the stream is gone, the call is ended.",
        rule=POSITIVE_SECONDS,
    )
    max_message_bytes: int = setting(
        "VOICEBOT_MAX_MESSAGE_BYTES",
        64 * 1024,
        "Larger Media Streams messages are refused.",
        rule=between(1024, 1024 * 1024, "{variable} must be between 1024 and 1048576 (Twilio's messages are < 1 KiB)"),
    )
    max_bad_messages: int = setting(
        "VOICEBOT_MAX_BAD_MESSAGES",
        500,
        "Past this many malformed messages a stream is closed (1008).",
        rule=at_least(1),
    )
    shutdown_grace_s: float = setting(
        "VOICEBOT_SHUTDOWN_GRACE",
        30.0,
        "On SIGTERM, seconds calls in progress get to finish before they are asked to say goodbye.",
        rule=POSITIVE_SECONDS,
    )


@dataclass(frozen=True)
class DeadAirSettings:
    """Dead air

    The agent *owes* the caller an answer once the caller's turn has ended, a tool's result has come back, or it
    was asked to greet or check in. While it owes one and nothing reaches the caller's ear, the bridge covers the
    silence, nudges the agent, replaces the model's connection (the conversation so far goes with it) and asks
    again, and only then apologises. A caller's own silence is never held against the agent: a caller who says
    nothing is checked on instead (docs/operations.md, "Dead air").
    """

    answer_timeout_s: float = setting(
        "VOICEBOT_ANSWER_TIMEOUT",
        3.5,
        "The agent owes an answer and nothing has been audible for this long: the hold sound plays and the agent "
        "is nudged; at twice this long its model connection is replaced and it is asked again.",
        rule=POSITIVE_SECONDS,
    )
    agent_silence_timeout_s: float = setting(
        "VOICEBOT_AGENT_SILENCE_TIMEOUT",
        15.0,
        "Still no answer this long after it was owed: apology, then hang-up (a transfer to `VOICEBOT_TRANSFER_TO`, "
        "if set). More than twice `VOICEBOT_ANSWER_TIMEOUT`.",
        rule=POSITIVE_SECONDS,
    )
    hold_sound: str = setting(
        "VOICEBOT_HOLD_SOUND",
        "",
        "What the caller hears while a tool runs or a silent model is being rescued: a WAV file (mono, 16-bit) or "
        "raw 8 kHz μ-law; `off` for silence.",
        rule=HOLD_SOUND,
        shown_default="a soft shipped tick (`telephony/bridge/assets/hold.ulaw`)",
    )
    hold_sound_after_s: float = setting(
        "VOICEBOT_HOLD_SOUND_AFTER",
        1.0,
        "A tool has run this long with nothing playing: the hold sound starts (it stops when the agent speaks).",
        rule=POSITIVE_SECONDS,
    )
    caller_idle_timeout_s: float = setting(
        "VOICEBOT_CALLER_IDLE_TIMEOUT",
        10.0,
        "The caller has said nothing for this long after the bot's last words were heard: the agent checks in; "
        "0 turns check-ins off.",
        rule=between(0, 3600, "{variable} must be between 0 (off) and 3600 seconds", "0 (off) to 3600 seconds"),
    )
    caller_idle_checks: int = setting(
        "VOICEBOT_CALLER_IDLE_CHECKS",
        2,
        "Check-ins a silent caller gets; after the last one the agent says goodbye and the call ends.",
        rule=between(1, 10, "{variable} must be between 1 and 10", "1 to 10"),
    )


@dataclass(frozen=True)
class TransferSettings:
    """Transfer

    The `transfer_call` tool is offered only when `VOICEBOT_TRANSFER_TO` or `VOICEBOT_TRANSFER_TARGETS` is set.
    Warm transfer needs the Twilio account, and its hold music, briefing agent and ring timeout are checked only
    then.
    """

    transfer_to: str | None = setting(
        "VOICEBOT_TRANSFER_TO", None, "Where the `transfer_call` tool sends the caller.", rule=DIAL_DESTINATION
    )
    transfer_targets: str | None = setting(
        "VOICEBOT_TRANSFER_TARGETS",
        None,
        "`sales=+1555…,desk=sip:desk@example.com`: teams the tool may name instead (never a number of its own).",
        rule=TRANSFER_TARGETS,
    )
    transfer_mode: str = setting(
        "VOICEBOT_TRANSFER_MODE",
        "cold",
        "`cold`: a `<Dial>`; `warm`: the caller hears hold music while the bot briefs the person first, who accepts "
        "(says yes or presses 1) or not.",
        rule=one_of(
            TRANSFER_MODES,
            "{variable}={value!r} is unknown: use cold (a <Dial>) or warm (brief a person first)",
        ),
    )
    transfer_hold_url: str = setting(
        "VOICEBOT_TRANSFER_HOLD_URL",
        TWILIO_HOLD_MUSIC,
        "Warm: what a caller on hold hears (an MP3/WAV, or TwiML with `<Play>`/`<Say>`/`<Pause>`/`<Redirect>`).",
        shown_default="Twilio's hold-music twimlet",
    )
    transfer_ring_timeout_s: float = setting(
        "VOICEBOT_TRANSFER_RING_TIMEOUT",
        25.0,
        "Warm: how long the person's phone rings (at least 10 s less than `VOICEBOT_CALL_TOKEN_TTL`).",
        rule=RING_TIMEOUT,
    )
    transfer_accept_timeout_s: float = setting(
        "VOICEBOT_TRANSFER_ACCEPT_TIMEOUT",
        60.0,
        "Warm: how long the person has to accept once they answer.",
        rule=POSITIVE_SECONDS,
    )
    briefing_agent: str = setting(
        "VOICEBOT_BRIEFING_AGENT",
        DEFAULT_BRIEFING_AGENT,
        "Warm: the factory of the agent that briefs the person (same model settings).",
    )

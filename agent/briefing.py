"""The briefing agent: what the person taking a warm transfer talks to before the caller is put through.

The bridge calls the person (``VOICEBOT_TRANSFER_MODE=warm``) and, once they answer, runs this agent on the
second call's media stream. It briefs them from the caller's call (``call.transfer``: the caller's number,
the bot's own summary and the transcript so far), answers their questions from it, and records their decision
with ``accept_transfer`` or ``decline_transfer`` (pressing 1 or 2 on the keypad does the same, handled by the
bridge). Replace it with ``VOICEBOT_BRIEFING_AGENT=module:function``: a factory taking a ``CallInfo`` whose
``transfer`` is set, as ``VOICEBOT_AGENT`` takes one for callers.
"""

from __future__ import annotations

from strands.bidi import BidiAgent

from telephony.call_info import CallInfo, TransferBrief
from telephony.config import Settings, load_settings

from .models import create_model
from .tools import accept_transfer, decline_transfer, time_limited

TRANSCRIPT_LINES = 40
"""Most recent transcript lines put in the prompt (older ones add little and slow the model down)."""
LINE_CHARS = 400

BRIEFING_PROMPT = """\
You are a phone assistant calling a colleague to hand over a caller who is waiting on hold.
You are heard, not read: short natural sentences, no lists, markdown, URLs or symbols.
First brief the colleague in two or three sentences: who is calling, what they want, and what has been
done so far. Then ask whether they will take the call; they may also press 1 to accept or 2 to decline.
Answer their questions from what you know below, and say so when you do not know.
When they agree, say one short sentence such as "Connecting you now", then call accept_transfer.
When they decline or cannot take it, say a short goodbye, then call decline_transfer with the reason.
Do not say anything after calling either tool.
"""
BRIEFING_GREETING = "The colleague has answered the phone. Brief them now."
"""What the bridge tells the briefing agent when the second call's stream starts (the bridge takes it from here,
so the prompt's instructions and the greeting that triggers them stay in one place)."""


def briefing_prompt(brief: TransferBrief) -> str:
    """The system prompt for one briefing: the instructions, then everything known about the caller."""
    lines = [BRIEFING_PROMPT, "", "About the caller:"]
    lines.append(f"- Calling from: {spoken_number(brief.caller_number) or 'an unknown number'}")
    if brief.reason:
        lines.append(f"- Why the assistant transferred them: {brief.reason}")
    if brief.summary:
        lines.append(f"- The assistant's note for you: {brief.summary}")
    if brief.transcript:
        lines.append("")
        lines.append("The call so far (most recent last):")
        for speaker, text in brief.transcript[-TRANSCRIPT_LINES:]:
            lines.append(f"{speaker}: {text[:LINE_CHARS]}")
    return "\n".join(lines) + "\n"


def spoken_number(number: str) -> str:
    """``+15551234567`` as digits a voice reads one by one; anything else (a SIP URI) as it is."""
    digits = number.removeprefix("+")
    return " ".join(digits) if digits.isdigit() else number


def briefing_text(brief: TransferBrief) -> str:
    """A one-breath spoken briefing without a language model (what the offline model says)."""
    who = f"a caller from {spoken_number(brief.caller_number)}" if brief.caller_number else "a caller"
    what = brief.summary or brief.reason or "they asked for a person"
    return (
        f"Hello, this is the phone assistant. I have {who} on hold. {what.rstrip('.')}. "
        "Will you take the call? Say yes or press 1 to accept, or say no or press 2 to decline."
    )


def create_briefing_agent(call: CallInfo, settings: Settings | None = None) -> BidiAgent:
    """The default briefing agent: the configured model, the briefing prompt, accept and decline tools."""
    settings = settings or load_settings()
    brief = call.transfer or TransferBrief(caller_number="", destination=call.to_number)
    tools = time_limited([accept_transfer, decline_transfer], settings.tool_timeout_s)
    if settings.model == "local":
        return _offline_briefing_agent(brief, settings, tools)
    return BidiAgent(model=create_model(settings), tools=tools, system_prompt=briefing_prompt(brief), name="briefing")


def _offline_briefing_agent(brief: TransferBrief, settings: Settings, tools: list[object]) -> BidiAgent:
    """The offline model cannot compose: it reads a templated briefing and knows yes, no and repeat."""
    from .offline import Intent, OfflineModel, Script, ToolCall
    from .offline.synthesizer import BOT_VOICE, Voice

    text = briefing_text(brief)
    script = Script(
        greeting=text,
        not_understood="Sorry, please say yes or no, or press 1 to accept or 2 to decline.",
        unknown_key="Press 1 to accept the call, or 2 to decline it.",
        intents=(
            Intent(
                name="accept",
                phrases=("yes", "yes put them through", "i will take it", "connect them"),
                replies=("Connecting you now.",),
                then=ToolCall("accept_transfer"),
            ),
            Intent(
                name="decline",
                phrases=("no", "not now", "i cannot take it", "decline"),
                replies=("All right, I will tell them. Goodbye.",),
                then=ToolCall("decline_transfer", {"reason": "the colleague declined"}),
            ),
            Intent(name="repeat", phrases=("say that again", "repeat that"), replies=(text,)),
        ),
    )
    voice = Voice(settings.voice, BOT_VOICE.words_per_minute, BOT_VOICE.pitch) if settings.voice else BOT_VOICE
    return BidiAgent(model=OfflineModel(script=script, voice=voice), tools=tools, name="briefing-offline")  # type: ignore[arg-type]

"""The simulated caller's voice: espeak-ng speaking 8 kHz μ-law, for the demo and scenario callers."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from telephony.codec import pcm16_to_ulaw

CALLER_RATE = 8000


class Voice:
    """The simulated caller's voice: espeak-ng (a different voice from the bot) at 8 kHz μ-law.

    ``name`` picks another espeak-ng voice (``en-gb+m3``, ``en-us+f4``…) for a scenario whose caller should
    not sound like every other; a name espeak-ng does not have fails here, before the call.
    """

    def __init__(self, name: str | None = None) -> None:
        from agent.offline.synthesizer import CALLER_VOICE, Synthesizer

        voice = replace(CALLER_VOICE, name=name) if name else CALLER_VOICE
        self._synthesizer = Synthesizer(voice, sample_rate=CALLER_RATE)

    async def say(self, text: str) -> bytes:
        pcm = await asyncio.to_thread(self._synthesizer.synthesize, text)
        return pcm16_to_ulaw(pcm)

"""The simulated caller's voice: espeak-ng speaking 8 kHz μ-law, for the demo and scenario callers."""

from __future__ import annotations

import asyncio

from telephony.codec import pcm16_to_ulaw

CALLER_RATE = 8000


class Voice:
    """The simulated caller's voice: espeak-ng (a different voice from the bot) at 8 kHz μ-law."""

    def __init__(self) -> None:
        from agent.offline.synthesizer import CALLER_VOICE, Synthesizer

        self._synthesizer = Synthesizer(CALLER_VOICE, sample_rate=CALLER_RATE)

    async def say(self, text: str) -> bytes:
        pcm = await asyncio.to_thread(self._synthesizer.synthesize, text)
        return pcm16_to_ulaw(pcm)

"""The tests' fake Twilio: the product's :class:`~telephony.simulation.caller.SimulatedCaller`, plus two helpers.

The simulated caller speaks the exact Media Streams protocol over a real WebSocket and plays what it
receives the way Twilio's player does (real time scaled by ``speed``, marks echoed once the audio before
them has played, ``clear`` empties the buffer and echoes every pending mark at once).
"""

from __future__ import annotations

import json
from pathlib import Path

from telephony.codec import FRAME_BYTES
from telephony.simulation.caller.simulated_caller import FRAME_SECONDS, ULAW_SILENCE, Heard, Received, SimulatedCaller

__all__ = ["FRAME_BYTES", "FRAME_SECONDS", "ULAW_SILENCE", "FakeTwilioCall", "Heard", "Received"]


class FakeTwilioCall(SimulatedCaller):
    @property
    def _t0(self) -> float:
        """When the socket opened (monotonic): tests compare server-side times against it."""
        return self.started

    async def replay(self, path: Path, realtime: bool = True) -> None:
        """Send a recorded sequence of Twilio messages (JSON lines), paced by media timestamps."""
        lines = [line for line in path.read_text().splitlines() if line.strip()]
        await self.replay_messages((json.loads(line) for line in lines), realtime)

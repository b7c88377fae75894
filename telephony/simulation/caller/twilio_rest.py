"""Twilio's REST side of a simulated call: hang-ups and transfers succeed and are written down.

The bridge only acts on a call over REST when it has a client (``create_app(call_control=...)``); without
one, a ``transfer_call`` fails ("this server has no Twilio credentials"). A scenario run gives the bridge
this client so that transfers are carried out as on a real line: the ``<Dial>`` the bridge asks for is
recorded (its destination is what ``expect.transfer`` checks) and the bridge then ends the stream.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Redirect:
    at: float
    call_sid: str
    twiml: str

    @property
    def dialled(self) -> str | None:
        """The number or SIP address of the ``<Dial>``, if the TwiML has one."""
        try:
            dial = ET.fromstring(self.twiml).find("Dial")
        except ET.ParseError:
            return None
        if dial is None:
            return None
        target = next(iter(dial), None)
        return (target.text or "").strip() if target is not None else (dial.text or "").strip()


@dataclass
class SimulatedCallControl:
    """A ``CallControlClient`` that always succeeds and keeps what it was asked to do."""

    hang_ups: list[tuple[float, str]] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)

    async def hang_up(self, call_sid: str) -> None:
        self.hang_ups.append((time.monotonic(), call_sid))

    async def redirect(self, call_sid: str, twiml: str) -> None:
        self.redirects.append(Redirect(time.monotonic(), call_sid, twiml))

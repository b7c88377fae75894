"""This process's calls, and what it must hear from the server's other workers about them.

The line table (``telephony.operations.lines``) counts every worker's calls once. What the table cannot
do, this class does with a word to the worker concerned (``telephony.operations.peers``):

- a stream that starts here for a call another worker reserved: that worker stops the agent it
  pre-warmed at once (the stream will not come to it), instead of holding a model connection for its TTL;
- Twilio's "call over" reaches any worker: the reservation is freed, and every worker drops what it
  holds for the call (a pre-warmed agent, a caller on hold in a warm transfer);
- answering-machine detection's result reaches any worker: the one carrying the call tells its agent.

With one process there are no peers and all of it happens here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from telephony.bridge.prewarm import Prewarmer
from telephony.bridge.session import CallSession
from telephony.bridge.transfer import WarmTransfers
from telephony.call_info import CallInfo
from telephony.operations.admission import Admission
from telephony.operations.peers import Peers
from telephony.twilio.calls_api import CALL_OVER

log = logging.getLogger(__name__)


class ServerCalls:
    """The sessions of this worker; see the module docstring."""

    def __init__(
        self,
        admission: Admission,
        prewarmer: Prewarmer | None,
        transfers: WarmTransfers | None,
        note_for_agent: Callable[[str], str],
    ) -> None:
        self.sessions: set[CallSession] = set()
        self.admission = admission
        self._prewarmer = prewarmer
        self._transfers = transfers
        self._note_for_agent = note_for_agent
        self._peers: Peers | None = None

    async def connect_peers(self, run_dir: Path, worker: int, workers: int) -> None:
        """Start hearing the other workers (``serve --workers N``)."""
        self._peers = Peers(
            run_dir,
            worker,
            workers,
            {
                "prewarm-moved": self._on_prewarm_moved,
                "call-over": self._on_call_over,
                "answered-by": self._on_answered_by,
            },
        )
        await self._peers.start()

    def close(self) -> None:
        if self._peers is not None:
            self._peers.close()

    def stream_started(self, key: str, call: CallInfo) -> None:
        """A stream's ``start`` arrived here: its reservation ends; a worker that pre-warmed it elsewhere lets go."""
        other = self.admission.started(key, call.call_sid)
        if other is not None and self._peers is not None:
            self._peers.tell(other, "prewarm-moved", call_sid=call.call_sid, to=str(self._peers.worker))

    def call_status(self, form: Mapping[str, Any]) -> None:
        """Twilio's call status callback (which any worker may get)."""
        status = str(form.get("CallStatus", ""))
        call_sid = str(form.get("CallSid", ""))
        if status not in CALL_OVER or not call_sid:
            return
        self.admission.call_over(call_sid)
        self._call_over_here(call_sid, status)
        if self._peers is not None:
            self._peers.broadcast("call-over", call_sid=call_sid, status=status)

    def answered_by(self, call_sid: str, answered_by: str) -> None:
        """Answering-machine detection's result: for the agent of the call, wherever it runs."""
        if not self._answered_by_here(call_sid, answered_by) and self._peers is not None:
            self._peers.broadcast("answered-by", call_sid=call_sid, answered_by=answered_by)

    def _on_prewarm_moved(self, message: Mapping[str, Any]) -> None:
        if self._prewarmer is not None:
            why = f"its stream started on worker {message.get('to', '?')}"
            self._prewarmer.discard(str(message["call_sid"]), why, counted=False)  # counted there, as a miss

    def _on_call_over(self, message: dict[str, Any]) -> None:
        self._call_over_here(str(message["call_sid"]), str(message["status"]))

    def _on_answered_by(self, message: dict[str, Any]) -> None:
        self._answered_by_here(str(message["call_sid"]), str(message["answered_by"]))

    def _call_over_here(self, call_sid: str, status: str) -> None:
        if self._prewarmer is not None:
            self._prewarmer.discard(call_sid, f"call {status}")
        if self._transfers is not None:
            self._transfers.on_status("call", {"CallSid": call_sid, "CallStatus": status}, None)

    def _answered_by_here(self, call_sid: str, answered_by: str) -> bool:
        found = False
        for session in self.sessions:
            if session.call is not None and session.call.call_sid == call_sid:
                session.tell_agent(self._note_for_agent(answered_by))
                found = True
        return found

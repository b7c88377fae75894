"""What the call console keeps while the server runs: access checks, live call feeds, the record folder.

Built once per app (``console_for``) when ``VOICEBOT_CONSOLE`` is on; its routes
(:mod:`telephony.console.routes`) find it on ``app.state.console``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from telephony.config import ConfigError, Settings
from telephony.console.auth import CALL_QUERY, STREAM_TOKEN_QUERY, ConsoleAccess
from telephony.console.events import ConsoleEvents
from telephony.console.listen import ListenTaps
from telephony.operations.admission import Admission
from telephony.operations.logs import CallLog
from telephony.operations.metrics import Metrics
from telephony.recording.call_library import CallLibrary

log = logging.getLogger(__name__)


class Console:
    """The console's state: who may use it, each call's live feed, the recorded calls, the server's lines."""

    def __init__(
        self,
        settings: Settings,
        admission: Admission,
        metrics: Metrics,
        stream_path: str,
    ) -> None:
        if not settings.console_token:
            raise ConfigError("VOICEBOT_CONSOLE is on but VOICEBOT_CONSOLE_TOKEN is not set: set it to a long secret")
        self.access = ConsoleAccess(settings.console_token)
        self.events = ConsoleEvents()
        self.listen = ListenTaps()
        """Each live call's audio tap, for the calls page's listen-in."""
        self.library = CallLibrary(settings.record_dir) if settings.record_dir else None
        self.admission = admission
        """The server's lines: a console call holds one like a phone call does."""
        self.metrics = metrics
        self.stream_path = stream_path
        """Where the page opens its media stream (this worker's own path)."""

    def admits_stream(self, query: Mapping[str, str]) -> bool:
        """A console stream with a valid upgrade token may skip the Twilio signature check (and only it)."""
        if STREAM_TOKEN_QUERY not in query:
            return False
        refusal = self.access.admits_stream(query)
        if refusal is not None:
            CallLog(log, query.get(CALL_QUERY, "?")[:40]).warning("console stream refused: upgrade token %s", refusal)
            return False
        return True


def console_for(settings: Settings, admission: Admission, metrics: Metrics, stream_path: str) -> Console | None:
    """The console when ``VOICEBOT_CONSOLE`` is on (reading recordings from the record folder, if set)."""
    if not settings.console:
        return None
    return Console(settings, admission, metrics, stream_path)

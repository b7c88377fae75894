"""Old module name of ``agent.nova.crt_loop`` (the shared CRT event-loop group), kept for importers."""

from __future__ import annotations

from .nova.crt_loop import SharedEventLoop, shared_event_loop

__all__ = ["SharedEventLoop", "shared_event_loop"]

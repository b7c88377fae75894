"""Old module name of ``agent.nova.marker`` (Nova's barge-in marker filter), kept for importers."""

from __future__ import annotations

from .nova.marker import INTERRUPTED_MARKER, is_marker_text, strip_marker, without_interrupted_marker

__all__ = ["INTERRUPTED_MARKER", "is_marker_text", "strip_marker", "without_interrupted_marker"]

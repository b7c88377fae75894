"""Old module name of ``agent.nova.errors`` (the operator's hints on Bedrock errors), kept for importers."""

from __future__ import annotations

from .nova.errors import HINT_PREFIX, NovaTarget, add_operator_hint, operator_hint

__all__ = ["HINT_PREFIX", "NovaTarget", "add_operator_hint", "operator_hint"]

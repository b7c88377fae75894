"""The Nova adapter's old module name: it is now the package ``agent.nova`` (the model is ``NovaSonicModel``).

Kept so that code importing ``agent.bedrock_endpoint.BedrockNovaSonicModel`` or ``BedrockEndpoint`` works.
"""

from __future__ import annotations

from .nova.endpoint import BedrockEndpoint
from .nova.model import SEND_DRAIN_S, START_FINISH_S, NovaSonicModel
from .nova.stream_repair import ANSWER_WAIT_S, CANCEL_TRIES, CANCEL_WAIT_S, WRITER_GRACE_S

BedrockNovaSonicModel = NovaSonicModel
"""The same class under its old name."""

__all__ = [
    "ANSWER_WAIT_S",
    "CANCEL_TRIES",
    "CANCEL_WAIT_S",
    "SEND_DRAIN_S",
    "START_FINISH_S",
    "WRITER_GRACE_S",
    "BedrockEndpoint",
    "BedrockNovaSonicModel",
]

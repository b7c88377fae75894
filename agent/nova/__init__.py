"""The Nova Sonic adapter: strands' ``BedrockNovaSonicModel`` as this project runs it, one concern per module.

- :mod:`.model`: :class:`NovaSonicModel`, the model the agents build (``VOICEBOT_MODEL=nova``);
- :mod:`.endpoint`: where to reach Bedrock Runtime (``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, ``AWS_ENDPOINT_URL``,
  ``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS``, ``AWS_CA_BUNDLE``);
- :mod:`.sdk_seam`: how those settings reach the SDK client strands builds;
- :mod:`.event_signer`, :mod:`.event_stream`: the SDK's signatures, messages and objects for each event, for less;
- :mod:`.crt_loop`: one CRT event-loop group for every connection (``VOICEBOT_CRT_THREADS``);
- :mod:`.stream_repair`: what makes stopping a stream always end;
- :mod:`.marker`: Nova's barge-in marker, kept out of transcripts;
- :mod:`.errors`: the operator's next step on a Bedrock failure.

The module names before this package (``agent.bedrock_endpoint``, ``agent.crt_loop``, ``agent.nova_errors``,
``agent.nova_marker``) still import, as re-exports of these.
"""

from __future__ import annotations

from .crt_loop import SharedEventLoop, shared_event_loop
from .endpoint import BedrockEndpoint
from .errors import NovaTarget, add_operator_hint, operator_hint
from .marker import INTERRUPTED_MARKER, is_marker_text, strip_marker, without_interrupted_marker
from .model import NovaSonicModel

__all__ = [
    "INTERRUPTED_MARKER",
    "BedrockEndpoint",
    "NovaSonicModel",
    "NovaTarget",
    "SharedEventLoop",
    "add_operator_hint",
    "is_marker_text",
    "operator_hint",
    "shared_event_loop",
    "strip_marker",
    "without_interrupted_marker",
]

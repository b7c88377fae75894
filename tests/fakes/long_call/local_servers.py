"""The long call on each provider's local server, through its real strands client, on a fast clock.

Each provider replaces connections its own way, and the server plays its part of it:

- ``nova``: the local Nova ends a stream at its 8-minute cap (``modelTimeoutException``; strands restarts and
  replays the history); strands replaces it at 7 minutes, the quiet switch-over from 6; seeded extra timeouts.
- ``openai``: the local OpenAI expires a session at its 60 minutes (``session_expired``, which the adapter turns
  into strands' timeout: strands reconnects and replays the history); strands replaces it at 45 minutes, the
  quiet switch-over from 44; seeded early expiries, and expiries on cue (:class:`RestartCues`).
- ``gemini``: the local Gemini sends ``goAway`` 50 s before its 10-minute limit (strands resumes the session by
  its handle); strands replaces it at 9 minutes; seeded early ``goAway`` s, ``goAway`` on cue, and seeded refused
  resumptions (strands starts a fresh session and replays the history).

Every new connection takes a seeded set-up time. :class:`LongCallServer` configures a started server (a test's
fixture, or :func:`started` for a benchmark) and builds the agents whose models talk to it; the models are told
where the server is directly, not through the environment, so concurrent calls each reach their own server.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from strands.bidi import BidiAgent

from agent.bedrock_endpoint import BedrockEndpoint, BedrockNovaSonicModel
from agent.gemini import GeminiLiveModel
from agent.openai import OpenAIRealtime
from agent.openai.endpoint import RealtimeEndpoint
from agent.tools import end_conversation
from telephony.simulation.local_gemini import Fault as GeminiFault
from telephony.simulation.local_gemini import LocalGemini
from telephony.simulation.local_gemini import Pacing as GeminiPacing
from telephony.simulation.local_gemini import TimeLimits as GeminiLimits
from telephony.simulation.local_nova import Fault as NovaFault
from telephony.simulation.local_nova import LocalNova, Pacing, SetupDelay
from telephony.simulation.local_nova import TimeLimits as NovaLimits
from telephony.simulation.local_openai import Fault as OpenAIFault
from telephony.simulation.local_openai import LocalOpenAI, SessionLimits
from tests.fakes.long_call.conversation import ToneConversation, lookup
from tests.fakes.long_call.cues import RestartCues

__all__ = ["LIMITS", "MODEL_IDS", "PROVIDERS", "LongCallServer", "Restarts", "started"]

PROVIDERS = ("nova", "openai", "gemini")
MODEL_IDS = {"nova": "amazon.nova-2-sonic-v1:0", "openai": "gpt-realtime", "gemini": "gemini-live-2.5-flash-preview"}
LIMITS = {"nova": (480.0, 420.0), "openai": (3600.0, 2700.0), "gemini": (600.0, 540.0)}
"""Per provider, in its own seconds: the service's connection limit, and when strands replaces a connection."""
OPENAI_CLIENT_TIMEOUT_S = 3000.0
"""strands' own limit on an OpenAI connection (its reactive timeout), in OpenAI seconds."""
NEVER_S = 1e9
GEMINI_KEY = "local-gemini-long-call"
"""Any key will do: the local Gemini checks none unless told to."""
PROMPT = "You answer the phone."


@dataclass(frozen=True)
class Restarts:
    """How a long call's model connections are replaced (real seconds, unless said)."""

    scale: float
    """Real seconds per provider second: the limits, strands' restarts and the quiet switch-over all run on it."""
    seed: int = 0
    setup_s: tuple[float, float] = (0.1, 5.0)
    """Each new connection's set-up time is drawn from here."""
    early: int = 3
    """Connections (every other one, from the first) that end sooner than their limit, at a time drawn from
    ``early_s``: Nova times out, OpenAI expires the session, Gemini sends ``goAway``."""
    early_s: tuple[float, float] = (1.5, 6.0)
    refused_resumes: int = 0
    """Gemini: resumptions by handle refused, as for an expired handle."""
    cues: tuple[str, ...] = ()
    """OpenAI and Gemini: moments at which the connection is ended (``cues.CUE_MOMENTS``)."""
    after_answer_s: float = 1.0
    after_answer_n: int = 1
    late_transcripts: bool = False
    """OpenAI: the caller's transcript comes after the answer's audio (the service does either)."""
    endpoint_s: float | None = None
    """OpenAI: the quiet after which the service ends a caller turn (the session's ``silence_duration_ms``;
    strands asks for 0.5 s, as long as the bridge waits): shorter, the model answers before the bridge has seen
    the turn end."""


class LongCallServer:
    """One call's local server set up for a long call, the agents that talk to it, and its cues (``async with``)."""

    def __init__(self, provider: str, server: Any, brain: ToneConversation, restarts: Restarts) -> None:
        if provider not in PROVIDERS:
            raise ValueError(f"no local server for {provider!r}: choose one of {', '.join(PROVIDERS)}")
        if restarts.cues and provider == "nova":
            raise ValueError("restarts on cue need a server that can end a connection now (openai, gemini)")
        self.provider = provider
        self.server = server
        self.brain = brain
        self.restarts = restarts
        self.cues: RestartCues | None = None
        self._watching: asyncio.Task[None] | None = None
        _configure(provider, server, brain, restarts)
        if restarts.cues:
            self.cues = RestartCues(
                server.sessions,
                _rate_of(provider),
                server.expire_session if provider == "openai" else server.go_away,
                brain,
                restarts.cues,
                after_answer_s=restarts.after_answer_s,
                after_answer_n=restarts.after_answer_n,
            )

    @property
    def setups(self) -> list[float]:
        """The set-up times drawn so far, one per connection."""
        return list(self.server.setup_delay.drawn)

    def agent(self, call: Any = None) -> BidiAgent:
        """An agent factory: the project's model for the provider, pointed at this server, on its fast clock."""
        model = _model(self.provider, self.server, self.restarts)
        return BidiAgent(model=model, tools=[end_conversation, lookup], system_prompt=PROMPT)

    async def __aenter__(self) -> Self:
        if self.cues is not None:
            self._watching = asyncio.create_task(self.cues.run(), name="long-call-cues")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._watching is not None:
            self._watching.cancel()
            await asyncio.gather(self._watching, return_exceptions=True)


@contextlib.asynccontextmanager
async def started(provider: str) -> AsyncIterator[Any]:
    """A started local server for ``provider`` (a benchmark's; tests take the fixtures)."""
    server: Any = {"nova": LocalNova, "openai": LocalOpenAI, "gemini": LocalGemini}[provider]()
    await server.start()
    try:
        yield server
    finally:
        await server.aclose()


def _configure(provider: str, server: Any, brain: ToneConversation, restarts: Restarts) -> None:
    """The provider's limit on the fast clock, the pace of its replies, slow set-ups and seeded early ends."""
    rng = random.Random(restarts.seed)
    limit_s = LIMITS[provider][0]
    server.brain = brain
    server.setup_delay = SetupDelay(between=restarts.setup_s, seed=restarts.seed)
    early = [rng.uniform(*restarts.early_s) for _ in range(restarts.early)]
    if provider == "nova":
        server.limits = NovaLimits(connection_limit_s=limit_s, time_scale=restarts.scale)
        server.pacing = Pacing(chunk_s=0.04, speedup=4.0)
        for after_s in early:  # stream k ends this long after it opens (a placeholder never fires)
            server.faults.push(NovaFault.exception("modelTimeoutException", after_s))
            server.faults.push(NovaFault.exception("modelTimeoutException", NEVER_S))
    elif provider == "openai":
        server.limits = SessionLimits(session_limit_s=limit_s * restarts.scale)
        server.pacing = Pacing(chunk_s=0.04, speedup=4.0)
        server.late_transcripts = restarts.late_transcripts
        for after_s in early:
            server.faults.push(OpenAIFault.expires(after_s), OpenAIFault.expires(NEVER_S))
    else:
        server.limits = GeminiLimits(connection_limit_s=limit_s, time_scale=restarts.scale)
        server.pacing = GeminiPacing(chunk_s=0.04, speedup=4.0)
        faults = [GeminiFault.go_away(after_s) for after_s in early]
        faults += [GeminiFault.refuse_resume() for _ in range(restarts.refused_resumes)]
        rng.shuffle(faults)  # a refusal waits for a connection that resumes; the others are taken in turn
        for fault in faults:
            server.faults.push(fault, *([] if fault.kind == "refuse_resume" else [GeminiFault.go_away(NEVER_S)]))


def _model(provider: str, server: Any, restarts: Restarts) -> Any:
    """The project's model for ``provider`` (with its quiet switch-over), replaced on the fast clock."""
    scale = restarts.scale
    connection: Any = {"restart_after_s": LIMITS[provider][1] * scale}
    if provider == "nova":
        endpoint = BedrockEndpoint(url=server.endpoint, ca_bundle=str(server.ca_file))
        return BedrockNovaSonicModel(
            endpoint=endpoint, model_id=MODEL_IDS["nova"], region="us-east-1", connection=connection
        )
    if provider == "openai":
        vad = {} if restarts.endpoint_s is None else {"silence_duration_ms": round(restarts.endpoint_s * 1000)}
        return OpenAIRealtime(
            endpoint=RealtimeEndpoint(url=server.realtime_url),
            api_key=server.api_key,
            model_id=MODEL_IDS["openai"],
            transcription_model_id="gpt-4o-transcribe",
            timeout_s=max(1, math.ceil(OPENAI_CLIENT_TIMEOUT_S * scale)),
            connection=connection,
            params={"audio": {"input": {"turn_detection": vad}}},
        )
    trust = ssl.create_default_context(cafile=str(server.ca_file))
    http_options = {"base_url": server.base_url, "async_client_args": {"ssl": trust}}
    client_args = {"api_key": GEMINI_KEY, "http_options": http_options}
    return GeminiLiveModel(model_id=MODEL_IDS["gemini"], client_args=client_args, connection=connection)


def _rate_of(provider: str) -> Any:
    if provider == "openai":
        return lambda record: 24000
    return lambda record: record.caller_sample_rate

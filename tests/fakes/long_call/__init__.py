"""Long calls without waiting for them: a conversation in tones, a model whose connections run out, a caller.

- :class:`ToneConversation` is the model's side of the conversation. Each caller utterance is a tone whose
  pitch names it; the conversation answers with what it heard (``tone 523 Hz 1.20 s``: pitch and voiced
  length) as the user transcript, so a test can tell whether every utterance reached the answering
  connection whole and once. It is a local Nova ``Brain`` (the real Nova client against the emulator)
  and the brain of :class:`LimitedModel`; one instance is shared by every connection of a call, as a
  real model's conversation is carried over in history.
- :class:`LimitedModel` is a ``BidiModel`` with short, seeded connection limits: it declares
  ``restart_after_s`` (strands replaces it proactively) and/or times out (``ConnectionTimeoutError``:
  strands replaces it reactively), and each new connection takes a seeded set-up time.
- :func:`talk` is the caller: it follows a :class:`Plan` (questions, a tool question, a long answer it
  talks over, goodbye) on a continuous line, as a phone streams silence between words.
- :func:`score` (``figures``) turns what the bridge saw into the figures of the issue: utterances heard whole once,
  audio lost, longest silence the caller heard, answers cut and resumed.
"""

from .caller_line import CallerLog, Line, talk, tone_ulaw, voiced
from .conversation import (
    ANSWER_HZ,
    GOODBYE_HZ,
    HEARD,
    LONG_ANSWER_HZ,
    LOOKUP_S,
    RATE,
    RESUME_HZ,
    SPEECH_RMS,
    TOOL_ANSWER_HZ,
    Plan,
    ToneConversation,
    Utterance,
    analyse,
    lookup,
    make_plan,
)
from .figures import Score, Tap, longest_wait, score
from .limited_model import LimitedModel, Seconds

__all__ = [
    "ANSWER_HZ",
    "GOODBYE_HZ",
    "HEARD",
    "LONG_ANSWER_HZ",
    "LOOKUP_S",
    "RATE",
    "RESUME_HZ",
    "SPEECH_RMS",
    "TOOL_ANSWER_HZ",
    "CallerLog",
    "LimitedModel",
    "Line",
    "Plan",
    "Score",
    "Seconds",
    "Tap",
    "ToneConversation",
    "Utterance",
    "analyse",
    "longest_wait",
    "lookup",
    "make_plan",
    "score",
    "talk",
    "tone_ulaw",
    "voiced",
]

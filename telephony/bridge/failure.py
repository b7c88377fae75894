"""How a model failure is written down: a short summary, and what the model says the operator should do.

The bridge knows no model. A model (or its adapter on the agent side) that knows what an error means
for the operator attaches that as a PEP 678 note (``error.add_note(...)``) to the exception it raises;
the session logs those notes beside the error. ``agent.nova.errors`` does this for Bedrock.
"""

from __future__ import annotations

__all__ = ["error_summary", "operator_notes"]


def error_summary(error: BaseException) -> str:
    """``Type: message``: SDK errors are dataclasses whose repr carries half a dozen empty fields."""
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def operator_notes(error: BaseException | None) -> list[str]:
    """Notes on ``error`` and on the errors it was raised from or during, each once, outermost first."""
    notes: list[str] = []
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        notes.extend(note for note in getattr(error, "__notes__", ()) if isinstance(note, str) and note not in notes)
        error = error.__cause__ or error.__context__
    return notes

"""A recording's caller side on its own: what a scenario replaying the call needs, and nothing of the bot's.

``voicebot test --from-recording`` copies it beside the scenario it writes, so the scenario does not point into
``recordings/`` (git-ignored, pruned, one developer's disk) and can be committed and run anywhere. The copy is a
recording in the same format (``events.jsonl``'s header, then the ``twilio_in`` records: the caller's audio,
keypresses and hang-up, with the times they arrived); the bot's audio, the model's events and the transcript stay
behind.
"""

from __future__ import annotations

from pathlib import Path

from telephony.recording.format import Recording, encode_line

__all__ = ["CALLER_SUFFIX", "caller_file_for", "write_caller_side"]

CALLER_SUFFIX = ".caller.jsonl"


def caller_file_for(scenario: Path) -> Path:
    """Where the caller side of ``scenario`` goes: ``that_call.yaml`` → ``that_call.caller.jsonl`` beside it."""
    return scenario.with_name(scenario.stem + CALLER_SUFFIX)


def write_caller_side(recording: Recording, path: Path) -> int:
    """Write ``recording``'s caller side to ``path``; returns how many caller messages it holds."""
    kept = [record for record in recording.records if record.get("kind") == "twilio_in"]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        out.write(encode_line(recording.header))
        for record in kept:
            out.write(encode_line(record))
    return len(kept)

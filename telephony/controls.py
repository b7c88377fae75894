"""What a call lets the agent's tools do: the one contract the agent side and the call bridge share.

The call session puts a ``CallControl`` in the agent's ``invocation_state`` under ``CALL_CONTROL_KEY``;
tools such as ``agent.tools.end_conversation`` find it through their ``ToolContext``. It lives here,
below both sides, so neither has to import the other. (Acting on a call through Twilio's REST API is
another thing: ``telephony.twilio.calls_api``.)
"""

from __future__ import annotations

from typing import Protocol

CALL_CONTROL_KEY = "voicebot_call"
"""Key of the ``CallControl`` in ``invocation_state``."""


class CallControl(Protocol):
    """What the call session offers to tools. Safe to call from any thread."""

    def end_call(self, reason: str) -> None:
        """Hang up once everything the bot has said so far has been heard."""

    def transfer_call(self, destination: str, reason: str, summary: str = "") -> None:
        """Move the call to ``destination`` once everything said so far has been heard.

        ``summary`` is the bot's note for the person taking over (a warm transfer briefs them with it)."""


class BriefingControl(Protocol):
    """What the second leg of a warm transfer offers the briefing agent's tools. Safe from any thread."""

    def accept_transfer(self) -> None:
        """The person takes the call: join them to the caller once what the bot said has been heard."""

    def decline_transfer(self, reason: str) -> None:
        """The person will not take the call: hang up on them and bring the caller back to the bot."""

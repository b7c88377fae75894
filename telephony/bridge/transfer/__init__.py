"""Warm transfer: brief a person on a second call, then hand the caller over, or take the caller back.

One :class:`WarmTransfer` per transfer, owned by the app's :class:`WarmTransfers` (the desk). Its steps:

1. **hold** (the caller's session, once the hand-off line has been heard): the caller's call is updated to
   a conference that has not started, so Twilio plays hold music to them. Their media stream stops and their
   session ends; its recording and console feed stay open (adopted here) until the transfer is settled.
2. **dial**: the person is called with TwiML that streams their call back to us, marked as a briefing leg.
   A briefing agent is pre-warmed while it rings.
3. **brief**: the briefing leg's session runs the briefing agent (:meth:`WarmTransfers.role_for`), which
   briefs the person and takes their answer (its tools, or keys 1 and 2).
4. **join** (accepted): the person's call is updated into the conference and starts it: hold music stops,
   caller and person talk, and the bot has left both calls.
5. **return** (no answer, busy, failed, declined, no decision in time, person hung up, a REST request that
   kept failing): the caller's call is updated back to a ``<Connect><Stream>``; the new session's agent gets
   the conversation so far (``CallInfo.history``) and is told what happened.

Twilio's status callbacks (the person's call, the conference) drive the states in between; every one of them
is signature-checked by the app before it gets here. A caller hanging up on hold ends the person's call.
Everything here runs on the event loop; REST requests and timers run as tasks the desk owns.

The package, by concept:

- :mod:`.state`: the states, the :class:`WarmTransfer` record, :class:`HandOff`, the :class:`Leg` protocol.
- :mod:`.desk`: :class:`WarmTransfers`, what the app and the sessions call.
- :mod:`.calls`: the Twilio requests on both calls (hold, dial, join, bring back, hang up).
- :mod:`.callbacks`: Twilio's status callbacks for the person's call, the conference and the caller's call.
- :mod:`.roles`: how a media stream takes part (ordinary, briefing, returning) and the briefing's controls.
- :mod:`.links`: the ``<Parameter>`` marks, TwiML and callback URLs that lead each call back to its transfer.
- :mod:`.ledger`: the books: transfers by id and call SID, state changes, settling, tasks, timers, metrics.
- :mod:`.history`: the conversation cut down to what a fresh session can resume from.
"""

from __future__ import annotations

from agent.briefing import BRIEFING_GREETING
from telephony.bridge.transfer.callbacks import PERSON_OUTCOMES
from telephony.bridge.transfer.calls import MAX_DIAL_TIME_LIMIT_S, RING_GRACE_S
from telephony.bridge.transfer.desk import WarmTransfers
from telephony.bridge.transfer.history import HISTORY_CHARS, HISTORY_MESSAGES, resumable_history
from telephony.bridge.transfer.ledger import LINGER_S
from telephony.bridge.transfer.links import BRIEFING_PARAMETER, DIAL_PARAMETER, LINKED_PARAMETER, RETURN_PARAMETER
from telephony.bridge.transfer.roles import (
    BriefingDesk,
    BriefingLegControl,
    BriefingRole,
    ReturningRole,
    StreamRole,
)
from telephony.bridge.transfer.state import (
    SETTLED,
    TRANSCRIPT_LINES,
    WAITING,
    CallerTimeline,
    HandOff,
    HandOffAction,
    Leg,
    State,
    WarmTransfer,
)

__all__ = [
    "BRIEFING_GREETING",
    "BRIEFING_PARAMETER",
    "DIAL_PARAMETER",
    "HISTORY_CHARS",
    "HISTORY_MESSAGES",
    "LINGER_S",
    "LINKED_PARAMETER",
    "MAX_DIAL_TIME_LIMIT_S",
    "PERSON_OUTCOMES",
    "RETURN_PARAMETER",
    "RING_GRACE_S",
    "SETTLED",
    "TRANSCRIPT_LINES",
    "WAITING",
    "BriefingDesk",
    "BriefingLegControl",
    "BriefingRole",
    "CallerTimeline",
    "HandOff",
    "HandOffAction",
    "Leg",
    "ReturningRole",
    "State",
    "StreamRole",
    "WarmTransfer",
    "WarmTransfers",
    "resumable_history",
]

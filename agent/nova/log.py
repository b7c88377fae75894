"""The Nova adapter's logger.

Every module of ``agent.nova`` logs under the name the adapter had when it was one module
(``agent.bedrock_endpoint``), so the log lines, and operators' filters on them, stay as they were. A line logged
while a call's task runs starts with ``call=<CallSid> |``, like the bridge's own (``telephony.call_info.
current_call_sid``), and carries ``call_sid`` for the JSON log format.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

from telephony.call_info import current_call_sid

__all__ = ["LOGGER_NAME", "log"]

LOGGER_NAME = "agent.bedrock_endpoint"


class _ByCall(logging.LoggerAdapter[logging.Logger]):
    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        call_sid = current_call_sid.get()
        if call_sid is None:
            return msg, kwargs
        kwargs["extra"] = {**kwargs.get("extra", {}), "call_sid": call_sid}
        return f"call={call_sid} | {msg}", kwargs


log = _ByCall(logging.getLogger(LOGGER_NAME))

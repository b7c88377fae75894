"""Logging: every line about a call starts with ``call=<CallSid>`` so one grep shows a whole call."""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any


class CallLog(logging.LoggerAdapter[logging.Logger]):
    """A logger that prefixes each message with the call SID."""

    def __init__(self, logger: logging.Logger, call_sid: str = "-") -> None:
        super().__init__(logger, {"call_sid": call_sid})

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        return f"call={self.extra['call_sid'] if self.extra else '-'} | {msg}", kwargs


def configure_logging(level: str = "INFO") -> None:
    """Plain, greppable lines on stderr."""
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
    )

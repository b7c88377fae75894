"""Logging: every line about a call starts with ``call=<CallSid>`` so one grep shows a whole call.

``VOICEBOT_LOG_FORMAT=json`` writes one JSON object per line instead (with ``call_sid`` as its own
field), for log pipelines.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import MutableMapping
from typing import Any


class CallLog(logging.LoggerAdapter[logging.Logger]):
    """A logger that prefixes each message with the call SID (and passes it on as ``call_sid``)."""

    def __init__(self, logger: logging.Logger, call_sid: str = "-") -> None:
        super().__init__(logger, {"call_sid": call_sid})

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        call_sid = self.extra["call_sid"] if self.extra else "-"
        kwargs["extra"] = {**kwargs.get("extra", {}), "call_sid": call_sid}
        return f"call={call_sid} | {msg}", kwargs


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, call_sid (when known), exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        call_sid = getattr(record, "call_sid", None)
        if call_sid and call_sid != "-":
            entry["call_sid"] = call_sid
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


SECRET_QUERY_NAMES = ("key", "console", "token")
"""Query parameters that carry credentials: the console's event-feed key and stream ticket (browsers'
``EventSource`` and ``WebSocket`` cannot send headers, so these ride in the URL)."""
_SECRET_QUERY = re.compile(rf"([?&](?:{'|'.join(SECRET_QUERY_NAMES)})=)[^&\s\"']+")
_REQUEST_LOGGERS = ("uvicorn.access", "uvicorn.error", "httpx")
"""uvicorn writes each request's and each WebSocket's full path, query included, to these; httpx each URL
it requests."""


def redact_query_secrets(text: str) -> str:
    """``/console/events?call=CA1&key=abc`` -> ``/console/events?call=CA1&key=[redacted]``."""
    return _SECRET_QUERY.sub(r"\1[redacted]", text)


class RedactQuerySecrets(logging.Filter):
    """Masks credential query values in a record's message and arguments before any handler sees them."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact_query_secrets(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_redacted(arg) for arg in record.args)
        return True


def _redacted(arg: object) -> object:
    """The argument, or its text masked if it holds a credential (httpx passes ``URL`` objects)."""
    if arg is None or isinstance(arg, int | float):
        return arg
    text = str(arg)
    masked = redact_query_secrets(text)
    return arg if masked == text else masked


def configure_logging(level: str = "INFO", fmt: str = "text") -> None:
    """Plain, greppable lines on stderr, or JSON lines; credentials in request paths masked."""
    handler = logging.StreamHandler()
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in _REQUEST_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(existing, RedactQuerySecrets) for existing in logger.filters):
            logger.addFilter(RedactQuerySecrets())

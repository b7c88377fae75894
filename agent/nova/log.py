"""The Nova adapter's logger.

Every module of ``agent.nova`` logs under the name the adapter had when it was one module
(``agent.bedrock_endpoint``), so the log lines, and operators' filters on them, stay as they were.
"""

from __future__ import annotations

import logging

__all__ = ["LOGGER_NAME", "log"]

LOGGER_NAME = "agent.bedrock_endpoint"
log = logging.getLogger(LOGGER_NAME)

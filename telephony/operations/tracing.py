"""OpenTelemetry: Strands already traces each agent session, connection, response and tool call.

We only switch the exporter on: with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set (the standard variable)
and the ``otel`` extra installed, spans go to your collector. Nothing is traced otherwise.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)


def setup_tracing() -> bool:
    """Export Strands' spans over OTLP when the operator asked for it; True if tracing is on."""
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not endpoint:
        return False
    try:
        from strands.telemetry import StrandsTelemetry

        StrandsTelemetry().setup_otlp_exporter()
    except ImportError as error:
        log.warning("OTEL_EXPORTER_OTLP_ENDPOINT is set but %s: install the extra with `uv sync --extra otel`", error)
        return False
    log.info("tracing: exporting spans to %s", endpoint)
    return True

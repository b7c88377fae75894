"""``GET /health`` (liveness, 503 while draining), ``/stats`` (bridge latency) and ``/metrics`` (Prometheus)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from telephony.operations.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from telephony.routes.services import Services

router = APIRouter()


@router.get("/health")
async def health(services: Services) -> JSONResponse:
    admission = services.admission
    status = "draining" if admission.draining else "ok"
    body = {"status": status, "calls": len(services.sessions), "server_calls": admission.in_progress}
    return JSONResponse(body, status_code=503 if admission.draining else 200)


@router.get("/stats")
async def stats(services: Services) -> JSONResponse:
    """Bridge latency percentiles over recent calls (what the load benchmark reads)."""
    body = {"calls": len(services.sessions), "tasks": len(asyncio.all_tasks()), "latency": services.latency.summary()}
    return JSONResponse(body)


@router.get("/metrics")
async def prometheus(services: Services) -> Response:
    return Response(content=services.metrics.render(), media_type=METRICS_CONTENT_TYPE)

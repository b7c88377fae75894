"""One router at a time, on a bare app with fake services: a route can be read and tested without ``create_app``."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from telephony.console import routes as console_routes
from telephony.console.state import Console
from telephony.operations.admission import Admission
from telephony.operations.latency import app_samples
from telephony.operations.metrics import Metrics
from telephony.routes import health, media_stream, status, voice
from telephony.routes.services import AppServices

from .conftest import TEST_SETTINGS
from .console.test_console import NOTHING_LISTED


class FakeCalls:
    """Stands in for ``ServerCalls``: keeps what the status callbacks told it."""

    def __init__(self) -> None:
        self.sessions: set[Any] = set()
        self.statuses: list[dict[str, Any]] = []
        self.answers: list[tuple[str, str]] = []

    def call_status(self, form: Mapping[str, Any]) -> None:
        self.statuses.append(dict(form))

    def answered_by(self, call_sid: str, answered_by: str) -> None:
        self.answers.append((call_sid, answered_by))


def never_called(call: Any) -> Any:  # pragma: no cover - no stream is opened here
    raise AssertionError("no agent should be built")


def fake_services(calls: FakeCalls | None = None, max_calls: int = 5) -> AppServices:
    return AppServices(
        settings=TEST_SETTINGS,
        agent_factory=never_called,
        metrics=Metrics(),
        admission=Admission(max_calls),
        latency=app_samples(),
        calls=calls or FakeCalls(),  # type: ignore[arg-type]
    )


def bare_app(router: Any, services: AppServices) -> FastAPI:
    app = FastAPI()
    app.include_router(router)
    app.state.services = services
    return app


async def send(app: FastAPI, method: str, path: str, **kwargs: Any) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        return await client.request(method, path, **kwargs)


async def test_the_status_router_alone_passes_call_status_and_amd_on() -> None:
    calls = FakeCalls()
    app = bare_app(status.router, fake_services(calls))
    amd = await send(app, "POST", "/status/amd", data={"CallSid": "CA1", "AnsweredBy": "machine_start"})
    over = await send(app, "POST", "/w/2/status/call", data={"CallSid": "CA1", "CallStatus": "completed"})
    unknown = await send(app, "POST", "/status/bogus", data={"CallSid": "CA1"})
    assert (amd.status_code, over.status_code, unknown.status_code) == (204, 204, 404)
    assert calls.answers == [("CA1", "machine_start")]
    assert calls.statuses == [{"CallSid": "CA1", "CallStatus": "completed"}]


async def test_the_voice_router_alone_turns_a_call_away_when_the_lines_are_full() -> None:
    services = fake_services(max_calls=0)
    response = await send(bare_app(voice.router, services), "POST", "/twiml", data={"CallSid": "CA1"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/xml")
    assert [child.tag for child in ET.fromstring(response.text)] == ["Say", "Hangup"]
    assert services.metrics.calls_refused.labels(reason="busy")._value.get() == 1


async def test_the_health_router_alone_says_draining_with_503() -> None:
    services = fake_services()
    services.admission.draining = True
    response = await send(bare_app(health.router, services), "GET", "/health")
    assert response.status_code == 503
    assert response.json() == {"status": "draining", "calls": 0, "server_calls": 0}


def test_the_media_stream_router_alone_refuses_a_stream_while_draining() -> None:
    services = fake_services()
    services.admission.draining = True  # (the line table is not touched: TestClient runs the app in another thread)
    with TestClient(bare_app(media_stream.router, services)) as client:
        with pytest.raises(WebSocketDisconnect) as refused:
            with client.websocket_connect("/w/1/media-stream"):
                pass  # pragma: no cover - the upgrade is refused before accept()
    assert refused.value.code == 1013 and not services.sessions
    assert services.metrics.calls_refused.labels(reason="stream_over_limit")._value.get() == 1


async def test_the_console_router_alone_lists_calls_for_the_operator_only() -> None:
    settings = replace(TEST_SETTINGS, console=True, console_token="operator-secret")
    app = FastAPI()
    app.include_router(console_routes.router)
    app.state.console = Console(settings, Admission(5), Metrics(), "/media-stream")
    anonymous = await send(app, "GET", "/console/api/calls")
    operator = await send(app, "GET", "/console/api/calls", headers={"Authorization": "Bearer operator-secret"})
    assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"].startswith("Basic")
    assert operator.status_code == 200 and operator.json() == NOTHING_LISTED

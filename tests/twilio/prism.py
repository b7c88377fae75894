"""Prism serving Twilio's own API description, and a recording proxy in front of it: the judge of every REST
request the bot sends in ``test_rest_against_prism.py``.

Prism (Stoplight's OpenAPI mock, pinned below, installed from npm by ``.ci/run``) validates each request against
the trimmed copy of Twilio's description and answers 422 with its reasons when one does not fit. The proxy
(:class:`JudgedTwilio`, the tests' ``VOICEBOT_TWILIO_API_URL``) writes down each request and Prism's verdict,
then answers from a Twilio double when one stands behind it (the fake Twilio of the warm-transfer tests keeps
calls, conferences and callbacks going, which Prism's fixed example answers cannot), else with Prism's answer.
:meth:`JudgedTwilio.problems` lists every 4xx with Prism's reasons, and every parameter the description does not
list for its operation, which Prism lets through unseen.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import aiohttp
import pytest
from aiohttp import web
from twilio.http import AsyncHttpClient

from telephony.simulation.local_twilio.api_description import DESCRIPTION_PATH, ApiDescription

from ..ports import free_port

PRISM_VERSION = "5.14.2"
"""The newest @stoplight/prism-cli that runs on Node 18-22 (5.15 and later need Node 24); .ci/run pins the same."""
PRISM_HOME = Path(os.environ.get("VOICEBOT_PRISM_HOME", Path.home() / ".cache" / "voicebot" / "prism"))
"""Where .ci/run installs Prism (``npm install --prefix``)."""
INSTALL = f"npm install --prefix {PRISM_HOME} --ignore-scripts @stoplight/prism-cli@{PRISM_VERSION}"
START_TIMEOUT_S = 30.0
TWILIO = "https://api.twilio.com"


def prism_command() -> list[str]:
    """How to run Prism here (``VOICEBOT_PRISM``, then .ci/run's install, then PATH), or skip saying why not."""
    if shutil.which("node") is None:
        pytest.skip(f"Node.js is not installed: these tests run Prism, from npm ({INSTALL}; Node 18 or later)")
    for candidate in (os.environ.get("VOICEBOT_PRISM"), PRISM_HOME / "node_modules" / ".bin" / "prism"):
        if candidate and Path(candidate).is_file():
            return [str(candidate)]
    on_path = shutil.which("prism")
    if on_path is None:
        pytest.skip(f"Prism is not installed: {INSTALL} (what .ci/run does), or set VOICEBOT_PRISM to its binary")
    return [on_path]


class PrismServer:
    """``prism mock`` on a loopback port, serving ``description``; ``with`` starts it and stops it.

    Its log goes to a file (a pipe nobody reads would fill and stall it), quoted if it fails to start."""

    def __init__(self, description: Path = DESCRIPTION_PATH) -> None:
        self.description = description
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None
        self._log = Path(tempfile.mkstemp(prefix="prism-", suffix=".log")[1])

    def __enter__(self) -> PrismServer:
        command = [*prism_command(), "mock", "--host", "127.0.0.1", "--port", str(self.port), str(self.description)]
        env = {**os.environ, "SCARF_ANALYTICS": "false", "NO_COLOR": "1"}
        with self._log.open("wb") as log:
            self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        self._wait_until_listening()
        return self

    def __exit__(self, *_: object) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._log.unlink(missing_ok=True)

    def log(self) -> str:
        return self._log.read_text(errors="replace") if self._log.exists() else ""

    def _wait_until_listening(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and self._process.poll() is None:
            if "Prism is listening" in self.log():
                return
            time.sleep(0.05)
        said = self.log()[-3000:]
        self.__exit__()
        raise RuntimeError(f"Prism did not start within {START_TIMEOUT_S:.0f} s (or exited); it said:\n{said}")


@dataclass(frozen=True)
class Exchange:
    """One request the bot sent, what Prism said of it, and what the bot was answered."""

    method: str
    path: str
    query: list[tuple[str, str]]
    form: list[tuple[str, str]]
    prism_status: int
    prism_body: str
    status: int

    def values(self, name: str) -> list[str]:
        """Every value of form field ``name``, in order (a form array sends the name once per value)."""
        return [value for key, value in self.form if key == name]

    def value(self, name: str) -> str | None:
        found = self.values(name)
        return found[0] if found else None

    def prism_reasons(self) -> list[str]:
        """Prism's validation messages (empty when it accepted the request)."""
        try:
            body = json.loads(self.prism_body)
        except ValueError:
            return [self.prism_body[:500]]
        reasons = [f"{'.'.join(v.get('location', []))}: {v.get('message')}" for v in body.get("validation", [])]
        return reasons or [str(body.get("detail") or body.get("title") or body)]


@dataclass
class JudgedTwilio:
    """A loopback Twilio REST base whose every request Prism judges before a double (or Prism) answers it."""

    prism_url: str
    behind: AsyncHttpClient | None = None
    """A Twilio double that answers what Prism accepts (its state moves on); None: Prism's own answers."""
    description: ApiDescription = field(default_factory=ApiDescription.read)
    exchanges: list[Exchange] = field(default_factory=list)
    url: str = ""
    _runner: web.AppRunner | None = None
    _session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> JudgedTwilio:
        self._session = aiohttp.ClientSession()
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    def in_front_of(self, double: AsyncHttpClient) -> str:
        """Let ``double`` answer what Prism accepts; returns the base URL to give the bot."""
        self.behind = double
        return self.url

    def problems(self) -> list[str]:
        """Every request Prism refused (with its reasons) and every parameter the description does not list."""
        found: list[str] = []
        for exchange in self.exchanges:
            where = f"{exchange.method} {exchange.path}"
            if exchange.prism_status >= 400:
                reasons = "; ".join(exchange.prism_reasons())
                found.append(f"{where}: Prism answered {exchange.prism_status}: {reasons}")
            query, form = (name for name, _ in exchange.query), (name for name, _ in exchange.form)
            found += self.description.unlisted(exchange.method, exchange.path, query, form)
        return found

    def assert_clean(self) -> None:
        """No request was refused, and each carried only parameters Twilio's description lists."""
        assert self.exchanges, "the bot sent no REST request at all"
        problems = self.problems()
        assert not problems, "requests that do not fit Twilio's API description:\n" + "\n".join(problems)

    @contextmanager
    def explains_failures(self) -> Iterator[None]:
        """A failure inside (a call that never went on, an exit code) names what Prism refused, when it refused
        something: that is the cause to read first."""
        try:
            yield
        except AssertionError as error:
            if problems := self.problems():
                raise AssertionError(f"{error}; Prism or the description refused:\n" + "\n".join(problems)) from error
            raise

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        form = parse_qsl(body.decode(), keep_blank_values=True) if body else []
        prism_status, prism_body = await self._ask_prism(request, body)
        status, text = prism_status, prism_body
        if self.behind is not None and prism_status < 400:
            answer = await self.behind.request(
                request.method,
                TWILIO + request.path_qs,
                data=_as_sdk_data(form) or None,
                auth=_basic_auth(request.headers.get("Authorization", "")),
            )
            status, text = answer.status_code, answer.text
        query = list(request.query.items())
        self.exchanges.append(Exchange(request.method, request.path, query, form, prism_status, prism_body, status))
        response = web.Response(status=status, text=text, content_type="application/json")
        response.force_close()  # no keep-alive: the app's tests count leftover tasks, this server's included
        return response

    async def _ask_prism(self, request: web.Request, body: bytes) -> tuple[int, str]:
        assert self._session is not None
        headers = {name: request.headers[name] for name in ("Authorization", "Content-Type") if name in request.headers}
        async with self._session.request(
            request.method, self.prism_url + request.path_qs, data=body or None, headers=headers
        ) as answer:
            return answer.status, await answer.text()


def _as_sdk_data(form: list[tuple[str, str]]) -> dict[str, Any]:
    """Form pairs as the SDK hands them to its transport: a repeated name becomes a list."""
    data: dict[str, Any] = {}
    for name, value in form:
        if name in data:
            data[name] = [*data[name], value] if isinstance(data[name], list) else [data[name], value]
        else:
            data[name] = value
    return data


def _basic_auth(header: str) -> tuple[str, str] | None:
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    user, _, password = base64.b64decode(encoded).decode().partition(":")
    return user, password

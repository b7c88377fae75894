"""A local stand-in for Twilio's REST API (2010-04-01): what the bot asks Twilio, answered on 127.0.0.1.

Why it exists: the bot acts on calls over REST (hanging up, warm and cold transfers), ``voicebot call`` places
calls and ``voicebot setup`` points a number at the bot. The fake transports in the tests replace the SDK's
HTTP layer; this server keeps that layer (aiohttp, form bodies, basic auth, JSON parsing, error mapping) and
a real socket, so a test can point ``VOICEBOT_TWILIO_API_URL`` at it and run the bot, a subprocess or the CLI
exactly as in production, with nothing leaving the machine. It checks what Twilio checks (the account's
credentials), refuses (400) a parameter that Twilio's API description does not list for the request
(``api_description.py``), answers as Twilio answers (call and number resources; 404 / 20404 for a call that is
over) and writes down every request, unknown ones included, so a test can assert nothing unexpected was asked.

In a test: ``async with LocalTwilioApi(account, token) as twilio:`` then ``twilio.url``, ``twilio.requests``,
``twilio.end(call_sid)``. As a process: ``python -m telephony.simulation.local_twilio --account AC...
--token ... [--port N] [--number +1...] [--log FILE]`` prints ``LOCAL_TWILIO_API=http://127.0.0.1:PORT`` once
listening, writes each request as a JSON line to ``--log`` and stops on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hmac
import json
import re
import secrets
import signal
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path
from typing import IO, Any

from aiohttp import web

from telephony.twilio.calls_api import CALL_OVER

from .api_description import twilio_api

API = "/2010-04-01"
ACCOUNT = rf"{API}/Accounts/(?P<account>AC[0-9a-fA-F]{{32}})"
ROUTES = {
    "calls": re.compile(rf"{ACCOUNT}/Calls\.json"),
    "call": re.compile(rf"{ACCOUNT}/Calls/(?P<sid>CA[0-9a-fA-F]{{32}})\.json"),
    "numbers": re.compile(rf"{ACCOUNT}/IncomingPhoneNumbers\.json"),
    "number": re.compile(rf"{ACCOUNT}/IncomingPhoneNumbers/(?P<sid>PN[0-9a-fA-F]{{32}})\.json"),
}
OVER = CALL_OVER
CALL_FIELDS: dict[str, Any] = {"api_version": "2010-04-01", "price_unit": "USD", "queue_time": "0"} | dict.fromkeys(
    ("parent_call_sid", "phone_number_sid", "price", "answered_by", "forwarded_from", "group_sid", "caller_name")
)
"""What every call resource says the same (here): the rest comes from the call."""
DEMO_VOICE_URL = "https://demo.twilio.com/welcome/voice/"
"""The voice URL Twilio gives a newly bought number."""


@dataclass(frozen=True)
class ApiRequest:
    """One request as the server received it, with the status it answered."""

    method: str
    path: str
    query: list[tuple[str, str]]
    form: list[tuple[str, str]]
    status: int
    at: float
    """Wall-clock time (``time.time()``) it arrived."""

    def value(self, name: str) -> str | None:
        """The first form field (or else query parameter) called ``name``."""
        return next((v for k, v in [*self.form, *self.query] if k == name), None)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LocalCall:
    sid: str
    to: str = ""
    from_: str = ""
    status: str = "in-progress"
    direction: str = "inbound"
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    ended: float | None = None
    instructions: list[tuple[str, str]] = field(default_factory=list)
    """What the call was told to do, in order: ("Twiml", ...) or ("Url", ...) pairs (create and updates)."""


@dataclass
class LocalNumber:
    sid: str
    phone_number: str
    fields: dict[str, str | None] = field(default_factory=dict)


def _date(at: float | None) -> str | None:
    return None if at is None else format_datetime(datetime.fromtimestamp(at, UTC))


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _error(status: int, code: int, message: str) -> web.Response:
    more_info = f"https://www.twilio.com/docs/errors/{code}"
    return web.json_response(
        {"code": code, "message": message, "more_info": more_info, "status": status}, status=status
    )


def _not_found(path: str) -> web.Response:
    return _error(404, 20404, f"The requested resource {path} was not found")


class LocalTwilioApi:
    """Twilio's REST API for one account, on ``127.0.0.1:port`` (0: any free port) while in ``async with``."""

    def __init__(
        self, account_sid: str, auth_token: str, *, port: int = 0, numbers: Iterable[str] = (), log: Path | None = None
    ) -> None:
        self.account_sid = account_sid
        self.auth_token = auth_token
        self.port = port
        self.log_path = log
        self.requests: list[ApiRequest] = []
        self.calls: dict[str, LocalCall] = {}
        self.numbers: dict[str, LocalNumber] = {}
        for phone_number in numbers:
            self.add_number(phone_number)
        self._runner: web.AppRunner | None = None
        self._log: IO[str] | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: the value for VOICEBOT_TWILIO_API_URL."""
        if self._runner is None:
            raise RuntimeError("LocalTwilioApi is not running: use it in `async with`")
        return f"http://127.0.0.1:{self.port}"

    def add_number(self, phone_number: str, **fields: str | None) -> LocalNumber:
        """An IncomingPhoneNumber of the account, as bought (voice URL: Twilio's demo) unless ``fields`` say."""
        number = LocalNumber("PN" + secrets.token_hex(16), phone_number)
        number.fields = {
            "voice_url": DEMO_VOICE_URL,
            "voice_method": "POST",
            "status_callback": "",
            "status_callback_method": "POST",
            "voice_application_sid": None,
            "trunk_sid": None,
        } | fields
        self.numbers[number.sid] = number
        return number

    def end(self, call_sid: str, status: str = "completed") -> None:
        """The call is over (the caller hung up): from now on it answers 404 / 20404 to updates."""
        call = self.calls.setdefault(call_sid, LocalCall(call_sid))
        call.status, call.ended, call.updated = status, time.time(), time.time()

    async def __aenter__(self) -> LocalTwilioApi:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        self.port = self._runner.addresses[0][1]
        if self.log_path is not None:
            self._log = self.log_path.open("a", encoding="utf-8")
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._log is not None:
            self._log.close()
            self._log = None

    async def _handle(self, request: web.Request) -> web.Response:
        form = list((await request.post()).items()) if request.method == "POST" else []
        fields = [(name, value) for name, value in form if isinstance(value, str)]
        response = self._answer(request, dict(fields))
        record = ApiRequest(
            request.method, request.path, list(request.query.items()), fields, response.status, time.time()
        )
        self.requests.append(record)
        if self._log is not None:
            self._log.write(json.dumps(record.as_json()) + "\n")
            self._log.flush()
        return response

    def _authorized(self, request: web.Request) -> bool:
        scheme, _, encoded = request.headers.get("Authorization", "").partition(" ")
        try:
            login, _, password = base64.b64decode(encoded, validate=True).partition(b":")
        except ValueError:  # not base64
            return False
        valid = hmac.compare_digest(login, self.account_sid.encode()) & hmac.compare_digest(
            password, self.auth_token.encode()
        )
        return scheme.lower() == "basic" and valid

    def _answer(self, request: web.Request, form: dict[str, str]) -> web.Response:
        if not self._authorized(request):
            response = _error(401, 20003, "Authenticate")
            response.headers["WWW-Authenticate"] = 'Basic realm="Twilio API"'
            return response
        path, method = request.path, request.method
        described = twilio_api().operation(method, path)
        if described is not None and (unlisted := described.unlisted(request.query.keys(), form)):
            return _error(400, 20001, "; ".join(unlisted) + " (in Twilio's API description, trimmed copy)")
        for name, pattern in ROUTES.items():
            if (match := pattern.fullmatch(path)) and match["account"] == self.account_sid:
                handler = getattr(self, f"_{method.lower()}_{name}", None)
                if handler is None:
                    return _error(405, 20004, "Method not allowed")
                return handler(match, form, request)
        return _not_found(path)

    # Calls -----------------------------------------------------------------------------------------------------

    def _call_json(self, call: LocalCall) -> dict[str, Any]:
        uri = f"{API}/Accounts/{self.account_sid}/Calls/{call.sid}"
        duration = None if call.ended is None else str(round(call.ended - call.created))
        return CALL_FIELDS | {
            "sid": call.sid,
            "account_sid": self.account_sid,
            "status": call.status,
            "direction": call.direction,
            **{"to": call.to, "to_formatted": call.to, "from": call.from_, "from_formatted": call.from_},
            **{"date_created": _date(call.created), "start_time": _date(call.created)},
            **{"date_updated": _date(call.updated), "end_time": _date(call.ended), "duration": duration},
            "uri": f"{uri}.json",
            "subresource_uris": {name: f"{uri}/{name.title()}.json" for name in ("notifications", "recordings")},
        }

    def _post_calls(self, _: re.Match[str], form: dict[str, str], request: web.Request) -> web.Response:
        if not form.get("To"):
            return _error(400, 21201, "No 'To' number is specified")
        if not form.get("From"):
            return _error(400, 21213, "No 'From' number is specified")
        how = [(name, form[name]) for name in ("Url", "Twiml") if form.get(name)]
        if not how and not form.get("ApplicationSid"):
            return _error(400, 21205, "Url parameter is required.")
        call = LocalCall("CA" + secrets.token_hex(16), form["To"], form["From"], "queued", "outbound-api")
        call.instructions.extend(how[:1])  # with both, Url wins
        self.calls[call.sid] = call
        return web.json_response(self._call_json(call), status=201)

    def _get_call(self, match: re.Match[str], _: dict[str, str], request: web.Request) -> web.Response:
        call = self.calls.get(match["sid"])
        return _not_found(request.path) if call is None else web.json_response(self._call_json(call))

    def _post_call(self, match: re.Match[str], form: dict[str, str], request: web.Request) -> web.Response:
        # A call Twilio placed to us (inbound) was never created here: it is taken to be in progress.
        call = self.calls.setdefault(match["sid"], LocalCall(match["sid"]))
        if call.status in OVER:
            return _not_found(request.path)
        status = form.get("Status")
        if status is not None and status not in ("completed", "canceled"):
            return _error(400, 20001, f"Status {status!r} is not valid: use completed or canceled")
        call.updated = time.time()
        if status == "completed" or (status == "canceled" and call.status in ("queued", "ringing")):
            self.end(call.sid, status)
        elif how := [(name, form[name]) for name in ("Url", "Twiml") if form.get(name)]:
            call.instructions.append(how[0])
        return web.json_response(self._call_json(call))

    # Phone numbers ---------------------------------------------------------------------------------------------

    def _number_json(self, number: LocalNumber) -> dict[str, Any]:
        return {
            "sid": number.sid,
            "account_sid": self.account_sid,
            "phone_number": number.phone_number,
            "friendly_name": number.phone_number,
            "api_version": "2010-04-01",
            "uri": f"{API}/Accounts/{self.account_sid}/IncomingPhoneNumbers/{number.sid}.json",
            **number.fields,
        }

    def _get_numbers(self, _: re.Match[str], __: dict[str, str], request: web.Request) -> web.Response:
        wanted = request.query.get("PhoneNumber", "")
        found = [self._number_json(n) for n in self.numbers.values() if n.phone_number.startswith(wanted)]
        uri = f"{API}/Accounts/{self.account_sid}/IncomingPhoneNumbers.json"
        page = {"page": 0, "page_size": 50, "start": 0, "end": max(0, len(found) - 1), "uri": uri}
        links = {"first_page_uri": uri, "next_page_uri": None, "previous_page_uri": None}
        return web.json_response({"incoming_phone_numbers": found, **page, **links})

    def _get_number(self, match: re.Match[str], _: dict[str, str], request: web.Request) -> web.Response:
        number = self.numbers.get(match["sid"])
        return _not_found(request.path) if number is None else web.json_response(self._number_json(number))

    def _post_number(self, match: re.Match[str], form: dict[str, str], request: web.Request) -> web.Response:
        number = self.numbers.get(match["sid"])
        if number is None:
            return _not_found(request.path)
        for name, value in form.items():
            if (key := _snake(name)) in number.fields:
                number.fields[key] = (value or None) if key.endswith("_sid") else value
        return web.json_response(self._number_json(number))


async def _serve(args: argparse.Namespace) -> None:
    async with LocalTwilioApi(args.account, args.token, port=args.port, numbers=args.number, log=args.log) as api:
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        print(f"LOCAL_TWILIO_API={api.url}", flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A local Twilio REST API (2010-04-01) on 127.0.0.1, for tests.")
    parser.add_argument("--account", required=True, help="the account SID it accepts (AC...)")
    parser.add_argument("--token", required=True, help="the auth token it accepts")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default 0: any free port)")
    parser.add_argument("--number", action="append", default=[], help="an IncomingPhoneNumber of the account")
    parser.add_argument("--log", type=Path, help="append every request to this file, one JSON object a line")
    asyncio.run(_serve(parser.parse_args(argv)))


if __name__ == "__main__":
    main()

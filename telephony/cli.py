"""The ``voicebot`` command."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import secrets
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from twilio.base.exceptions import TwilioRestException
from twilio.rest import Client

from telephony.app import STREAM_PATH
from telephony.bridge.agent_factory import AgentFactoryError, load_agent_factory
from telephony.config import DEFAULT_AGENT, MAX_WORKERS, MODEL_PROVIDERS, ConfigError, Settings, load_settings, validate
from telephony.operations.logs import configure_logging
from telephony.recording.recorder import record_dir_problem
from telephony.simulation.replay import command as replay
from telephony.simulation.scenarios import command as test_command
from telephony.twilio.dialer import parse_params, place_call
from telephony.twilio.numbers import configure_number
from telephony.twilio.parameters import DIAL as DIAL_PARAMETER
from telephony.twilio.rest import rest_client
from telephony.twilio.security import PARAMETER_NAME, CallTokens, public_url_for, token_secret, websocket_url

log = logging.getLogger("voicebot")

OFFLINE_AGENT = "agent.offline:create_agent"
WS_MAX_MESSAGE_BYTES = 1024 * 1024
"""uvicorn's frame cap; the protocol layer enforces its own, smaller cap per message."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="voicebot", description="A Twilio phone line for a Strands BidiAgent.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the webhook and media-stream server")
    serve.add_argument("--host", help="interface to listen on (env VOICEBOT_HOST, default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on (env VOICEBOT_PORT, default 8080)")
    serve.add_argument(
        "--allow-unsigned",
        action="store_true",
        help="for local testing only: listen on a non-loopback address without TWILIO_AUTH_TOKEN "
        "(requests from Twilio are then NOT verified)",
    )
    serve.add_argument(
        "--agent",
        metavar="MODULE:FUNCTION",
        help="agent factory taking a telephony.CallInfo and returning a BidiAgent "
        "(env VOICEBOT_AGENT, default agent.factory:create_agent)",
    )
    serve.add_argument(
        "--model",
        choices=MODEL_PROVIDERS,
        help="the default agent's model: nova, openai, gemini, or local (the offline model; env VOICEBOT_MODEL)",
    )
    serve.add_argument(
        "--record",
        dest="record_dir",
        metavar="DIR",
        help="record every call in a folder under DIR: events, WAVs, transcript (env VOICEBOT_RECORD_DIR)",
    )
    serve.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help=f"worker processes, one per core you want used (env VOICEBOT_WORKERS; default 1; 0: one per core, at "
        f"most {MAX_WORKERS}); with more than one, serve runs nginx in front to keep each call on one worker "
        "(VOICEBOT_PROXY=external: your own proxy, deploy/nginx/voicebot.conf)",
    )
    serve.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # started by the supervisor
    serve.add_argument("--listen-fd", type=int, help=argparse.SUPPRESS)  # a worker's shared socket, from its supervisor
    call = commands.add_parser("call", help="dial a number and connect the answered call to the bot")
    call.add_argument("to", help="number to call, E.164 (+15551234567), or a client:/sip: address")
    call.add_argument("--from", dest="from_", metavar="NUMBER", help="caller ID (env TWILIO_PHONE_NUMBER)")
    call.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="passed to the agent in CallInfo.parameters (repeatable), e.g. --param purpose='confirm the booking'",
    )
    call.add_argument(
        "--machine-detection",
        action="store_true",
        help="ask Twilio to detect answering machines; the agent is told the result",
    )
    commands.add_parser("setup", help="point TWILIO_PHONE_NUMBER's voice webhook at PUBLIC_URL/twiml")
    demo = commands.add_parser("demo", help="a simulated phone call to the offline bot: no accounts, no network")
    demo.add_argument("--interactive", action="store_true", help="type what the caller says")
    demo.add_argument(
        "--out", metavar="DIR", default="recordings", help="where the call's recording goes (default ./recordings)"
    )
    replay.add_arguments(
        commands.add_parser("replay", help="play a recorded call (or a WAV) against the bot, as Twilio would")
    )
    test_command.add_arguments(
        commands.add_parser("test", help="run scenario files against an agent as phone calls; exit 1 on failure")
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if getattr(args, "worker", False):
        args.workers = None  # a worker: its supervisor set VOICEBOT_WORKERS and VOICEBOT_WORKER_INDEX
    try:
        settings = load_settings()
        settings = apply_overrides(settings, args)
    except ConfigError as error:
        print(f"voicebot: configuration error: {error}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level, settings.log_format)
    if args.command == "serve":
        return serve(
            settings, allow_unsigned=args.allow_unsigned, argv=argv, worker=args.worker, listen_fd=args.listen_fd
        )
    if args.command == "demo":
        return run_demo_command(settings, args)
    if args.command == "replay":
        return replay.run_command(settings, args)
    if args.command == "test":
        return test_command.run_command(settings, args)
    try:
        if args.command == "call":
            return asyncio.run(dial(settings, args.to, args.from_, parse_params(args.param), args.machine_detection))
        if args.command == "setup":
            return asyncio.run(setup(settings))
    except (ConfigError, ValueError, LookupError, TwilioRestException) as error:
        print(f"voicebot {args.command}: {error}", file=sys.stderr)
        return 1
    return 2


def require_account(settings: Settings, command: str) -> tuple[str, str, str]:
    """The account SID, auth token and public URL a REST command needs, or a ConfigError naming what is missing."""
    missing = [
        name
        for name, value in (
            ("TWILIO_ACCOUNT_SID", settings.twilio_account_sid),
            ("TWILIO_AUTH_TOKEN", settings.twilio_auth_token),
            ("PUBLIC_URL", settings.public_url),
        )
        if not value
    ]
    if missing:
        raise ConfigError(
            f"{', '.join(missing)} not set: `voicebot {command}` needs your Twilio account and public URL"
        )
    assert settings.twilio_account_sid and settings.twilio_auth_token and settings.public_url
    return settings.twilio_account_sid, settings.twilio_auth_token, settings.public_url


def twilio_client(settings: Settings, account_sid: str, auth_token: str) -> Client:
    """``rest_client`` for ``call`` and ``setup``: Twilio's API, or VOICEBOT_TWILIO_API_URL's (local mocks, tests)."""
    if not settings.twilio_api_url:
        return rest_client(account_sid, auth_token)
    log.warning("VOICEBOT_TWILIO_API_URL is set: Twilio REST requests go to %s, not Twilio", settings.twilio_api_url)
    return rest_client(account_sid, auth_token, api_url=settings.twilio_api_url)


async def dial(
    settings: Settings, to: str, from_: str | None, parameters: dict[str, str], machine_detection: bool
) -> int:
    """Place an outbound call whose answered audio streams to this server (which must be running)."""
    account_sid, auth_token, public_url = require_account(settings, "call")
    from_ = from_ or settings.twilio_phone_number
    if not from_:
        raise ConfigError("no caller ID: pass --from +1... or set TWILIO_PHONE_NUMBER")
    # The Call SID is unknown until Twilio creates the call, so the token is bound to a dial id instead.
    dial_id = secrets.token_urlsafe(12)
    tokens = CallTokens(token_secret(auth_token, settings.token_secret), settings.call_token_ttl_s)
    stream_parameters = {
        **parameters,
        "From": from_,
        "To": to,
        DIAL_PARAMETER: dial_id,
        PARAMETER_NAME: tokens.mint(f"dial:{dial_id}"),
    }
    client = twilio_client(settings, account_sid, auth_token)
    try:
        call_sid = await place_call(
            client,
            to=to,
            from_=from_,
            stream_url=websocket_url(public_url, STREAM_PATH),
            parameters=stream_parameters,
            status_callback=public_url_for(public_url, "/status/call"),
            machine_detection=machine_detection,
            amd_callback=public_url_for(public_url, "/status/amd") if machine_detection else None,
        )
    finally:
        await client.http_client.close()
    print(f"calling {to} from {from_}: {call_sid}")
    return 0


async def setup(settings: Settings) -> int:
    """Point the configured number's voice webhook and status callback at this server."""
    account_sid, auth_token, public_url = require_account(settings, "setup")
    if not settings.twilio_phone_number:
        raise ConfigError("TWILIO_PHONE_NUMBER is not set: set it to the Twilio number callers dial (+1...)")
    client = twilio_client(settings, account_sid, auth_token)
    try:
        changes = await configure_number(
            client,
            settings.twilio_phone_number,
            voice_url=public_url_for(public_url, "/twiml"),
            status_callback=public_url_for(public_url, "/status/call"),
        )
    finally:
        await client.http_client.close()
    for change in changes:
        print(change)
    if not changes:
        print(f"{settings.twilio_phone_number} already points at {public_url_for(public_url, '/twiml')}")
    return 0


def apply_overrides(settings: Settings, args: argparse.Namespace) -> Settings:
    """Command-line flags win over the environment."""
    names = ("host", "port", "agent", "model", "record_dir", "workers")
    overrides = {name: value for name in names if (value := getattr(args, name, None)) is not None}
    settings = replace(settings, **overrides)
    validate(settings)
    return settings


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def unsigned_refusal(settings: Settings, allow_unsigned: bool) -> str | None:
    """Why the server must not start: unverified requests on a reachable address (else None)."""
    if settings.verifies_twilio or is_loopback(settings.host):
        return None
    if allow_unsigned:
        log.warning(
            "!!! --allow-unsigned: listening on %s WITHOUT verifying Twilio signatures. Anyone who can "
            "reach this address can open calls on your model account. Use this for local testing only. !!!",
            settings.host,
        )
        return None
    return (
        f"TWILIO_AUTH_TOKEN is not set: requests cannot be verified, so the server will not listen on "
        f"{settings.host}. Set TWILIO_AUTH_TOKEN (and PUBLIC_URL), listen on 127.0.0.1, or pass "
        "--allow-unsigned for local testing."
    )


def agent_description(settings: Settings) -> str:
    """The model calls will talk to, as the start-up log names it (the flags included)."""
    from agent.models import describe_model

    if settings.agent == DEFAULT_AGENT:
        return describe_model(settings)
    if settings.agent == OFFLINE_AGENT:
        return describe_model(replace(settings, model="local"))
    return f"the model {settings.agent} builds (VOICEBOT_MODEL and --model apply to the default agent only)"


def run_demo_command(settings: Settings, args: argparse.Namespace) -> int:
    from telephony.simulation.demo import run_demo

    logging.getLogger().setLevel(logging.WARNING)  # the demo prints the conversation itself
    return asyncio.run(run_demo(settings, Path(args.out), interactive=args.interactive))


def serve(
    settings: Settings,
    allow_unsigned: bool = False,
    argv: Sequence[str] = ("serve",),
    worker: bool = False,
    listen_fd: int | None = None,
) -> int:
    """Run the server: in this process, as one worker of several, or as the supervisor of ``worker_count``."""
    import uvicorn

    from telephony.app import create_app
    from telephony.operations.heap import settle_heap
    from telephony.operations.shutdown import DrainingServer
    from telephony.operations.tracing import setup_tracing
    from telephony.operations.ws_reading import QueuedReadsProtocol

    refusal = unsigned_refusal(settings, allow_unsigned)
    if refusal:
        print(f"voicebot: {refusal}", file=sys.stderr)
        return 2

    try:
        factory = load_agent_factory(settings.agent)
    except AgentFactoryError as error:
        print(f"voicebot: {error}", file=sys.stderr)
        return 2
    if settings.record_dir and (problem := record_dir_problem(settings.record_dir)):
        print(f"voicebot: {problem}", file=sys.stderr)
        return 2
    if not settings.public_url:
        log.warning("PUBLIC_URL is not set: stream URLs will use the Host header of each webhook request")
    if not settings.can_use_rest:
        log.warning("TWILIO_ACCOUNT_SID/TWILIO_AUTH_TOKEN are not set: the bot hangs up by closing the media stream")
    if not worker and settings.worker_count > 1:
        from telephony.operations.workers import proxy_problem, run_workers

        if problem := proxy_problem(settings, settings.worker_count):
            print(f"voicebot: {problem}", file=sys.stderr)
            return 2
        return run_workers(settings, argv, settings.worker_count)
    setup_tracing()
    app = create_app(settings, agent_factory=factory)
    sockets = None
    if worker:
        from telephony.operations.workers import listening_sockets, worker_host, worker_port

        sockets = listening_sockets(settings, listen_fd)
        own = f"{worker_host(settings)}:{worker_port(settings, settings.worker_index)}"
        shared = " and on the port the workers share" if listen_fd is not None else ""
        log.info("worker %d: listening on %s%s", settings.worker_index, own, shared)
    else:
        log.info(
            "listening on http://%s:%d (agent %s): one process, up to %d calls (VOICEBOT_MAX_CALLS), streams on "
            "%s; to use more cores, --workers N (docs/operations.md: Scaling out)",
            settings.host,
            settings.port,
            settings.agent,
            settings.max_calls,
            STREAM_PATH,
        )
    log.info("calls will use: %s", agent_description(settings))
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        ws=QueuedReadsProtocol,  # uvicorn's own, without a pause and a resume of the socket per frame
        ws_max_size=WS_MAX_MESSAGE_BYTES,
        ws_per_message_deflate=False,  # Twilio sends small base64 frames: compression costs CPU, saves nothing
        proxy_headers=True,
        log_level=settings.log_level.lower(),
        log_config=None,  # keep our logging set-up (and its JSON format, when chosen)
    )
    settle_heap()  # everything built so far lives as long as the process: out of the collector's way
    DrainingServer(config, app, settings.shutdown_grace_s, settings.wrap_up_s).run(sockets=sockets)
    return 0


if __name__ == "__main__":
    sys.exit(main())

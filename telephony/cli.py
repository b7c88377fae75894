"""The ``voicebot`` command."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import sys
from collections.abc import Sequence
from dataclasses import replace

from .agent_factory import AgentFactoryError, load_agent_factory
from .config import ConfigError, Settings, load_settings, validate
from .logs import configure_logging

log = logging.getLogger("voicebot")

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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
        settings = apply_overrides(settings, args)
    except ConfigError as error:
        print(f"voicebot: configuration error: {error}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level)
    if args.command == "serve":
        return serve(settings, allow_unsigned=args.allow_unsigned)
    return 2


def apply_overrides(settings: Settings, args: argparse.Namespace) -> Settings:
    """Command-line flags win over the environment."""
    overrides = {name: value for name in ("host", "port", "agent") if (value := getattr(args, name, None)) is not None}
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


def serve(settings: Settings, allow_unsigned: bool = False) -> int:
    import uvicorn

    from .app import create_app

    refusal = unsigned_refusal(settings, allow_unsigned)
    if refusal:
        print(f"voicebot: {refusal}", file=sys.stderr)
        return 2

    try:
        factory = load_agent_factory(settings.agent)
    except AgentFactoryError as error:
        print(f"voicebot: {error}", file=sys.stderr)
        return 2
    if not settings.public_url:
        log.warning("PUBLIC_URL is not set: stream URLs will use the Host header of each webhook request")
    if not settings.can_use_rest:
        log.warning("TWILIO_ACCOUNT_SID/TWILIO_AUTH_TOKEN are not set: the bot hangs up by closing the media stream")
    app = create_app(settings, agent_factory=factory)
    log.info("listening on http://%s:%d (agent %s)", settings.host, settings.port, settings.agent)
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        ws_max_size=WS_MAX_MESSAGE_BYTES,
        proxy_headers=True,
        log_level=settings.log_level.lower(),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

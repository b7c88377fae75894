"""``docs/configuration.md``, written from the settings' declarations so the page cannot drift from the code.

Regenerate it with ``uv run python -m telephony.config --markdown > docs/configuration.md``.
"""

from __future__ import annotations

import inspect
from typing import Any

from .declare import Spec, specs_of
from .settings import GROUPS

REGENERATE = "uv run python -m telephony.config --markdown > docs/configuration.md"

EXTERNAL: dict[str, str] = {
    "AWS_ACCESS_KEY_ID": "AWS credentials for Nova Sonic (or an AWS profile / SSO, as usual for boto3).",
    "AWS_SECRET_ACCESS_KEY": "The secret half of those credentials.",
    "AWS_SESSION_TOKEN": "A session token, with temporary credentials.",
    "AWS_PROFILE": "The AWS profile to take credentials from.",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "Where Nova Sonic is reached instead of "
    "`https://bedrock-runtime.<AWS_REGION>.amazonaws.com` (a proxy, a private endpoint or the local emulator).",
    "AWS_ENDPOINT_URL": "The same for every AWS service; used when the Bedrock-specific one is not set.",
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "`true`: ignore both and use the region's public endpoint.",
    "AWS_CA_BUNDLE": "A PEM file of the CAs to trust for that endpoint, instead of the system store.",
    "SSL_CERT_FILE": "The CAs the OpenAI and Gemini clients trust.",
    "OPENAI_API_KEY": "The key for `VOICEBOT_MODEL=openai` (install the extra: `uv sync --extra openai`).",
    "OPENAI_BASE_URL": "Where OpenAI Realtime is reached: the REST base `http(s)://host/v1`, whose WebSocket "
    "`ws(s)://host/v1/realtime` the bot uses (default `https://api.openai.com/v1`; a proxy or the local server).",
    "GOOGLE_API_KEY": "The key for `VOICEBOT_MODEL=gemini` (install the extra: `uv sync --extra gemini`).",
    "GEMINI_API_KEY": "The same, under the name Google's client also reads.",
    "GOOGLE_GEMINI_BASE_URL": "Where Gemini Live is reached instead of `https://generativelanguage.googleapis.com/` "
    "(google-genai dials it as `wss://`; a proxy or the local Gemini).",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "Export Strands' traces over OTLP (install the extra: `uv sync --extra otel`).",
    "PROMETHEUS_MULTIPROC_DIR": "With several workers: where their metrics are shared (a temporary folder if unset).",
}
"""Variables read by the libraries the bot uses, not by ``Settings``: documented, and allowed in ``.env.example``."""

INTRODUCTION = """\
Everything comes from the environment or a `.env` file in the working directory (start from `.env.example`),
and is checked at start-up: a bad value stops the command with a message naming the variable and how to fix it.
Secrets are never logged. A command-line flag, where there is one, wins over the environment.

Agent factories do not receive these settings whole: they get `telephony.config.AgentSettings`, the model,
voice, prompt, greeting, tool timeout and transfer settings, and never the Twilio credentials, the call-token
key or the console token.
"""


def configuration_markdown() -> str:
    """The whole reference page: every setting, group by group, then the variables libraries read."""
    parts = [
        "# Configuration\n",
        f"<!-- Generated from the declarations in telephony/config/: do not edit. Regenerate: {REGENERATE} -->\n",
        INTRODUCTION,
        "\n".join(f"- [{_title(group)}](#{_anchor(_title(group))})" for group in GROUPS) + "\n",
    ]
    parts.extend(_group_section(group) for group in GROUPS)
    parts.append(_external_section())
    return "\n".join(parts)


def _group_section(group: type) -> str:
    lines = [f"## {_title(group)}\n"]
    if about := _about(group):
        lines.append(about + "\n")
    lines.append("| variable | default | what it does | accepted |")
    lines.append("|---|---|---|---|")
    lines.extend(_row(spec) for spec in specs_of(group))
    return "\n".join(lines) + "\n"


def _row(spec: Spec) -> str:
    variable = f"`{spec.env}`" + (f" (`{spec.flag}`)" if spec.flag else "")
    about = spec.about + (" A secret: never logged." if spec.secret else "")
    accepted = spec.rule.allowed if spec.rule is not None else ("on or off" if spec.kind is bool else "")
    cells = (variable, _default(spec), about, accepted)
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _default(spec: Spec) -> str:
    if spec.shown_default is not None:
        return spec.shown_default
    value: Any = spec.default
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{value}`"


def _external_section() -> str:
    lines = ["## Read by the libraries the bot uses\n", "| variable | what it does |", "|---|---|"]
    lines.extend(f"| `{name}` | {about} |" for name, about in EXTERNAL.items())
    return "\n".join(lines) + "\n"


def _title(group: type) -> str:
    return (inspect.getdoc(group) or group.__name__).splitlines()[0].strip()


def _about(group: type) -> str:
    return " ".join(line.strip() for line in (inspect.getdoc(group) or "").splitlines()[1:] if line.strip())


def _anchor(title: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces as hyphens."""
    kept = "".join(char for char in title.lower() if char.isalnum() or char in " -")
    return kept.replace(" ", "-")

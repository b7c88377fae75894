"""What an operator should do about a Nova Sonic / Bedrock failure, in one sentence.

The bridge is model-agnostic: when a call's agent fails it logs the error and any PEP 678 notes on
it. This module knows Bedrock: the model adapter (``agent.nova.model``) attaches the sentence
from :func:`operator_hint` as a note (``error.add_note``) to the very exception strands raises, so its
type, message and strands' own handling (timeouts restart the connection) are unchanged.

Which errors mean what, as Bedrock Runtime and the SDK report them (measured against the local Nova:
errors before the stream surface from ``receive()``, typed; the SDK does not retry):

- no credentials: strands' ``start()`` raises ``ValueError("no AWS credentials found ...")``;
- bad or expired keys: ``UnrecognizedClientException`` / ``InvalidSignatureException`` /
  ``ExpiredTokenException`` (HTTP 403);
- model access not granted, or IAM does not allow the call: ``AccessDeniedException`` (403);
- wrong model id, or a region that does not offer it: ``ValidationException`` about the model
  identifier, or ``ResourceNotFoundException``; a region that does not exist fails DNS;
- too many streams or requests for the account's quota: ``ThrottlingException`` (429) or
  ``ServiceQuotaExceededException``;
- the endpoint unreachable or its certificate not trusted: the CRT client's error (``AWS_IO_...``),
  re-raised by the SDK as a ``SmithyError`` whose message starts with that name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["NovaTarget", "add_operator_hint", "operator_hint"]

HINT_PREFIX = "what to do: "
_CRT_NAME = re.compile(r"AWS_(?:IO|ERROR|HTTP)_[A-Z0-9_]+")


@dataclass(frozen=True)
class NovaTarget:
    """What the failing model was trying to reach (for the sentence)."""

    model_id: str
    region: str
    endpoint: str


def operator_hint(error: BaseException, target: NovaTarget) -> str | None:
    """The operator's next step for ``error``, or None when it says nothing about configuration."""
    name = type(error).__name__
    text = str(error)
    where = f"{target.model_id} in {target.region}"
    if isinstance(error, ValueError) and "no AWS credentials" in text:
        return (
            "Nova Sonic found no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) "
            "in the server's environment or .env, or run it with an IAM role."
        )
    if name in ("UnrecognizedClientException", "InvalidSignatureException", "ExpiredTokenException"):
        return (
            "Bedrock rejected the AWS credentials: check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, refresh "
            "AWS_SESSION_TOKEN if it expired, and check the server's clock."
        )
    if name == "AccessDeniedException":
        return (
            f"Bedrock denied access to {where}: grant model access to Amazon Nova Sonic in the Bedrock console "
            f"(Model access, region {target.region}) and allow bedrock:InvokeModelWithBidirectionalStream on it "
            "in the IAM policy of these credentials."
        )
    if name == "ResourceNotFoundException" or (name == "ValidationException" and "model" in text.lower()):
        return (
            f"Bedrock does not offer {where}: check VOICEBOT_MODEL_ID and AWS_REGION (Nova Sonic runs in a few "
            "regions only; the model id must be one Bedrock lists there)."
        )
    if name in ("ThrottlingException", "ServiceQuotaExceededException"):
        return (
            f"Bedrock is throttling {where} for these credentials: too many concurrent streams or requests. "
            "Lower VOICEBOT_MAX_CALLS to fit the account's quota, or request a higher Nova Sonic quota in "
            "Service Quotas."
        )
    if name in ("ServiceUnavailableException", "InternalServerException", "ModelStreamErrorException"):
        return (
            f"Bedrock failed on its side ({name}); usually transient. If it persists, check AWS Health for "
            f"Bedrock in {target.region}."
        )
    crt_name = _crt_error_name(error)
    if crt_name is not None:
        return _connection_hint(crt_name, target)
    return None


def _crt_error_name(error: BaseException) -> str | None:
    """The CRT's error name (``AWS_IO_...``) if the CRT client failed: the SDK re-raises it as a SmithyError."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        name = getattr(current, "name", None)
        if type(current).__name__ == "AwsCrtError" and isinstance(name, str):
            return name
        match = _CRT_NAME.match(str(current))
        if match:
            return match.group(0)
        current = current.__cause__ or current.__context__
    return None


def _connection_hint(crt_name: str, target: NovaTarget) -> str:
    if "TLS" in crt_name or "CERT" in crt_name or "PKI" in crt_name:
        return (
            f"the TLS handshake with {target.endpoint} failed ({crt_name}): if it uses a private CA (a proxy, "
            "the local Nova), point AWS_CA_BUNDLE at that CA's PEM file."
        )
    return (
        f"cannot reach Bedrock at {target.endpoint} ({crt_name or 'connection error'}): check AWS_REGION, "
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME / AWS_ENDPOINT_URL, and that this host can reach it (proxy, VPC endpoint, "
        "firewall)."
    )


def add_operator_hint(error: BaseException, target: NovaTarget) -> None:
    """Attach :func:`operator_hint` to ``error`` as a PEP 678 note, once."""
    hint = operator_hint(error, target)
    if hint is None:
        return
    notes = getattr(error, "__notes__", [])
    if not any(note.startswith(HINT_PREFIX) for note in notes):
        error.add_note(HINT_PREFIX + hint)

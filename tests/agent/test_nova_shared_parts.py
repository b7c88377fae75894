"""What every Nova connection of a process shares: the CRT client's parts, the signer scheme, strands' logging."""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from typing import Any

import pytest
import strands.bidi.models.bedrock as strands_bedrock
from aws_sdk_bedrock_runtime.config import SigV4AuthScheme
from smithy_core.shapes import ShapeID
from smithy_http.aio.crt import AWSCRTHTTPClient

from agent.nova.crt_client import CLIENT_ATTRIBUTES, shared_tls_context
from agent.nova.crt_loop import keep_thread_state, settle_io_thread, shared_event_loop
from agent.nova.endpoint import BedrockEndpoint, default_url
from agent.nova.event_signer import CachingSigV4Scheme
from agent.nova.model import NovaSonicModel
from agent.nova.sdk_seam import ModelStart, StartClient, install, starting
from telephony.simulation.local_nova.certs import make_certificates

SIGV4 = ShapeID("aws.auth#sigv4")


def test_the_sdk_client_sets_up_what_the_shared_build_sets() -> None:
    """The shared build copies the SDK client's constructor: if the SDK adds a field, this fails."""
    assert set(vars(AWSCRTHTTPClient())) == CLIENT_ATTRIBUTES


async def _start_config(start: ModelStart | None) -> Any:
    """Build the transport and resolve the config the way strands' start() does, through its module's names."""
    install()

    async def resolve() -> Any:
        return await strands_bedrock.AsyncBedrockRuntimeConfig.resolve(
            endpoint_uri=default_url("eu-north-1"),
            region="eu-north-1",
            auth_schemes={SIGV4: SigV4AuthScheme(service="bedrock")},
            transport=strands_bedrock._BedrockAWSCRTHTTPClient(),
        )

    if start is None:
        return await resolve()
    with starting(start):
        return await resolve()


async def test_connections_share_the_event_loop_and_tls_context_and_sign_with_the_cache() -> None:
    start = ModelStart(BedrockEndpoint(url="https://nova.test"), 1, set())
    first, second = await _start_config(start), await _start_config(start)
    assert type(first.transport) is StartClient and first.transport is not second.transport
    assert set(vars(first.transport)) >= CLIENT_ATTRIBUTES
    assert first.transport._eventloop is second.transport._eventloop is shared_event_loop(1)
    assert first.transport._tls_ctx is second.transport._tls_ctx is shared_tls_context(None)
    scheme = first.auth_schemes[SIGV4]
    assert type(scheme) is CachingSigV4Scheme and scheme._service == "bedrock"
    assert first.transport._on_io_thread is settle_io_thread  # the shared loop's threads live for the process


async def test_a_ca_bundle_gets_its_own_shared_context(tmp_path: Any) -> None:
    bundle = make_certificates(tmp_path).ca_file
    start = ModelStart(BedrockEndpoint(ca_bundle=str(bundle)), 0, set())
    config = await _start_config(start)
    assert config.transport._tls_ctx is shared_tls_context(str(bundle))
    assert config.transport._tls_ctx is not shared_tls_context(None)
    assert config.transport._eventloop is not shared_event_loop(1)  # crt_threads 0: a loop of its own
    assert config.transport._on_io_thread is None  # whose thread ends with the connection: it keeps no state


async def test_outside_the_seam_the_sdk_scheme_and_client_are_strands_own() -> None:
    config = await _start_config(None)
    assert type(config.auth_schemes[SIGV4]) is SigV4AuthScheme
    assert config.transport._tls_ctx is not shared_tls_context(None)


def test_strands_event_log_costs_nothing_with_debug_off(monkeypatch: Any) -> None:
    decoded: list[object] = []
    monkeypatch.setattr(strands_bedrock.base64, "b64decode", lambda data: decoded.append(data) or b"")
    model = NovaSonicModel.__new__(NovaSonicModel)
    event = {"audioOutput": {"content": "AAAA"}}
    logging.getLogger("strands.bidi.models.bedrock").setLevel(logging.INFO)
    model._log_event_type(event)
    assert decoded == []
    logging.getLogger("strands.bidi.models.bedrock").setLevel(logging.DEBUG)
    try:
        model._log_event_type(event)
    finally:
        logging.getLogger("strands.bidi.models.bedrock").setLevel(logging.NOTSET)
    assert decoded == ["AAAA"]


def test_a_thread_keeps_its_state_with_one_hold_however_often_it_asks() -> None:
    """One ``PyGILState_Ensure`` per thread, never more: each one more would be a hold nothing releases."""
    ensure = ctypes.pythonapi.PyGILState_Ensure
    calls: list[int] = []

    def counting() -> int:
        calls.append(threading.get_ident())
        return int(ensure())

    def on_thread() -> None:
        for _ in range(3):
            keep_thread_state()

    try:
        ctypes.pythonapi.PyGILState_Ensure = counting
        thread = threading.Thread(target=on_thread)
        thread.start()
        thread.join()
    finally:
        ctypes.pythonapi.PyGILState_Ensure = ensure
    assert len(calls) == 1 and calls[0] == thread.ident


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="Linux scheduling policy")
def test_a_settled_io_thread_never_preempts_the_serving_thread() -> None:
    """The I/O thread becomes a batch thread (its wakeups do not preempt); the serving thread keeps its policy."""
    policies: list[int] = []

    def on_thread() -> None:
        settle_io_thread()
        settle_io_thread()
        policies.append(os.sched_getscheduler(0))

    thread = threading.Thread(target=on_thread)
    thread.start()
    thread.join()
    assert policies == [os.SCHED_BATCH]
    assert os.sched_getscheduler(0) == os.SCHED_OTHER

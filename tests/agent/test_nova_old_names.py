"""The Nova adapter moved into ``agent.nova``; every name importers used before still imports, as the same object."""

from __future__ import annotations

import logging

from strands.bidi.models import BedrockNovaSonicModel as StrandsNovaSonicModel

import agent.nova
from agent.nova import crt_loop, endpoint, errors, marker, model, stream_repair


def test_the_old_adapter_module_still_gives_the_model_and_its_endpoint() -> None:
    from agent.bedrock_endpoint import (
        ANSWER_WAIT_S,
        CANCEL_TRIES,
        CANCEL_WAIT_S,
        SEND_DRAIN_S,
        START_FINISH_S,
        WRITER_GRACE_S,
        BedrockEndpoint,
        BedrockNovaSonicModel,
    )

    assert BedrockNovaSonicModel is model.NovaSonicModel is agent.nova.NovaSonicModel
    assert issubclass(BedrockNovaSonicModel, StrandsNovaSonicModel)
    assert BedrockEndpoint is endpoint.BedrockEndpoint
    assert (SEND_DRAIN_S, START_FINISH_S) == (model.SEND_DRAIN_S, model.START_FINISH_S)
    assert (ANSWER_WAIT_S, CANCEL_TRIES, CANCEL_WAIT_S, WRITER_GRACE_S) == (
        stream_repair.ANSWER_WAIT_S,
        stream_repair.CANCEL_TRIES,
        stream_repair.CANCEL_WAIT_S,
        stream_repair.WRITER_GRACE_S,
    )


def test_the_old_crt_loop_module_shares_the_same_loops() -> None:
    from agent.crt_loop import SharedEventLoop, shared_event_loop

    assert SharedEventLoop is crt_loop.SharedEventLoop and shared_event_loop is crt_loop.shared_event_loop


def test_the_old_errors_and_marker_modules_still_give_their_names() -> None:
    from agent.nova_errors import HINT_PREFIX, NovaTarget, add_operator_hint, operator_hint
    from agent.nova_marker import INTERRUPTED_MARKER, is_marker_text, strip_marker, without_interrupted_marker

    assert (NovaTarget, add_operator_hint, operator_hint) == (
        errors.NovaTarget,
        errors.add_operator_hint,
        errors.operator_hint,
    )
    assert HINT_PREFIX == errors.HINT_PREFIX
    assert INTERRUPTED_MARKER == marker.INTERRUPTED_MARKER
    assert (is_marker_text, strip_marker, without_interrupted_marker) == (
        marker.is_marker_text,
        marker.strip_marker,
        marker.without_interrupted_marker,
    )


def test_the_model_is_built_under_its_own_name_and_logs_under_the_old_one() -> None:
    nova = model.NovaSonicModel(model_id="amazon.nova-2-5-sonic", region="eu-north-1", crt_threads=0)
    assert type(nova).__name__ == "NovaSonicModel"
    assert model.log.logger is logging.getLogger("agent.bedrock_endpoint")

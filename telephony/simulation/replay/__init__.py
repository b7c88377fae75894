"""Replaying recorded calls (``voicebot replay``): the caller side played against a server, or offline against
the recorded agent side; the report of what the caller heard; scenarios written from recordings.

``telephony.simulation.replay`` was one module; its names are re-exported here so old imports keep working.
"""

from .command import add_arguments, print_result, run_command
from .comparison import OutboundComparison, compare_outbound, outbound_shape
from .offline import offline_settings, play_against_replay, recorded_greeting, replay_agent_factory, sent_before_hang_up
from .replaying import ReplayOptions, ReplayResult, load_source, make_caller, replay, twilio_form, twiml_server

__all__ = [
    "OutboundComparison",
    "ReplayOptions",
    "ReplayResult",
    "add_arguments",
    "compare_outbound",
    "load_source",
    "make_caller",
    "offline_settings",
    "outbound_shape",
    "play_against_replay",
    "print_result",
    "recorded_greeting",
    "replay",
    "replay_agent_factory",
    "run_command",
    "sent_before_hang_up",
    "twilio_form",
    "twiml_server",
]

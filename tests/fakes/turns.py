"""Moved to :mod:`telephony.simulation.fakes.turns` (benchmarks serve it too); ``--agent tests.fakes.turns:…`` still
works through these re-exports."""

from telephony.simulation.fakes.turns import GOODBYE_HZ, SPEECH_RMS, TurnTakingModel, goodbye_agent, turn_taking_agent

__all__ = ["GOODBYE_HZ", "SPEECH_RMS", "TurnTakingModel", "goodbye_agent", "turn_taking_agent"]

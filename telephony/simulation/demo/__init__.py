"""`voicebot demo`: a whole phone call on this machine, no accounts, no network (see ``demo.demo``)."""

from .demo import DEMO_SCRIPT, CallerLine, run_demo

__all__ = ["DEMO_SCRIPT", "CallerLine", "run_demo"]

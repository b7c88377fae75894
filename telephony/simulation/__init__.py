"""Calls without a phone: the simulated caller, caller scripts, replays and their reports, the demo,
a loopback server."""

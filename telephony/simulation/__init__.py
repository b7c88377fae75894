"""Calls without a phone: the simulated caller, caller scripts, replays and their reports, the demo,
a loopback server, and a local Nova Sonic (local_nova/)."""

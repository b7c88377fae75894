"""Old path of :mod:`telephony.simulation.local_app.loopback`: the app on a loopback port."""

from telephony.simulation.local_app.loopback import free_port_run, serve_app

__all__ = ["free_port_run", "serve_app"]

"""The app served locally: in the current event loop on a loopback port, or behind Debian's nginx."""

from .loopback import free_port_run, serve_app
from .nginx import local_nginx, nginx_binary

__all__ = ["free_port_run", "local_nginx", "nginx_binary", "serve_app"]

"""Where a server command listens: its socket bound before it says where, a taken port refused in one line.

``ui`` and ``mcp --http`` bind here and hand the bound socket to their server, so there is no window
between a check and the server's own bind for another process to take the port in. (The stand-in, a
package of its own, keeps its own check.)
"""

from __future__ import annotations

import errno
import socket

from videoatlas.errors import BadInputError


def bind(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``; a port in use, or an address this machine cannot bind, is bad input."""
    try:
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        return socket.create_server(address, family=family)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise BadInputError(f"port {port} on {host} is already in use; choose another with --port") from None
        raise BadInputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def url(host: str, port: int, path: str = "/") -> str:
    """The address a client uses (an IPv6 host in brackets)."""
    return f"http://[{host}]:{port}{path}" if ":" in host else f"http://{host}:{port}{path}"

"""The service's listening socket, bound before the service opens, and uvicorn serving on it.

Binding first makes a taken port a one-line error before the model and the store load, and
nothing else can take the port while they do.
"""

from __future__ import annotations

import socket

import uvicorn

from archivist.errors import ConfigurationError


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to `host`:`port` (it listens once the server starts); an address that
    cannot be taken is a ConfigurationError naming it."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except OSError as exc:
        raise ConfigurationError(f"--host {host}: {exc.strerror or exc}", setting="host") from None
    listener = socket.socket(family, kind, proto)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
    except OSError as exc:
        listener.close()
        raise ConfigurationError(
            f"--port {port}: cannot listen on {host}: {exc.strerror or exc} "
            "(is another `archivist serve` running? give another --port)",
            setting="port",
        ) from None
    listener.set_inheritable(True)
    return listener


class PreboundServer(uvicorn.Server):
    """uvicorn's server on sockets bound beforehand, saying where it listens once it does
    (uvicorn says so only for sockets it binds itself)."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and sockets:
            self._log_started_message(sockets)

"""Serving the viewer: a socket bound to the chosen host and port (0: a free one), uvicorn on it.

Binding the socket here, before uvicorn starts, is what lets ``psyq view`` print the URL of a
port the system chose, and lets the tests run a viewer in a thread on a free port.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from pathlib import Path
from typing import Callable

import uvicorn

from psyq.engine.view.app import create_app


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only.

    Example:
        >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("::1"), is_loopback("0.0.0.0")
        (True, True, True, False)
    """
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host`:`port` (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{'[' + host + ']' if ':' in host else host}:{port}/"


class ViewServer:
    """The viewer of `root` on `host`:`port`, run in the foreground (:meth:`run`) or in a thread
    (``with ViewServer(...) as server: server.url``)."""

    def __init__(self, root: str | Path, host: str = "127.0.0.1", port: int = 0, *,
                 allowed_hosts: list[str] | None = None, methods: Callable[[Path], str] | None = None):
        self.sock = bind(host, port)
        self.url = url_of(self.sock)
        app = create_app(root, host=host.strip("[]"), allowed_hosts=allowed_hosts, methods=methods)
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, server_header=False,
                                                    date_header=False, lifespan="off"))
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        """Serve until interrupted (Ctrl-C)."""
        self.server.run(sockets=[self.sock])

    def __enter__(self) -> "ViewServer":
        self._thread = threading.Thread(target=self.run, daemon=True, name="psyq-view")
        self._thread.start()
        while not self.server.started and self._thread.is_alive():
            threading.Event().wait(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.sock.close()

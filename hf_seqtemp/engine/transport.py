# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The engine client's HTTP plumbing: connections whose whole reply has a deadline, and the requests of one call,
ended together when the call fails (a server that trickles bytes or hangs is cut, and no thread outlives the call)."""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import urllib.parse

from .replies import EngineError


class _Keeping:
    """Keeps the connection's socket (`opened`): `http.client` hands it to the response and forgets it."""

    opened = None

    def connect(self):
        super().connect()
        self.opened = self.sock


class _HTTP(_Keeping, http.client.HTTPConnection):
    pass


class _HTTPS(_Keeping, http.client.HTTPSConnection):
    pass


def _connection(base_url: str, timeout: float) -> http.client.HTTPConnection:
    parts = urllib.parse.urlsplit(base_url)
    kind = _HTTPS if parts.scheme == "https" else _HTTP
    return kind(parts.hostname, parts.port, timeout=timeout)


def _shut(connection: http.client.HTTPConnection) -> None:
    """Ends a request now: a read blocked on its socket returns at once."""
    sock = connection.opened
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class _Calls:
    """The requests in flight of one call: [`cancel`] ends them all at once (the call failed: nothing waits on a
    server that trickles or hangs, and no thread outlives the call by a timeout)."""

    def __init__(self):
        self.lock, self.open, self.cancelled = threading.Lock(), set(), False

    def add(self, connection) -> bool:
        with self.lock:
            if not self.cancelled:
                self.open.add(connection)
            return not self.cancelled

    def discard(self, connection) -> None:
        with self.lock:
            self.open.discard(connection)

    def cancel(self) -> None:
        with self.lock:
            self.cancelled = True
            for connection in self.open:
                _shut(connection)


class _Watch:
    """The deadline of one request: at `timeout` seconds after its start its connection is shut (`expired` set),
    however the server sends its bytes."""

    def __init__(self, connection, timeout: float, expired: threading.Event, calls: _Calls | None):
        self.connection, self.calls, self.expired = connection, calls, expired
        if calls is not None and not calls.add(connection):
            raise EngineError("the request was dropped: another request of the same call failed")
        self.timer = threading.Timer(timeout, self._expire)
        self.timer.daemon = True
        self.timer.start()

    def _expire(self) -> None:
        self.expired.set()
        _shut(self.connection)

    def end(self) -> None:
        self.timer.cancel()
        if self.calls is not None:
            self.calls.discard(self.connection)
        self.connection.close()

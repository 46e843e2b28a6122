"""The listening side of the fake API server: the socket, TLS, and one thread per connection.

What kube-apiserver's secure serving does for its handler chain: accept (with the kernel's
backlog, ``TCP_NODELAY`` set), wrap in TLS when the server has a certificate, and serve each
connection with :class:`~kinformer.testing._apiserver.wire.handler.Handler` on a named thread
until it closes or the owner, :class:`~kinformer.testing.apiserver.FakeAPIServer`, closes them
all on stop. The handler reads what every connection shares from
:class:`~kinformer.testing._apiserver.server_state.ServerState`.
"""

from __future__ import annotations

import contextlib
import http.server
import itertools
import socket
import ssl
import threading
from typing import Any

from kinformer import _threads
from kinformer.testing._apiserver import server_state
from kinformer.testing._apiserver.wire import handler as handling


class HTTPServer(http.server.ThreadingHTTPServer):
    """Accepts connections; each gets a named, tracked thread that the owner can close and join.

    ``serve_forever`` runs on the owner's thread; each connection is served by one
    :class:`~kinformer.testing._apiserver.wire.handler.Handler` on its own
    ``kinformer-apiserver-<port>-conn-<n>`` thread. :meth:`close_connections` refuses new ones
    and shuts the open ones down; the owner joins the threads it returns.
    """

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    # socketserver's 5 drops connections when many clients connect at once (a fleet's members
    # starting together): each dropped SYN costs a client a 1 s retransmit. Go's listeners, and
    # so kube-apiserver's, take the kernel's somaxconn.
    request_queue_size = socket.SOMAXCONN

    def __init__(
        self,
        address: tuple[str, int],
        state: server_state.ServerState,
        context: ssl.SSLContext | None,
    ) -> None:
        self.state = state
        self._context = context
        self._conn_lock = threading.Lock()  # guards _conns, _workers, _closing
        self._conns: set[socket.socket] = set()
        self._workers: list[threading.Thread] = []
        self._closing = False
        self._counter = itertools.count(1)
        super().__init__(address, handling.Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = super().get_request()
        # headers and body go out in two writes: without NODELAY, Nagle plus the client's
        # delayed ACK adds ~40 ms to every request on a kept-alive connection
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._context is not None:
            sock = self._context.wrap_socket(sock, server_side=True,
                                             do_handshake_on_connect=False)
        return sock, addr

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conn_lock:
            if self._closing:
                self.shutdown_request(request)
                return
            self._conns.add(request)
            self._workers = [t for t in self._workers if t.is_alive()]
            name = _threads.thread_name("apiserver", f"{self.server_port}-conn-{next(self._counter)}")
            self._workers.append(_threads.spawn(self._serve, name, request, client_address))

    def _serve(self, request: Any, client_address: Any) -> None:
        try:
            if isinstance(request, ssl.SSLSocket):
                request.settimeout(10.0)
                request.do_handshake()
                request.settimeout(None)
            self.finish_request(request, client_address)
        except (OSError, ssl.SSLError):
            pass
        finally:
            with self._conn_lock:
                self._conns.discard(request)
            self.shutdown_request(request)

    def close_connections(self) -> list[threading.Thread]:
        """Refuse new connections, shut every open one down; returns the threads to join."""
        with self._conn_lock:
            self._closing = True
            conns = list(self._conns)
            workers = list(self._workers)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        return workers

"""The request path (kinformer.client.rest) over real HTTP through the official ApiClient.

What a server does not do on purpose (stall in the middle of a body) is served by a raw socket
on loopback; the rest runs against FakeAPIServer.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import logging
import socket
import threading
import traceback
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest
from helpers import CONFIGMAPS, client_for

from kinformer import ListWatch, SharedIndexInformer, errors
from kinformer.client import rest
from kinformer.context import Context
from kinformer.testing import FakeAPIServer, wait_for

DEADLINE = 5.0  # a cancelled request must have raised within this many seconds
HELD_BODY = 1000  # bytes the stalling server announces; it sends only the first few


class StallingServer:
    """Answers each connection's first request with headers and part of the body, then waits.

    ``release`` (set at teardown) lets the waiting handlers close their connections.
    """

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.release = threading.Event()
        self.answered = threading.Event()  # set once a response head and partial body went out
        self._thread = threading.Thread(target=self._serve, name="test-stalling", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self.release.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                data = conn.recv(4096)
                if not data:
                    return
                request += data
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n{\"items\": [" % HELD_BODY)
            self.answered.set()
            self.release.wait(30)

    def close(self) -> None:
        self.release.set()
        # closing a listening socket does not wake an accept() blocked on it; a shutdown does
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self._thread.join(5)
        assert not self._thread.is_alive(), "the stalling server's accept loop did not end"


@pytest.fixture
def stalling() -> Iterator[StallingServer]:
    server = StallingServer()
    yield server
    server.close()


def in_thread(target: Any) -> tuple[threading.Thread, list[BaseException]]:
    """Run ``target`` on a thread; the list gets what it raised."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            target()
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=run, name="test-request")
    thread.start()
    return thread, raised


def test_cancelling_breaks_off_a_body_the_server_stalls_in(stalling: StallingServer) -> None:
    api = client_for(stalling.url)
    try:
        client = rest.Client(api)
        ctx = Context()
        thread, raised = in_thread(
            lambda: client.request("GET", "/api/v1/configmaps", ctx=ctx).read())
        assert stalling.answered.wait(DEADLINE)
        ctx.cancel()
        thread.join(DEADLINE)
        assert not thread.is_alive(), "the body read was not broken off"
        assert len(raised) == 1 and isinstance(raised[0], errors.TransportError), raised
        assert "cancelled" in str(raised[0])
    finally:
        api.close()


def test_a_request_cancelled_before_it_is_sent_never_reaches_the_server(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    client = rest.Client(api_client)
    ctx = Context()
    ctx.cancel()
    with pytest.raises(errors.TransportError, match="cancelled"):
        client.request("GET", "/api/v1/namespaces", ctx=ctx)
    assert [path for _, path, _, _ in apiserver.requests] == []
    assert client.get_json("/api/v1/namespaces")["kind"] == "NamespaceList"  # the pool still serves


def test_the_api_client_keeps_working_for_the_official_typed_api(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    before = [ns.metadata.name for ns in core.list_namespace().items]  # a pool exists already
    rest.Client(api_client)
    rest.Client(kubernetes.dynamic.DynamicClient(api_client))  # type: ignore[no-untyped-call]
    assert [ns.metadata.name for ns in core.list_namespace().items] == before


def test_a_tls_failure_is_a_transport_error_with_the_whole_reason() -> None:
    with FakeAPIServer(token="s3cret") as server:
        api = client_for(server.url)  # https, but the server's CA is not trusted
        try:
            with pytest.raises(errors.TransportError) as raised:
                rest.Client(api).request("GET", "/api")
        finally:
            api.close()
    assert not isinstance(raised.value, errors.ConnectionRefusedAPIError)
    message = str(raised.value)
    assert message.startswith("GET /api: TLS failure: [SSL: CERTIFICATE_VERIFY_FAILED] "
                              "certificate verify failed: unable to get local issuer certificate")
    assert "Max retries" not in message and "HTTPSConnectionPool" not in message


def test_a_name_that_does_not_resolve_is_a_transport_error_naming_it() -> None:
    api = client_for("http://kinformer-test.invalid:6443")
    try:
        with pytest.raises(errors.TransportError) as raised:
            rest.Client(api).request("GET", "/api", what="discovery /api")
    finally:
        api.close()
    assert str(raised.value).startswith(
        "discovery /api: DNS lookup failed: Failed to resolve 'kinformer-test.invalid' (")


def test_a_url_that_does_not_parse_names_it_without_its_password_even_in_a_traceback() -> None:
    api = client_for("https://ann:url-passw0rd@127.0.0.1:99999")  # no such port
    try:
        with pytest.raises(errors.TransportError) as raised:
            rest.Client(api).request("GET", "/api")
    finally:
        api.close()
    assert str(raised.value) == ("GET /api: LocationParseError: Failed to parse: "
                                 "https://[redacted]@127.0.0.1:99999/api")
    assert "url-passw0rd" not in "".join(traceback.format_exception(raised.value))
    # a cause quoting no credential stays chained, for its traceback
    with FakeAPIServer(token="s3cret") as server:
        api = client_for(server.url)
        try:
            with pytest.raises(errors.TransportError) as raised:
                rest.Client(api).request("GET", "/api")
        finally:
            api.close()
    assert raised.value.__cause__ is not None


def test_get_json_names_the_request_in_a_decode_error_and_types_error_statuses(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    client = rest.Client(api_client)
    apiserver.corrupt_next(b"<html>not json</html>", verb="list", resource="configmaps")
    with pytest.raises(errors.DecodeError, match=r"^list the configmaps: response is not JSON$"):
        client.get_json("/api/v1/configmaps", what="list the configmaps")
    with pytest.raises(errors.NotFoundError) as raised:
        client.get_json("/api/v1/namespaces/default/configmaps/missing")
    assert (raised.value.status, raised.value.reason) == (404, "NotFound")


def test_anything_but_an_api_client_is_a_configuration_error() -> None:
    with pytest.raises(errors.ConfigurationError, match="ApiClient"):
        rest.Client(object())


# -- no retries inside urllib3, no pool warnings --------------------------------------------------


class ThrottlingServer:
    """Answers every request 429 with a long ``Retry-After``, as an overloaded server does."""

    RETRY_AFTER = 600  # seconds: urllib3, were it retrying, would sleep this long

    def __init__(self) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                   "reason": "TooManyRequests", "code": 429}).encode()
                self.send_response(429)
                self.send_header("Retry-After", str(ThrottlingServer.RETRY_AFTER))
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="test-throttling")
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def test_a_stop_during_a_429_with_a_long_retry_after_takes_effect_at_once() -> None:
    server = ThrottlingServer()
    api = client_for(server.url)
    try:
        informer = SharedIndexInformer(ListWatch.for_resource(api, CONFIGMAPS))
        stop = threading.Event()
        thread = threading.Thread(target=informer.run, args=(stop,), name="test-informer")
        thread.start()
        # the 429 reaches the reflector (urllib3 would sleep out Retry-After before that)...
        assert wait_for(lambda: isinstance(informer.last_error(), errors.TooManyRequestsError), DEADLINE)
        stop.set()  # ...which is waiting to list again when the stop comes
        thread.join(DEADLINE)
        assert not thread.is_alive(), "the stop did not end the informer's wait"
    finally:
        api.close()
        server.close()


def test_a_server_that_is_down_costs_one_log_line_per_reconnect(
    apiserver: FakeAPIServer, api_client: Any, caplog: pytest.LogCaptureFixture,
) -> None:
    informer = SharedIndexInformer(ListWatch.for_resource(api_client, CONFIGMAPS))
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), name="test-informer")
    thread.start()
    try:
        assert informer.wait_for_sync(timeout=DEADLINE)
        # the watch open, so that its end sends the reflector back to a list (a watch that
        # never opened is retried as a watch, as client-go does on a refused connection)
        assert apiserver.wait_for_watchers(CONFIGMAPS, 1, timeout=DEADLINE)
        caplog.set_level(logging.WARNING)
        apiserver.stop()
        assert wait_for(lambda: any("failed: list configmaps: connection refused" in r.getMessage()
                                    for r in caplog.records), timeout=10)
    finally:
        stop.set()
        thread.join(DEADLINE)
    noise = [r.getMessage() for r in caplog.records
             if not r.name.startswith("kinformer") or "\n" in r.getMessage()]
    assert noise == []  # urllib3 retried and warned three times before each of kinformer's lines


def test_more_connections_than_the_pool_keeps_are_closed_without_a_warning(
    apiserver: FakeAPIServer, caplog: pytest.LogCaptureFixture,
) -> None:
    configuration = kubernetes.client.Configuration()
    configuration.host = apiserver.url
    configuration.connection_pool_maxsize = 1
    api = kubernetes.client.ApiClient(configuration)
    try:
        client = rest.Client(api)
        caplog.set_level(logging.WARNING)
        watches = [client.request("GET", "/api/v1/configmaps", query=[("watch", "true")])
                   for _ in range(3)]  # three connections open at once, one kept by the pool
        for response in watches:
            response.release()
        assert client.get_json("/api/v1/namespaces")["kind"] == "NamespaceList"
    finally:
        api.close()
    assert [r.getMessage() for r in caplog.records if r.name.startswith("urllib3")] == []


class ClosingKeptAliveServer:
    """Answers the first request of each connection (keeping it alive) and closes the connection,
    unanswered, when a second request comes on it: a server dropping an idle connection just as
    the client reuses it."""

    BODY = b'{"kind": "NamespaceList", "items": []}'

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.requests: list[bytes] = []  # the request lines, answered or not
        self._thread = threading.Thread(target=self._serve, name="test-closing", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _read_request(self, conn: socket.socket) -> bool:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                return False
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(rest) < length:
            rest += conn.recv(4096)
        self.requests.append(head.split(b"\r\n")[0])
        return True

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            if not self._read_request(conn):
                return
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(self.BODY), self.BODY))
            self._read_request(conn)  # the reuse: closed without an answer

    def close(self) -> None:
        self.sock.close()


def test_a_kept_alive_connection_closed_under_a_get_sends_it_again_once_on_a_new_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="kinformer")
    server = ClosingKeptAliveServer()
    api = client_for(server.url.replace("://", "://ann:url-passw0rd@"))  # a password in the URL
    try:
        client = rest.Client(api)
        assert client.get_json("/api/v1/namespaces")["kind"] == "NamespaceList"
        assert client.get_json("/api/v1/namespaces")["kind"] == "NamespaceList"  # reused, closed, sent again
        assert server.requests.count(b"GET /api/v1/namespaces HTTP/1.1") == 3
        again = server.url.replace("://", "://[redacted]@") + "/api/v1/namespaces"
        assert f"GET {again}: the kept-alive connection was closed under it" in caplog.text
        assert "url-passw0rd" not in caplog.text
        with pytest.raises(errors.TransportError, match="connection broken"):  # a POST is not sent twice
            client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": "x"}})
    finally:
        api.close()
        server.close()

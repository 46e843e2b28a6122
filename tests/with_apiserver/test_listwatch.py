"""ListWatch.for_resource over real HTTP through the official client's ApiClient.

Wire behaviour a Kubernetes server never shows on purpose (garbage bodies, lines split across
chunks, a silent half-open stream) is served by a small scripted HTTP server on loopback; the
rest runs against FakeAPIServer.
"""

from __future__ import annotations

import http.server
import inspect
import json
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import helpers
import pytest
from helpers import CONFIGMAPS

import kinformer
from kinformer import _json, errors
from kinformer.backoff import Backoff, BackoffManager
from kinformer.cache.store import Indexer, meta_namespace_key_func
from kinformer.client.listerwatcher import ListOptions, WatchEvent, error_from_event
from kinformer.client.listwatch import ListWatch
from kinformer.client.resource import HTTPWatch
from kinformer.gvr import GroupVersionResource
from kinformer.reflector.reflector import Reflector
from kinformer.testing import ChannelWatch, FakeAPIServer, wait_for

DEPLOYMENTS = GroupVersionResource("apps", "v1", "deployments")

Responder = Callable[["_Handler"], None]


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ScriptedServer

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        self.server.headers.append({k.lower(): v for k, v in self.headers.items()})
        self.server.responder(self)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send_body(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def start_chunked(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class ScriptedServer(http.server.ThreadingHTTPServer):
    """Loopback HTTP server answering every GET with ``responder``; records paths."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.responder: Responder = lambda h: h.send_body(404, b"{}")
        self.release = threading.Event()  # set at teardown: silent responders return
        self.thread = threading.Thread(
            target=self.serve_forever, args=(0.02,), name="test-http", daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    srv = ScriptedServer()
    srv.thread.start()
    yield srv
    srv.release.set()
    srv.shutdown()
    srv.server_close()
    srv.thread.join(5)


@pytest.fixture(params=["orjson", "stdlib"])
def json_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setattr(_json, "_use_orjson", _json._use_orjson)  # put back as it was after
    _json.use_stdlib(request.param == "stdlib")
    yield request.param


def line(event_type: str, obj: Any) -> bytes:
    return json.dumps({"type": event_type, "object": obj}).encode() + b"\n"


def test_list_decodes_items_as_dicts_and_sends_the_options(
    server: ScriptedServer, json_backend: str
) -> None:
    body = {
        "kind": "ConfigMapList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "42", "continue": "next-page"},
        "items": [helpers.cm("a", 40, typed=False), helpers.cm("b", 41, typed=False)],
    }
    server.responder = lambda h: h.send_body(200, json.dumps(body).encode())
    client = helpers.client_for(server.url, token="s3cret")
    lw = ListWatch.for_resource(client, CONFIGMAPS, namespace="default", label_selector="app=web")
    result = lw.list(ListOptions(resource_version="0", limit=500))
    assert result.resource_version == "42"
    assert result.continue_token == "next-page"
    assert [item["metadata"]["name"] for item in result.items] == ["a", "b"]
    assert result.items[0]["kind"] == "ConfigMap" and result.items[0]["apiVersion"] == "v1"
    path = server.paths[0]
    assert path.startswith("/api/v1/namespaces/default/configmaps?")
    for part in ("labelSelector=app%3Dweb", "resourceVersion=0", "limit=500"):
        assert part in path
    assert server.headers[0]["authorization"] == "Bearer s3cret"


def test_a_listed_page_carries_each_items_store_key_for_the_fifo(server: ScriptedServer) -> None:
    body = {
        "kind": "ConfigMapList",
        "metadata": {"resourceVersion": "42"},
        "items": [helpers.cm("a", 40, typed=False), {"metadata": {"name": "top", "namespace": ""}},
                  helpers.cm("b", 41, typed=False, namespace="other"),
                  # JSON nulls read as absent fields, not as malformed objects
                  {"metadata": {"name": "nil", "namespace": None}},
                  {"metadata": {"name": "c", "namespace": "ns", "resourceVersion": None}}],
    }
    server.responder = lambda h: h.send_body(200, json.dumps(body).encode())
    lw = ListWatch.for_resource(helpers.client_for(server.url), CONFIGMAPS)
    listed = lw.list(ListOptions())
    assert listed.keys == [meta_namespace_key_func(item) for item in listed.items] == [
        "ns/a", "top", "other/b", "nil", "ns/c"]
    # for the cache's namespace index: one run per change of namespace, in list order
    assert listed.namespace_runs == [("ns", 1), ("", 1), ("other", 1), ("", 1), ("ns", 1)]


def test_group_resources_use_the_apis_path_and_tweaks_apply(server: ScriptedServer) -> None:
    body = {"kind": "DeploymentList", "metadata": {"resourceVersion": "1"}, "items": []}
    server.responder = lambda h: h.send_body(200, json.dumps(body).encode())

    def tweak(options: ListOptions) -> None:
        options.field_selector = "metadata.name=x"

    lw = ListWatch.for_resource(helpers.client_for(server.url), DEPLOYMENTS, tweak_list_options=tweak)
    lw.list(ListOptions())
    assert server.paths[0] == "/apis/apps/v1/deployments?fieldSelector=metadata.name%3Dx"


@pytest.mark.parametrize(
    "body",
    [
        b"<html>not json</html>",
        b'{"kind": "Status", "metadata": {}}',
        b'{"items": [{"metadata": {"namespace": "default"}}], "metadata": {}}',
    ],
    ids=["not-json", "no-items", "item-without-name"],
)
def test_a_list_body_that_is_not_a_list_of_objects_is_a_decode_error(
    server: ScriptedServer, json_backend: str, body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    server.responder = lambda h: h.send_body(200, body)
    lw = ListWatch.for_resource(helpers.client_for(server.url), CONFIGMAPS)
    with caplog.at_level(logging.WARNING, logger="kinformer.client.resource"), pytest.raises(
        errors.DecodeError
    ):
        lw.list(ListOptions())
    assert any(r.levelno == logging.WARNING for r in caplog.records)


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (401, errors.UnauthorizedError),
        (403, errors.ForbiddenError),
        (404, errors.NotFoundError),
        (410, errors.GoneError),
        (500, errors.ServerError),
    ],
)
def test_http_errors_become_typed_errors_with_the_status_reason(
    server: ScriptedServer, status: int, error_type: type[errors.APIError]
) -> None:
    body = {"kind": "Status", "status": "Failure", "code": status, "reason": "Because", "message": "no"}
    server.responder = lambda h: h.send_body(status, json.dumps(body).encode())
    lw = ListWatch.for_resource(helpers.client_for(server.url), CONFIGMAPS)
    with pytest.raises(error_type) as raised:
        lw.list(ListOptions())
    assert (raised.value.status, raised.value.reason) == (status, "Because")
    with pytest.raises(error_type):
        lw.watch(ListOptions())


def test_a_refused_connection_is_a_connection_refused_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    lw = ListWatch.for_resource(helpers.client_for(f"http://127.0.0.1:{port}"), CONFIGMAPS)
    with pytest.raises(errors.ConnectionRefusedAPIError):
        lw.list(ListOptions())
    with pytest.raises(ConnectionRefusedError):
        lw.watch(ListOptions())


def test_watch_lines_are_reassembled_across_chunk_boundaries(
    server: ScriptedServer, json_backend: str
) -> None:
    first, second = line("ADDED", helpers.cm("a", 1)), line("MODIFIED", helpers.cm("a", 2))
    third = line("BOOKMARK", {"kind": "ConfigMap", "metadata": {"resourceVersion": "3"}})

    def respond(h: _Handler) -> None:
        h.start_chunked()
        h.chunk(first[:10])
        h.chunk(first[10:] + second[:5])
        h.chunk(second[5:] + third)
        h.end_chunked()

    server.responder = respond
    lw = ListWatch.for_resource(helpers.client_for(server.url), CONFIGMAPS)
    watch = lw.watch(ListOptions(resource_version="1", allow_watch_bookmarks=True, timeout_seconds=300))
    events = list(watch)
    assert [(e.type, e.object["metadata"]["resourceVersion"]) for e in events] == [
        ("ADDED", "1"),
        ("MODIFIED", "2"),
        ("BOOKMARK", "3"),
    ]
    assert "watch=true" in server.paths[0] and "allowWatchBookmarks=true" in server.paths[0]
    assert "timeoutSeconds=300" in server.paths[0]


@pytest.mark.parametrize(
    "bad",
    [b"{not json\n", line("SNAPSHOT", helpers.cm("b", "3")), line("ADDED", {"metadata": {}})],
    ids=["malformed", "unknown-type", "no-name"],
)
def test_a_bad_watch_line_ends_the_watch_with_a_decode_error(
    server: ScriptedServer, json_backend: str, bad: bytes
) -> None:
    def respond(h: _Handler) -> None:
        h.start_chunked()
        h.chunk(line("ADDED", helpers.cm("a", "1")) + bad + line("ADDED", helpers.cm("c", "4")))
        h.end_chunked()

    server.responder = respond
    watch = ListWatch.for_resource(helpers.client_for(server.url), CONFIGMAPS).watch(ListOptions())
    seen: list[WatchEvent] = []
    with pytest.raises(errors.DecodeError):
        for event in watch:
            seen.append(event)
    assert [e.object["metadata"]["name"] for e in seen] == ["a"]


def test_a_stream_ending_inside_an_event_ends_the_watch_quietly_after_the_whole_ones(
    server: ScriptedServer, json_backend: str
) -> None:
    whole, cut = line("ADDED", helpers.cm("a", "1")), line("ADDED", helpers.cm("b", "2"))

    def respond(h: _Handler) -> None:
        h.start_chunked()
        h.chunk(whole + cut[: len(cut) // 2])
        h.end_chunked()  # the connection ended inside the second event

    server.responder = respond
    events = list(ListWatch.for_resource(helpers.client_for(server.url), CONFIGMAPS).watch(ListOptions()))
    assert [e.object["metadata"]["name"] for e in events] == ["a"]


def test_a_whole_last_event_without_its_newline_is_still_delivered(
    server: ScriptedServer, json_backend: str
) -> None:
    def respond(h: _Handler) -> None:
        h.start_chunked()
        h.chunk(line("ADDED", helpers.cm("a", "1")).rstrip(b"\n"))
        h.end_chunked()

    server.responder = respond
    events = list(ListWatch.for_resource(helpers.client_for(server.url), CONFIGMAPS).watch(ListOptions()))
    assert [e.object["metadata"]["name"] for e in events] == ["a"]


def test_an_error_event_carries_the_status_as_a_typed_error(server: ScriptedServer) -> None:
    gone = {"kind": "Status", "status": "Failure", "code": 410, "reason": "Expired", "message": "old"}

    def respond(h: _Handler) -> None:
        h.start_chunked()
        h.chunk(line("ERROR", gone))
        h.end_chunked()

    server.responder = respond
    events = list(ListWatch.for_resource(helpers.client_for(server.url), CONFIGMAPS).watch(ListOptions()))
    assert [e.type for e in events] == ["ERROR"]
    error = error_from_event(events[0])
    assert isinstance(error, errors.GoneError) and errors.is_expired(error)


def silent_watch(h: _Handler) -> None:
    h.start_chunked()
    h.chunk(line("ADDED", helpers.cm("a", "1")))
    h.server.release.wait(10)


def test_a_silent_watch_fails_after_the_read_timeout(server: ScriptedServer) -> None:
    server.responder = silent_watch
    lw = ListWatch.for_resource(helpers.client_for(server.url), CONFIGMAPS, read_timeout=0.3)
    watch = lw.watch(ListOptions())
    iterator = iter(watch)
    assert next(iterator).type == "ADDED"
    with pytest.raises(errors.TransportError):
        next(iterator)


def test_closing_a_blocked_watch_from_another_thread_ends_it_quietly(server: ScriptedServer) -> None:
    server.responder = silent_watch
    watch = ListWatch.for_resource(helpers.client_for(server.url), CONFIGMAPS).watch(ListOptions())
    assert isinstance(watch, HTTPWatch)
    first = threading.Event()
    outcome: list[object] = []

    def consume() -> None:
        try:
            for _event in watch:
                first.set()
            outcome.append("ended")
        except Exception as exc:
            outcome.append(exc)

    reader = threading.Thread(target=consume, name="test-reader")
    reader.start()
    assert first.wait(5)
    watch.close()
    reader.join(5)
    assert not reader.is_alive()
    assert outcome == ["ended"]


def test_list_pages_follow_continue_tokens_on_fake_apiserver(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    objs = [{"metadata": {"name": f"cm-{i}", "namespace": "default"}} for i in range(5)]
    apiserver.bulk_create(CONFIGMAPS, objs)
    lw = ListWatch.for_resource(api_client, CONFIGMAPS)
    names: list[str] = []
    page = lw.list(ListOptions(limit=2))
    first_rv = page.resource_version
    names += [o["metadata"]["name"] for o in page.items]
    while page.continue_token:
        page = lw.list(ListOptions(limit=2, continue_token=page.continue_token))
        names += [o["metadata"]["name"] for o in page.items]
    assert names == [f"cm-{i}" for i in range(5)]
    assert first_rv == apiserver.current_resource_version()


def test_watch_on_fake_apiserver_delivers_writes_and_closes_from_another_thread(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    lw = ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default")
    rv = lw.list(ListOptions()).resource_version
    watch = lw.watch(ListOptions(resource_version=rv, allow_watch_bookmarks=True))
    events: list[WatchEvent] = []
    got_add = threading.Event()

    def consume() -> None:
        for event in watch:
            events.append(event)
            if event.type == "ADDED":
                got_add.set()

    reader = threading.Thread(target=consume, name="test-reader")
    reader.start()
    assert apiserver.wait_for_watchers(CONFIGMAPS, 1, 5)
    apiserver.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "default"}})
    assert got_add.wait(5)
    watch.close()
    reader.join(5)
    assert not reader.is_alive()
    assert [e.object["metadata"]["name"] for e in events if e.type == "ADDED"] == ["a"]


# kube-apiserver bookmarks a quiet watch about every minute (FakeAPIServer's default), up to a
# couple of seconds late; a read timeout of that minute cut each watch just before its bookmark
SERVER_BOOKMARK_INTERVAL = inspect.signature(FakeAPIServer).parameters["bookmark_interval"].default
DEFAULT_READ_TIMEOUT = inspect.signature(ListWatch.for_resource).parameters["read_timeout"].default


def test_the_default_read_timeout_outlasts_the_servers_bookmark_interval() -> None:
    assert SERVER_BOOKMARK_INTERVAL == 60.0
    assert DEFAULT_READ_TIMEOUT >= SERVER_BOOKMARK_INTERVAL + 15


def test_a_quiet_watch_hears_its_bookmarks_and_is_never_cut_at_the_default_proportions() -> None:
    # the defaults scaled down: a bookmark every second, the read timeout in the same proportion
    # (its slack, 0.5 s, still outlasts a bookmark sent late on a busy machine)
    interval = 1.0
    read_timeout = interval * DEFAULT_READ_TIMEOUT / SERVER_BOOKMARK_INTERVAL
    with FakeAPIServer(bookmark_interval=interval) as server:
        client = server.api_client()
        lw = ListWatch.for_resource(client, CONFIGMAPS, namespace="default",
                                    read_timeout=read_timeout)
        reflector = Reflector(lw, Indexer(), name="quiet")

        def watches() -> int:
            return sum(1 for _m, _p, query, _s in server.requests if query.get("watch") == "true")

        try:
            with helpers.running(reflector.run):
                assert server.wait_for_watchers(CONFIGMAPS, 1, 5)
                # a write the watch does not see: only a bookmark brings its version
                server.create(CONFIGMAPS, {"metadata": {"name": "elsewhere",
                                                        "namespace": "kube-system"}})
                latest = str(server.current_resource_version())
                assert wait_for(lambda: reflector.last_sync_resource_version() == latest, 5)
                # two read timeouts: a watch its bookmarks did not keep alive is cut in one
                assert not wait_for(lambda: watches() > 1, timeout=2 * read_timeout)
        finally:
            client.close()
        assert watches() == 1, server.requests


def test_a_reflector_reestablishes_a_watch_that_went_silent(server: ScriptedServer) -> None:
    listing = {
        "kind": "ConfigMapList",
        "metadata": {"resourceVersion": "5"},
        "items": [helpers.cm("a", 5, typed=False)],
    }

    def respond(h: _Handler) -> None:
        if "watch=true" in h.path:
            silent_watch(h)
        else:
            h.send_body(200, json.dumps(listing).encode())

    server.responder = respond
    lw = ListWatch.for_resource(helpers.client_for(server.url), CONFIGMAPS, read_timeout=0.2)
    seen: list[BaseException] = []
    reflector = Reflector(
        lw,
        Indexer(),
        name="silent",
        backoff=BackoffManager(Backoff(duration=0.01, cap=0.05)),
        watch_error_handler=lambda r, e: seen.append(e),
    )
    with helpers.running(reflector.run):
        assert wait_for(lambda: sum("watch=true" in p for p in server.paths) >= 2, 5)
        lists = [p for p in server.paths if "watch=true" not in p]
    # the read timed out after an event: the watch is re-opened where it was, no relist, no error
    assert len(lists) == 1, server.paths
    assert seen == []


# What follows was the acceptance suite's: it calls kinformer's public names only, with the
# argument names of the public API reference.


def test_list_and_watch_value_types_take_api_md_field_names() -> None:
    options = kinformer.ListOptions(
        resource_version="5",
        resource_version_match="NotOlderThan",
        limit=10,
        continue_token="t",
        label_selector="app=web",
        field_selector="metadata.name=a",
        timeout_seconds=300,
        allow_watch_bookmarks=True,
        send_initial_events=False,
    )
    assert (options.resource_version, options.limit, options.continue_token) == ("5", 10, "t")
    result = kinformer.ListResult(items=[helpers.cm("a")], resource_version="7", continue_token="")
    assert (len(result.items), result.resource_version) == (1, "7")
    event = kinformer.WatchEvent(type="ADDED", object=helpers.cm("a"))
    assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "a")


def test_closing_a_channel_watch_from_another_thread_ends_its_iteration() -> None:
    watch = ChannelWatch()
    ended = threading.Event()

    def consume() -> None:
        for _ in watch:
            pass
        ended.set()

    thread = threading.Thread(target=consume)
    thread.start()
    watch.close()
    thread.join(helpers.TIMEOUT)
    assert ended.is_set()

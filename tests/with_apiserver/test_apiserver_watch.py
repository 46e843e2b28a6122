"""FakeAPIServer watches: resume, 410, bookmarks, initial events, selectors and fault switches."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3
from helpers import CONFIGMAPS, cm_manifest
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch

from kinformer.testing import FakeAPIServer, wait_for

NS = "default"


class Stream:
    """A raw watch response read line by line, decoded; closed by the test."""

    def __init__(self, api: k8s.CoreV1Api, **query: Any) -> None:
        self.response = api.list_namespaced_config_map(
            NS, watch=True, _preload_content=False, _request_timeout=10, **query)
        self._lines = k8s_watch.watch.iter_resp_lines(self.response)

    def next(self) -> dict[str, Any]:
        return json.loads(next(self._lines))  # type: ignore[no-any-return]

    def rest(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self._lines]

    def close(self) -> None:
        self.response.close()


@pytest.fixture
def api(api_client: Any) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(api_client)


@pytest.fixture
def streams() -> Iterator[list[Stream]]:
    opened: list[Stream] = []
    yield opened
    for stream in opened:
        stream.close()


def open_stream(streams: list[Stream], api: k8s.CoreV1Api, **query: Any) -> Stream:
    stream = Stream(api, **query)
    streams.append(stream)
    return stream


def test_a_watch_from_an_old_version_replays_every_change_in_order(
    api: k8s.CoreV1Api, streams: list[Stream],
) -> None:
    since = api.list_namespaced_config_map(NS).metadata.resource_version
    api.create_namespaced_config_map(NS, cm_manifest("a"))
    api.patch_namespaced_config_map("a", NS, {"data": {"x": "1"}})
    api.delete_namespaced_config_map("a", NS)
    stream = open_stream(streams, api, resource_version=since)
    events = [stream.next() for _ in range(3)]
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and versions[0] > int(since)
    api.create_namespaced_config_map(NS, cm_manifest("b"))
    live = stream.next()
    assert (live["type"], live["object"]["metadata"]["name"]) == ("ADDED", "b")


def test_a_watch_from_a_compacted_version_gets_one_410_error_event_then_ends(
    apiserver: FakeAPIServer, api: k8s.CoreV1Api, streams: list[Stream],
) -> None:
    since = api.create_namespaced_config_map(NS, cm_manifest("a")).metadata.resource_version
    api.create_namespaced_config_map(NS, cm_manifest("b"))
    apiserver.compact()
    stream = open_stream(streams, api, resource_version=since)
    assert stream.response.status == 200
    events = stream.rest()
    assert len(events) == 1
    assert events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410
    assert events[0]["object"]["reason"] == "Expired"


def test_a_history_of_bounded_size_expires_old_versions_by_itself(api_client: Any) -> None:
    with FakeAPIServer(history_size=3) as server:
        client = server.api_client()
        try:
            api = k8s.CoreV1Api(client)
            since = api.list_namespaced_config_map(NS).metadata.resource_version
            for i in range(5):
                api.create_namespaced_config_map(NS, cm_manifest(f"c{i}"))
            stream = Stream(api, resource_version=since)
            events = stream.rest()
            stream.close()
        finally:
            client.close()
    assert [e["type"] for e in events] == ["ERROR"]


def test_a_watch_at_version_zero_starts_with_everything_as_added(
    api: k8s.CoreV1Api, streams: list[Stream],
) -> None:
    api.create_namespaced_config_map(NS, cm_manifest("a"))
    api.create_namespaced_config_map(NS, cm_manifest("b"))
    stream = open_stream(streams, api, resource_version="0")
    first = [stream.next() for _ in range(2)]
    assert {(e["type"], e["object"]["metadata"]["name"]) for e in first} == {
        ("ADDED", "a"), ("ADDED", "b")}
    api.delete_namespaced_config_map("a", NS)
    assert stream.next()["type"] == "DELETED"


def test_bookmarks_carry_only_kind_api_version_and_resource_version(
    apiserver: FakeAPIServer, api: k8s.CoreV1Api, streams: list[Stream],
) -> None:
    since = api.create_namespaced_config_map(NS, cm_manifest("a")).metadata.resource_version
    stream = open_stream(streams, api, resource_version=since, allow_watch_bookmarks=True)
    bookmark = stream.next()
    assert bookmark == {"type": "BOOKMARK", "object": {
        "kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"resourceVersion": apiserver.current_resource_version()}}}


def test_timeout_seconds_ends_the_stream_cleanly_after_a_last_bookmark(
    api: k8s.CoreV1Api, streams: list[Stream],
) -> None:
    since = api.list_namespaced_config_map(NS).metadata.resource_version
    stream = open_stream(streams, api, resource_version=since, timeout_seconds=1,
                         allow_watch_bookmarks=True)
    events = stream.rest()
    assert events and events[-1]["type"] == "BOOKMARK"


def test_send_initial_events_streams_the_state_then_an_annotated_bookmark(
    apiserver: FakeAPIServer, api: k8s.CoreV1Api, streams: list[Stream],
) -> None:
    api.create_namespaced_config_map(NS, cm_manifest("a"))
    stream = open_stream(streams, api, send_initial_events=True,
                         resource_version_match="NotOlderThan", allow_watch_bookmarks=True)
    added = stream.next()
    assert (added["type"], added["object"]["metadata"]["name"]) == ("ADDED", "a")
    end = stream.next()
    assert end["type"] == "BOOKMARK"
    assert end["object"]["metadata"] == {
        "resourceVersion": apiserver.current_resource_version(),
        "annotations": {"k8s.io/initial-events-end": "true"}}


def test_initial_events_end_with_a_bookmark_only_when_bookmarks_are_allowed(
    api: k8s.CoreV1Api, streams: list[Stream],
) -> None:
    api.create_namespaced_config_map(NS, cm_manifest("a"))
    stream = open_stream(streams, api, send_initial_events=True,
                         resource_version_match="NotOlderThan", timeout_seconds=1)
    events = stream.rest()  # the stream ends by itself after a second
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a")]


@pytest.mark.parametrize("version", [None, "0"])
def test_send_initial_events_false_from_now_sends_no_added_for_what_exists(
    api: k8s.CoreV1Api, streams: list[Stream], version: str | None,
) -> None:
    api.create_namespaced_config_map(NS, cm_manifest("a"))
    query = {} if version is None else {"resource_version": version}
    stream = open_stream(streams, api, send_initial_events=False,
                         resource_version_match="NotOlderThan", **query)
    api.create_namespaced_config_map(NS, cm_manifest("b"))
    first = stream.next()
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "b")


def test_send_initial_events_false_from_a_version_replays_what_came_after_it(
    api: k8s.CoreV1Api, streams: list[Stream],
) -> None:
    since = api.list_namespaced_config_map(NS).metadata.resource_version
    api.create_namespaced_config_map(NS, cm_manifest("a"))
    stream = open_stream(streams, api, send_initial_events=False, resource_version=since,
                         resource_version_match="NotOlderThan")
    first = stream.next()
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "a")


class RawStream:
    """A watch of default's ConfigMaps asked with ``query`` verbatim over plain HTTP (the
    official client sends only ``true`` and ``false``), opened at once; closed by the test."""

    def __init__(self, apiserver: FakeAPIServer, query: str) -> None:
        self._http = urllib3.PoolManager()
        self.response = self._http.request(
            "GET", f"{apiserver.url}/api/v1/namespaces/{NS}/configmaps?{query}",
            preload_content=False, timeout=10)
        assert self.response.status == 200, self.response.data
        self._lines = k8s_watch.watch.iter_resp_lines(self.response)

    def next(self) -> dict[str, Any]:
        return json.loads(next(self._lines))  # type: ignore[no-any-return]

    def close(self) -> None:
        self.response.release_conn()
        self._http.clear()


# kube-apiserver converts a boolean query parameter as apimachinery's
# Convert_Slice_string_To_bool does: "0" and "false" in any case are false, anything else true
@pytest.mark.parametrize("text", ["true", "1", "t", "T", "TRUE", "True", "yes", ""])
def test_boolean_options_read_true_as_kube_apiserver_reads_them(
    apiserver: FakeAPIServer, api: k8s.CoreV1Api, text: str,
) -> None:
    api.create_namespaced_config_map(NS, cm_manifest("a"))
    stream = RawStream(apiserver, f"watch={text}&sendInitialEvents={text}&"
                                  f"allowWatchBookmarks={text}&resourceVersionMatch=NotOlderThan")
    try:
        added, end = stream.next(), stream.next()
    finally:
        stream.close()
    assert (added["type"], added["object"]["metadata"]["name"]) == ("ADDED", "a")
    assert end["type"] == "BOOKMARK"
    assert end["object"]["metadata"] == {
        "resourceVersion": apiserver.current_resource_version(),
        "annotations": {"k8s.io/initial-events-end": "true"}}


@pytest.mark.parametrize("text", ["false", "0", "False", "FALSE", "fAlSe"])
def test_boolean_options_read_false_as_kube_apiserver_reads_them(
    apiserver: FakeAPIServer, api: k8s.CoreV1Api, raw: Any, text: str,
) -> None:
    api.create_namespaced_config_map(NS, cm_manifest("a"))
    stream = RawStream(apiserver, f"watch=true&sendInitialEvents={text}&"
                                  f"allowWatchBookmarks={text}&resourceVersionMatch=NotOlderThan")
    try:
        # the request is answered once the watch is registered: what comes next is live
        api.create_namespaced_config_map(NS, cm_manifest("b"))
        first = stream.next()  # no initial events, and no bookmark before the live event
    finally:
        stream.close()
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "b")
    status, listed = raw("GET", f"/api/v1/namespaces/{NS}/configmaps", query=[("watch", text)])
    assert (status, listed["kind"]) == (200, "ConfigMapList")


def test_send_initial_events_without_not_older_than_is_422_in_the_real_wording(
    api: k8s.CoreV1Api,
) -> None:
    with pytest.raises(k8s.ApiException) as info:
        api.list_namespaced_config_map(NS, watch=True, send_initial_events=True,
                                       _preload_content=False)
    assert info.value.status == 422
    assert info.value.body.encode() == (  # the client hands the bytes over decoded
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
        b'"ListOptions.meta.k8s.io \\"\\" is invalid: resourceVersionMatch: Forbidden: '
        b'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",'
        b'"reason":"Invalid","details":{"group":"meta.k8s.io","kind":"ListOptions","causes":['
        b'{"reason":"FieldValueForbidden","message":"Forbidden: sendInitialEvents requires '
        b'setting resourceVersionMatch to NotOlderThan","field":"resourceVersionMatch"}]},'
        b'"code":422}\n')
    with pytest.raises(k8s.ApiException) as info:  # a list may not ask for initial events
        api.list_namespaced_config_map(NS, send_initial_events=False)
    assert json.loads(info.value.body)["message"] == (
        'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: '
        "sendInitialEvents is forbidden for list")


def test_leaving_a_selector_is_deleted_with_the_old_object_and_entering_is_added(
    api: k8s.CoreV1Api, streams: list[Stream],
) -> None:
    since = api.create_namespaced_config_map(NS, cm_manifest("a", app="web")).metadata.resource_version
    stream = open_stream(streams, api, resource_version=since, label_selector="app=web")
    left = api.patch_namespaced_config_map("a", NS, {"metadata": {"labels": {"app": "db"}}})
    gone = stream.next()
    assert gone["type"] == "DELETED"
    assert gone["object"]["metadata"]["labels"] == {"app": "web"}
    assert gone["object"]["metadata"]["resourceVersion"] == left.metadata.resource_version
    api.create_namespaced_config_map(NS, cm_manifest("other", app="db"))
    api.patch_namespaced_config_map("a", NS, {"metadata": {"labels": {"app": "web"}}})
    back = stream.next()
    assert (back["type"], back["object"]["metadata"]["name"]) == ("ADDED", "a")


def test_the_official_watch_stream_sees_live_changes(
    apiserver: FakeAPIServer, api: k8s.CoreV1Api,
) -> None:
    since = api.list_namespaced_config_map(NS).metadata.resource_version
    api.create_namespaced_config_map(NS, cm_manifest("a"))
    api.patch_namespaced_config_map("a", NS, {"data": {"x": "1"}})
    seen = []
    watcher = k8s_watch.Watch()
    for event in watcher.stream(api.list_namespaced_config_map, NS, resource_version=since,
                                timeout_seconds=5):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 2:
            watcher.stop()
    assert seen == [("ADDED", "a"), ("MODIFIED", "a")]


def test_drop_watches_ends_open_streams_abruptly(
    apiserver: FakeAPIServer, api: k8s.CoreV1Api, streams: list[Stream],
) -> None:
    stream = open_stream(streams, api, resource_version="0")
    assert apiserver.wait_for_watchers(CONFIGMAPS, 1, timeout=5)
    assert apiserver.drop_watches() == 1
    with pytest.raises((urllib3.exceptions.ProtocolError, StopIteration)):
        stream.next()
    assert wait_for(lambda: apiserver.watcher_count(CONFIGMAPS) == 0, timeout=5)
    assert api.list_namespaced_config_map(NS).items == []


def test_injected_garbage_reaches_open_watches_as_a_malformed_line(
    apiserver: FakeAPIServer, api: k8s.CoreV1Api, streams: list[Stream],
) -> None:
    stream = open_stream(streams, api, resource_version="0")
    assert apiserver.wait_for_watchers(CONFIGMAPS, 1, timeout=5)
    apiserver.inject_watch_garbage(b"{oops")
    assert next(stream._lines) == "{oops"
    api.create_namespaced_config_map(NS, cm_manifest("a"))
    assert stream.next()["type"] == "ADDED"


def test_cut_watches_midline_leaves_half_a_line_then_closes(
    apiserver: FakeAPIServer, api: k8s.CoreV1Api, streams: list[Stream],
) -> None:
    stream = open_stream(streams, api, resource_version="0")
    assert apiserver.wait_for_watchers(CONFIGMAPS, 1, timeout=5)
    apiserver.cut_watches_midline()
    with pytest.raises((urllib3.exceptions.ProtocolError, ValueError, StopIteration)):
        stream.next()


def test_frozen_watches_stay_open_and_silent_until_their_client_gives_up(
    apiserver: FakeAPIServer, api: k8s.CoreV1Api, streams: list[Stream],
) -> None:
    """A frozen watch sends neither events nor bookmarks nor its clean end at timeoutSeconds:
    its client's read times out. It counts as open until the client closes it (urllib3 does on
    the timeout), and a watch opened after the freeze is served as usual."""
    since = api.list_namespaced_config_map(NS).metadata.resource_version
    frozen = api.list_namespaced_config_map(
        NS, watch=True, _preload_content=False, _request_timeout=(5, 1.0),
        resource_version=since, timeout_seconds=1, allow_watch_bookmarks=True)
    lines = k8s_watch.watch.iter_resp_lines(frozen)
    try:
        assert json.loads(next(lines))["type"] == "BOOKMARK"  # alive: a bookmark every 0.2 s
        assert apiserver.wait_for_watchers(CONFIGMAPS, 1, timeout=5)
        assert apiserver.freeze_watches() == 1
        api.create_namespaced_config_map(NS, cm_manifest("a"))
        assert apiserver.watcher_count(CONFIGMAPS) == 1  # still open on the server's side
        with pytest.raises(urllib3.exceptions.ReadTimeoutError):  # no clean end after 1 s either
            for line in lines:  # anything but the bookmarks and events it would have sent
                assert json.loads(line)["type"] == "BOOKMARK"
    finally:
        frozen.close()
    assert wait_for(lambda: apiserver.watcher_count(CONFIGMAPS) == 0, timeout=5)
    later = open_stream(streams, api, resource_version=since, allow_watch_bookmarks=True)
    assert later.next()["object"]["metadata"]["name"] == "a"
    assert later.next()["type"] == "BOOKMARK"


def test_watcher_count_follows_open_and_closed_watches(
    apiserver: FakeAPIServer, api: k8s.CoreV1Api, streams: list[Stream],
) -> None:
    assert apiserver.watcher_count(CONFIGMAPS) == 0
    for _ in range(3):
        open_stream(streams, api, resource_version="0")
    assert apiserver.wait_for_watchers(CONFIGMAPS, 3, timeout=5)
    apiserver.end_watches()
    for stream in streams:
        assert stream.rest() == []
    assert wait_for(lambda: apiserver.watcher_count(CONFIGMAPS) == 0, timeout=5)


def test_many_watchers_each_see_every_event(
    apiserver: FakeAPIServer, api: k8s.CoreV1Api, streams: list[Stream],
) -> None:
    since = api.list_namespaced_config_map(NS).metadata.resource_version
    opened = [open_stream(streams, api, resource_version=since) for _ in range(8)]
    apiserver.bulk_create(CONFIGMAPS, [{"metadata": {"name": f"c{i}", "namespace": NS}}
                                       for i in range(200)])
    for stream in opened:
        names = [stream.next()["object"]["metadata"]["name"] for _ in range(200)]
        assert names == [f"c{i}" for i in range(200)]


def test_a_failed_watch_request_answers_the_injected_status(
    apiserver: FakeAPIServer, api: k8s.CoreV1Api,
) -> None:
    apiserver.fail_next(1, status=503, verb="watch")
    with pytest.raises(k8s.ApiException) as info:
        api.list_namespaced_config_map(NS, watch=True, _preload_content=False)
    assert info.value.status == 503
    api.list_namespaced_config_map(NS)


def test_a_delay_longer_than_the_client_timeout_makes_the_request_time_out(
    apiserver: FakeAPIServer, api: k8s.CoreV1Api,
) -> None:
    apiserver.set_delay(1.0, verb="list")
    with pytest.raises((urllib3.exceptions.ReadTimeoutError, urllib3.exceptions.MaxRetryError)):
        api.list_namespaced_config_map(NS, _request_timeout=0.1)
    api.read_namespace(NS)
    apiserver.set_delay(0, verb="list")
    assert api.list_namespaced_config_map(NS).items == []


def test_a_restarted_server_keeps_its_port_and_state(
    apiserver: FakeAPIServer, api: k8s.CoreV1Api,
) -> None:
    api.create_namespaced_config_map(NS, cm_manifest("a"))
    url = apiserver.url
    apiserver.stop()
    apiserver.start()
    assert apiserver.url == url
    assert [i.metadata.name for i in api.list_namespaced_config_map(NS).items] == ["a"]


def test_the_legacy_watch_path_streams_events_too(apiserver: FakeAPIServer, raw: Any) -> None:
    apiserver.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": NS}})

    def end_when_watching() -> None:
        if apiserver.wait_for_watchers(CONFIGMAPS, 1, timeout=5):
            apiserver.end_watches()

    ender = threading.Thread(target=end_when_watching)
    ender.start()
    try:
        status, body = raw("GET", "/api/v1/watch/namespaces/default/configmaps",
                           query=[("resourceVersion", "0")])
    finally:
        ender.join()
    assert status == 200
    # one event line decodes as one JSON document
    events = [body] if isinstance(body, dict) else [json.loads(x) for x in body.splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a")]


def test_a_watcher_too_far_behind_is_ended_cleanly_while_writers_go_on() -> None:
    # kube-apiserver's watch cache ends a watcher it cannot hand events to by closing it: the
    # stream ends with no ERROR event, and the client watches again from its last version
    big = "x" * 10_000
    with FakeAPIServer(max_backlog=50) as server:
        client = server.api_client()
        try:
            api = k8s.CoreV1Api(client)
            since = api.list_namespaced_config_map(NS).metadata.resource_version
            stream = Stream(api, resource_version=since)
            assert server.wait_for_watchers(CONFIGMAPS, 1, timeout=5)
            # 20 MB of events: more than loopback socket buffers hold for a client not reading
            for start in range(0, 2000, 100):
                server.bulk_create(CONFIGMAPS, [
                    {"metadata": {"name": f"c{i}", "namespace": NS}, "data": {"v": big}}
                    for i in range(start, start + 100)])
            lines = list(stream._lines)
            stream.close()
        finally:
            client.close()
    assert len(lines) < 2000  # ended before the writes did
    assert all(line.startswith('{"type":"ADDED"') for line in lines)

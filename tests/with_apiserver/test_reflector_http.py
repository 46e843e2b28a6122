"""Reflector over HTTP against FakeAPIServer: the cache follows the server through faults.

Writes go through the official client; the reflector lists and watches through
``ListWatch.for_resource``. Backoff is shortened so recoveries take milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import helpers
import kubernetes
import pytest
from helpers import CONFIGMAPS, cm, cm_manifest

from kinformer import errors
from kinformer.backoff import Backoff, BackoffManager
from kinformer.cache.store import Indexer
from kinformer.client.listerwatcher import ListOptions
from kinformer.client.listwatch import ListWatch
from kinformer.reflector.reflector import Reflector
from kinformer.testing import FakeAPIServer, wait_for
from kinformer.testing.clock import FakeClock

TIMEOUT = 5.0


def fast_backoff() -> BackoffManager:
    return BackoffManager(Backoff(duration=0.02, cap=0.1))


class Running(helpers.Background):
    """A reflector into an Indexer, run on a thread of its own until ``stop``."""

    def __init__(self, client: Any, **kwargs: Any) -> None:
        self.store = Indexer()
        self.errors: list[BaseException] = []
        kwargs.setdefault("backoff", fast_backoff())
        self.reflector = Reflector(
            ListWatch.for_resource(client, CONFIGMAPS, namespace="default"),
            self.store,
            name="configmaps",
            watch_error_handler=lambda r, e: self.errors.append(e),
            **kwargs,
        )
        super().__init__(self.reflector.run)

    def data(self) -> dict[str, str]:
        return {o["metadata"]["name"]: o["data"]["v"] for o in self.store.list()}

    def converges_to(self, apiserver: FakeAPIServer) -> bool:
        def same() -> bool:
            objs = apiserver.list_objects(CONFIGMAPS, "default")
            return self.data() == {o["metadata"]["name"]: o["data"]["v"] for o in objs}

        return wait_for(same, TIMEOUT)


@pytest.fixture
def core(api_client: Any) -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(api_client)


@pytest.fixture
def running(api_client: Any) -> Iterator[Running]:
    r = Running(api_client)
    yield r
    r.stop()


def list_requests(apiserver: FakeAPIServer) -> list[dict[str, str]]:
    return [
        q
        for method, path, q, _ in apiserver.requests
        if method == "GET" and "configmaps" in path and q.get("watch") not in ("true", "1")
    ]


def test_lists_then_follows_writes_made_through_the_official_client(
    apiserver: FakeAPIServer, api_client: Any, core: kubernetes.client.CoreV1Api
) -> None:
    apiserver.bulk_create(CONFIGMAPS, [cm(f"cm-{i}", None, "default", data={"v": "1"}) for i in range(7)])
    r = Running(api_client)
    try:
        assert wait_for(lambda: len(r.store.list()) == 7, TIMEOUT)
        assert [q.get("resourceVersion") for q in list_requests(apiserver)] == ["0"]
        assert apiserver.wait_for_watchers(CONFIGMAPS, 1, TIMEOUT)
        core.create_namespaced_config_map("default", cm_manifest("new", {"v": "x"}))
        core.patch_namespaced_config_map("cm-0", "default", {"data": {"v": "2"}})
        core.delete_namespaced_config_map("cm-1", "default")
        assert r.converges_to(apiserver)
        assert r.reflector.last_sync_resource_version() == apiserver.current_resource_version()
    finally:
        r.stop()


def test_dropped_watches_and_compaction_end_with_the_cache_equal_to_the_server(
    apiserver: FakeAPIServer, running: Running, core: kubernetes.client.CoreV1Api
) -> None:
    for i in range(3):
        core.create_namespaced_config_map("default", cm_manifest(f"cm-{i}", {"v": "1"}))
    assert running.converges_to(apiserver)
    assert apiserver.wait_for_watchers(CONFIGMAPS, 1, TIMEOUT)
    apiserver.drop_watches()
    core.delete_namespaced_config_map("cm-0", "default")
    assert running.converges_to(apiserver)
    assert apiserver.wait_for_watchers(CONFIGMAPS, 1, TIMEOUT)
    apiserver.compact()
    apiserver.drop_watches()
    core.create_namespaced_config_map("default", cm_manifest("cm-9", {"v": "1"}))
    core.delete_namespaced_config_map("cm-1", "default")
    assert running.converges_to(apiserver)


def test_a_paged_relist_after_a_compaction_lists_at_the_current_version_and_survives_expiry(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    # pages of 2: the relist at the last version is an Exact list on a real server (a version
    # with a limit), so after a compaction it is 410 and the reflector lists at "" instead; a
    # page of that list expiring under it falls back to one whole list
    apiserver.bulk_create(CONFIGMAPS, [cm(f"cm-{i}", None, "default", data={"v": "1"})
                                       for i in range(5)])
    expired: list[str] = []

    def tweak(options: ListOptions) -> None:
        if options.continue_token and not expired:  # the first continuation: its page expires
            expired.append(options.continue_token)
            apiserver.create(CONFIGMAPS, cm("late", None, "default", data={"v": "1"}))
            apiserver.compact()

    store = Indexer()
    reflector = Reflector(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default",
                               tweak_list_options=tweak),
        store, name="paged", page_size=2, backoff=fast_backoff())
    with helpers.running(reflector.run):
        assert wait_for(lambda: len(store.list()) == 5, TIMEOUT)
        assert apiserver.wait_for_watchers(CONFIGMAPS, 1, TIMEOUT)
        synced = reflector.last_sync_resource_version()
        # a write the watch does not see, then a compaction: the watch's version is gone
        apiserver.create(CONFIGMAPS, cm("elsewhere", None, "kube-system", data={"v": "1"}))
        apiserver.compact()
        apiserver.drop_watches()
        assert wait_for(lambda: len(store.list()) == 6, TIMEOUT)
        # the reflector sets its version once the store has taken the list: a moment later
        current = str(apiserver.current_resource_version())
        assert wait_for(lambda: reflector.last_sync_resource_version() == current, TIMEOUT)
    lists = [(q.get("resourceVersion"), q.get("limit"), bool(q.get("continue")), code)
             for method, path, q, code in apiserver.requests
             if method == "GET" and "configmaps" in path and q.get("watch") != "true"]
    assert lists == [
        ("0", "2", False, 200),  # at "0" the limit is ignored: one page
        (synced, "2", False, 410),  # Exact at a compacted version
        (None, "2", False, 200),  # the current version, in pages
        (None, "2", True, 410),  # its second page expired
        (None, None, False, 200),  # one whole list at the current version instead
    ]
    assert sorted(o["metadata"]["name"] for o in store.list()) == sorted(
        o["metadata"]["name"] for o in apiserver.list_objects(CONFIGMAPS, "default"))


def test_a_server_restored_to_an_older_state_is_listed_again_at_its_current_version() -> None:
    # a server restored from a backup is behind the reflector's version: the watch and the
    # relist there answer 504 with cause ResourceVersionTooLarge, and the list at "" (the
    # current version) brings the store to the restored state
    before = FakeAPIServer(future_rv_wait=0.2)
    before.start()
    port = before.port
    try:
        before.bulk_create(CONFIGMAPS, [cm(f"cm-{i}", None, "default", data={"v": "1"})
                                        for i in range(5)])
        client = before.api_client()
        r = Running(client)
        try:
            assert r.converges_to(before)
            assert before.wait_for_watchers(CONFIGMAPS, 1, TIMEOUT)
            ahead = r.reflector.last_sync_resource_version()
            before.stop()
            with FakeAPIServer(port=port, future_rv_wait=0.2) as restored:
                restored.create(CONFIGMAPS, cm("restored", None, "default", data={"v": "2"}))
                assert int(ahead) > int(restored.current_resource_version())
                assert wait_for(lambda: r.data() == {"restored": "2"}, TIMEOUT)
                current = str(restored.current_resource_version())  # set once the store took the list
                assert wait_for(lambda: r.reflector.last_sync_resource_version() == current, TIMEOUT)
                lists = [(q.get("resourceVersion"), code) for method, path, q, code
                         in restored.requests if method == "GET" and "configmaps" in path
                         and q.get("watch") != "true"]
                assert lists[-2:] == [(ahead, 504), (None, 200)]
        finally:
            r.stop()
            client.close()
    finally:
        before.stop()


def test_a_garbage_watch_line_is_never_cached_and_the_reflector_recovers(
    apiserver: FakeAPIServer, running: Running, core: kubernetes.client.CoreV1Api
) -> None:
    core.create_namespaced_config_map("default", cm_manifest("a", {"v": "1"}))
    assert running.converges_to(apiserver)
    assert apiserver.wait_for_watchers(CONFIGMAPS, 1, TIMEOUT)
    apiserver.inject_watch_garbage(b'{"type": "ADDED", "object": {"metadata": {}}}')
    assert wait_for(lambda: any(isinstance(e, errors.DecodeError) for e in running.errors), TIMEOUT)
    core.create_namespaced_config_map("default", cm_manifest("b", {"v": "1"}))
    assert running.converges_to(apiserver)


def test_forbidden_lists_are_visible_as_last_error_until_allowed(
    apiserver: FakeAPIServer, api_client: Any, core: kubernetes.client.CoreV1Api
) -> None:
    core.create_namespaced_config_map("default", cm_manifest("a", {"v": "1"}))
    apiserver.forbid("configmaps")
    r = Running(api_client)
    try:
        assert wait_for(lambda: isinstance(r.reflector.last_error(), errors.ForbiddenError), TIMEOUT)
        assert wait_for(lambda: r.errors, TIMEOUT)  # the handler hears of it just after last_error
        assert isinstance(r.errors[0], errors.ForbiddenError)
        assert r.store.list() == []
        apiserver.allow("configmaps")
        assert r.converges_to(apiserver)
        assert r.reflector.last_error() is None
    finally:
        r.stop()


def test_stop_returns_promptly_while_a_watch_is_open(apiserver: FakeAPIServer, api_client: Any) -> None:
    r = Running(api_client)
    assert apiserver.wait_for_watchers(CONFIGMAPS, 1, TIMEOUT)
    r.stop()
    assert wait_for(lambda: apiserver.watcher_count(CONFIGMAPS) == 0, TIMEOUT)


def test_watch_list_syncs_from_the_stream_without_a_list_request(
    apiserver: FakeAPIServer, api_client: Any, core: kubernetes.client.CoreV1Api
) -> None:
    apiserver.bulk_create(CONFIGMAPS, [cm(f"cm-{i}", None, "default", data={"v": "1"}) for i in range(4)])
    r = Running(api_client, use_watch_list=True)
    try:
        assert r.converges_to(apiserver)
        core.create_namespaced_config_map("default", cm_manifest("late", {"v": "1"}))
        assert r.converges_to(apiserver)
        assert list_requests(apiserver) == []
    finally:
        r.stop()


def test_a_watch_list_slower_than_its_timeout_but_flowing_syncs_from_the_stream(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    apiserver.bulk_create(CONFIGMAPS, [cm(f"cm-{i}", None, "default", data={"v": "1"}) for i in range(30)])
    apiserver.pace_initial_events(0.05)  # 1.5 s of initial events, three times the timeout
    r = Running(api_client, use_watch_list=True, initial_events_timeout=0.5)
    try:
        assert wait_for(r.reflector.has_synced_once, TIMEOUT)
        assert r.converges_to(apiserver)
        assert list_requests(apiserver) == []
        assert r.errors == []
    finally:
        r.stop()


def test_a_watch_list_that_stalls_before_its_end_bookmark_lists_a_timeout_later(
    apiserver: FakeAPIServer, api_client: Any, core: kubernetes.client.CoreV1Api
) -> None:
    apiserver.bulk_create(CONFIGMAPS, [cm(f"cm-{i}", None, "default", data={"v": "1"}) for i in range(10)])
    apiserver.pace_initial_events(0.05, end_bookmark=False)  # as a server ignoring sendInitialEvents
    r = Running(api_client, use_watch_list=True, initial_events_timeout=0.5)
    try:
        assert wait_for(lambda: list_requests(apiserver), TIMEOUT)
        assert isinstance(r.errors[0], errors.SyncTimeoutError)
        assert "no object for 0.5s after 10 objects" in str(r.errors[0])
        assert r.converges_to(apiserver)
        assert r.reflector.last_error() is None
        core.create_namespaced_config_map("default", cm_manifest("late", {"v": "1"}))
        assert r.converges_to(apiserver)  # watched from the list's version
    finally:
        r.stop()


def test_a_watch_list_flowing_without_its_end_bookmark_lists_at_its_timeout_seconds(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    apiserver.bulk_create(CONFIGMAPS, [cm(f"cm-{i}", None, "default", data={"v": "1"}) for i in range(400)])
    apiserver.pace_initial_events(0.02, end_bookmark=False)  # 8 s of objects, then nothing
    seen: list[str] = []

    def record(obj: Any) -> Any:
        seen.append(obj["metadata"]["name"])
        return obj

    clock = FakeClock()  # the reflector's time: a minute passes per few objects
    r = Running(api_client, use_watch_list=True, clock=clock, random=lambda: 0.0, transform=record)
    try:
        stepped = 0.0
        while not list_requests(apiserver):
            before = len(seen)  # two more: the first of them was counted
            assert wait_for(lambda b=before: len(seen) >= b + 2 or list_requests(apiserver), TIMEOUT)
            waiting = [w for w in clock.waiters() if w > 0]
            if waiting and not list_requests(apiserver):
                clock.step(min(waiting))
                stepped += min(waiting)
            assert stepped <= 300.0
        assert stepped == pytest.approx(300.0)  # timeoutSeconds=300: min_watch_timeout, random() = 0
        assert isinstance(r.errors[0], errors.SyncTimeoutError)
        assert "not within 300s, the watch's timeoutSeconds" in str(r.errors[0])
        assert wait_for(lambda: len(r.store.list()) == 400, TIMEOUT)  # listed
    finally:
        r.stop()


def test_https_with_a_token_comes_from_the_api_client_configuration() -> None:
    with FakeAPIServer(token="s3cret") as server:
        server.create(CONFIGMAPS, cm("a", None, "default"))
        client = server.api_client()
        try:
            result = ListWatch.for_resource(client, CONFIGMAPS, namespace="default").list(ListOptions())
            assert [o["metadata"]["name"] for o in result.items] == ["a"]
            client.configuration.api_key = {"authorization": "wrong"}
            with pytest.raises(errors.UnauthorizedError):
                ListWatch.for_resource(client, CONFIGMAPS).list(ListOptions())
        finally:
            client.close()


def test_a_dynamic_client_is_accepted(apiserver: FakeAPIServer, api_client: Any) -> None:
    apiserver.create(CONFIGMAPS, cm("a", None, "default"))
    dynamic = kubernetes.dynamic.DynamicClient(api_client)
    result = ListWatch.for_resource(dynamic, CONFIGMAPS).list(ListOptions())
    assert [o["metadata"]["name"] for o in result.items] == ["a"]

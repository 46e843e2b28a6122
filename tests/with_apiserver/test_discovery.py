"""Discovery and the discovering informer factory (kcp ddsif) over FakeAPIServer.

CRDs are created and deleted over HTTP with the official client.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

import pytest
from helpers import CONFIGMAPS, crd, names
from kubernetes import client as k8s

from kinformer import Context, _threads
from kinformer.client import discovery
from kinformer.client.discovery import CachedDiscoveryClient
from kinformer.errors import AlreadyStartedError
from kinformer.gvr import GroupVersionResource
from kinformer.managers.crd import CRD_GVR
from kinformer.managers.discovering_factory import (
    SETTLE_PASSES,
    DiscoveringDynamicSharedInformerFactory,
    GVREventHandlerFuncs,
)
from kinformer.testing import FakeAPIServer, FakeClock, wait_for

WIDGETS = GroupVersionResource("example.com", "v1", "widgets")
GADGETS = GroupVersionResource("example.com", "v1", "gadgets")
SPROCKETS = GroupVersionResource("example.com", "v1", "sprockets")
POLL = 30.0
TIMEOUT = 5.0


def install(api_client: Any, gvr: GroupVersionResource) -> None:
    k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition(crd(gvr))


def uninstall(api_client: Any, gvr: GroupVersionResource) -> None:
    k8s.ApiextensionsV1Api(api_client).delete_custom_resource_definition(gvr.group_resource)


def create_object(api_client: Any, gvr: GroupVersionResource, name: str) -> None:
    body = {"apiVersion": gvr.group_version, "kind": "Widget", "metadata": {"name": name}}
    k8s.CustomObjectsApi(api_client).create_namespaced_custom_object(
        gvr.group, gvr.version, "default", gvr.resource, body
    )


def example_only(gvr: GroupVersionResource) -> bool:
    return gvr.group == "example.com"


def polled(api_client: Any) -> tuple[FakeClock, DiscoveringDynamicSharedInformerFactory]:
    """A factory of the example types on a fake clock that only polls (no CRD watch)."""
    clock = FakeClock()
    return clock, DiscoveringDynamicSharedInformerFactory(
        api_client, example_only, poll_interval=POLL, clock=clock, watch_crds=False
    )


def started(ddsif: DiscoveringDynamicSharedInformerFactory, ctx: Context) -> None:
    ddsif.start(ctx)
    assert ddsif.wait_ready(TIMEOUT)


def running(ddsif: DiscoveringDynamicSharedInformerFactory) -> set[GroupVersionResource]:
    synced, not_synced = ddsif.informers()
    return set(synced) | set(not_synced)


def poll_once(clock: FakeClock) -> None:
    """Step the fake clock one poll interval and wait until the worker's next pass finished."""
    assert wait_for(lambda: clock.waiters() == [POLL], TIMEOUT)
    clock.step(POLL)
    assert wait_for(lambda: clock.waiters() == [POLL], TIMEOUT)


# -- CachedDiscoveryClient ----------------------------------------------------------------------


def test_discovery_finds_served_types_with_kind_and_scope(apiserver: FakeAPIServer, api_client: Any) -> None:
    found = CachedDiscoveryClient(api_client).server_resources()
    assert found.complete
    cms = found.resources[CONFIGMAPS]
    assert (cms.group_version_kind.kind, cms.is_cluster_scoped) == ("ConfigMap", False)
    namespaces = found.resources[GroupVersionResource("", "v1", "namespaces")]
    assert (namespaces.group_version_kind.kind, namespaces.is_cluster_scoped) == ("Namespace", True)
    assert CRD_GVR in found.resources
    assert GroupVersionResource("apps", "v1", "deployments") in {
        m.group_version_resource for m in found.preferred_resources()
    }


def test_resource_lists_keep_only_listable_watchable_types_and_no_subresources() -> None:
    doc = {
        "groupVersion": "v1",
        "resources": [
            {"name": "pods", "namespaced": True, "kind": "Pod", "verbs": ["get", "list", "watch"]},
            {"name": "pods/status", "namespaced": True, "kind": "Pod", "verbs": ["get", "list", "watch"]},
            {"name": "bindings", "namespaced": True, "kind": "Binding", "verbs": ["create"]},
            {"name": "nodes", "namespaced": False, "kind": "Node", "verbs": ["list", "watch"]},
        ],
    }
    resources = discovery.parse_api_resources("v1", doc)
    assert [(r.group_version_resource.resource, r.listable) for r in resources] == [
        ("pods", True),
        ("bindings", False),
        ("nodes", True),
    ]
    metas = [r.meta() for r in resources if r.listable]
    assert [(m.group_version_resource.resource, m.is_cluster_scoped) for m in metas] == [
        ("pods", False),
        ("nodes", True),
    ]


def test_group_versions_are_cached_until_invalidated_or_expired(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    clock = FakeClock()
    cached = CachedDiscoveryClient(api_client, ttl=60, clock=clock)
    install(api_client, WIDGETS)
    assert WIDGETS in cached.server_resources().resources  # a new group is seen at once

    install(api_client, GADGETS)  # same group version: its cached list is still used
    assert GADGETS not in cached.server_resources().resources
    cached.invalidate()
    assert GADGETS in cached.server_resources().resources

    install(api_client, SPROCKETS)
    assert SPROCKETS not in cached.server_resources().resources
    clock.step(60)
    assert SPROCKETS in cached.server_resources().resources


# -- ddsif, watching CRDs (real time) ----------------------------------------------------------


def test_a_new_crd_gets_a_running_informer_and_one_notification(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context
) -> None:
    ddsif = DiscoveringDynamicSharedInformerFactory(api_client, example_only)
    events: list[tuple[GroupVersionResource, str]] = []
    ddsif.add_event_handler(
        GVREventHandlerFuncs(add_func=lambda g, o: events.append((g, o["metadata"]["name"])))
    )
    notes = ddsif.subscribe("test")
    started(ddsif, ctx)
    assert running(ddsif) == set()
    assert notes.empty()  # nothing of ours is served: nothing changed

    install(api_client, WIDGETS)
    notes.get(timeout=TIMEOUT)
    assert running(ddsif) == {WIDGETS}
    inf = ddsif.for_resource(WIDGETS).informer()
    assert inf.wait_for_sync(TIMEOUT)
    assert ddsif.informers() == ({WIDGETS: inf}, [])

    create_object(api_client, WIDGETS, "w1")
    assert wait_for(lambda: (WIDGETS, "w1") in events, TIMEOUT)
    assert ddsif.for_resource(WIDGETS).lister().by_namespace("default").get("w1")["metadata"]["name"] == "w1"
    ddsif.stop()
    assert inf.is_stopped()


def test_an_informer_that_cannot_list_is_reported_not_synced(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context
) -> None:
    ddsif = DiscoveringDynamicSharedInformerFactory(api_client, example_only)
    notes = ddsif.subscribe("test")
    started(ddsif, ctx)
    apiserver.forbid("widgets", "list")
    install(api_client, WIDGETS)
    notes.get(timeout=TIMEOUT)
    assert ddsif.informers() == ({}, [WIDGETS])
    inf = ddsif.for_resource(WIDGETS).informer()
    assert wait_for(lambda: inf.last_error() is not None, TIMEOUT)
    assert ddsif.informers() == ({}, [WIDGETS])

    apiserver.allow("widgets", "list")
    assert wait_for(lambda: WIDGETS in ddsif.informers()[0], TIMEOUT)
    ddsif.stop()


def test_a_deleted_crd_stops_its_informer_and_a_recreated_one_gets_a_fresh_informer(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context
) -> None:
    ddsif = DiscoveringDynamicSharedInformerFactory(api_client, example_only)
    notes = ddsif.subscribe("test")
    started(ddsif, ctx)
    install(api_client, WIDGETS)
    notes.get(timeout=TIMEOUT)
    first = ddsif.for_resource(WIDGETS).informer()
    create_object(api_client, WIDGETS, "w1")
    assert wait_for(lambda: names(first.get_indexer().list()) == ["w1"], TIMEOUT)

    uninstall(api_client, WIDGETS)
    notes.get(timeout=TIMEOUT)
    assert first.is_stopped()  # stopped and joined before subscribers hear of it
    assert running(ddsif) == set()
    assert not [t for t in _threads.kinformer_threads() if "example.com/v1/widgets" in t.name]

    install(api_client, WIDGETS)
    notes.get(timeout=TIMEOUT)
    second = ddsif.for_resource(WIDGETS).informer()
    assert second is not first
    assert second.wait_for_sync(TIMEOUT)
    create_object(api_client, WIDGETS, "w2")
    # a fresh cache: w1 went with the CRD
    assert wait_for(lambda: names(second.get_indexer().list()) == ["w2"], TIMEOUT)
    ddsif.stop()


def test_stop_stops_every_informer_and_tells_subscribers(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context
) -> None:
    install(api_client, WIDGETS)
    install(api_client, GADGETS)
    ddsif = DiscoveringDynamicSharedInformerFactory(api_client, example_only)
    notes = ddsif.subscribe("test")
    started(ddsif, ctx)
    notes.get(timeout=TIMEOUT)
    informers = [ddsif.for_resource(g).informer() for g in (WIDGETS, GADGETS)]
    with pytest.raises(AlreadyStartedError):
        ddsif.start(ctx)

    ddsif.stop()
    assert all(inf.is_stopped() for inf in informers)
    assert ddsif.informers() == ({}, [])
    notes.get(timeout=0)  # the shutdown itself was announced


def test_a_plain_event_stops_the_factory_it_started(apiserver: FakeAPIServer, api_client: Any) -> None:
    install(api_client, WIDGETS)
    stop = threading.Event()
    ddsif = DiscoveringDynamicSharedInformerFactory(api_client, example_only)
    ddsif.start(stop)
    assert ddsif.wait_ready(TIMEOUT)
    inf = ddsif.for_resource(WIDGETS).informer()
    assert inf.wait_for_sync(TIMEOUT)
    stop.set()
    assert wait_for(inf.is_stopped, TIMEOUT)
    ddsif.stop()


def test_stop_also_ends_a_blocking_run(apiserver: FakeAPIServer, api_client: Any, ctx: Context) -> None:
    install(api_client, WIDGETS)
    ddsif = DiscoveringDynamicSharedInformerFactory(api_client, example_only, watch_crds=False)
    runner = threading.Thread(target=ddsif.run, args=(ctx,), name="test-ddsif-run")
    runner.start()
    assert ddsif.wait_ready(TIMEOUT)
    inf = ddsif.for_resource(WIDGETS).informer()
    ddsif.stop()
    assert inf.is_stopped()
    runner.join(TIMEOUT)
    assert not runner.is_alive()
    assert not ctx.cancelled()  # only the factory's own context was cancelled


def test_the_with_form_starts_and_stops_the_factory(apiserver: FakeAPIServer, api_client: Any) -> None:
    install(api_client, WIDGETS)
    with DiscoveringDynamicSharedInformerFactory(api_client, example_only, watch_crds=False) as ddsif:
        assert ddsif.wait_ready(TIMEOUT)
        inf = ddsif.for_resource(WIDGETS).informer()
        assert inf.wait_for_sync(TIMEOUT)
    assert inf.is_stopped()
    assert ddsif.informers() == ({}, [])


# -- ddsif on a fake clock ----------------------------------------------------------------------


def test_crd_changes_wait_at_least_a_second_after_the_previous_pass(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context
) -> None:
    clock = FakeClock()
    ddsif = DiscoveringDynamicSharedInformerFactory(api_client, example_only, poll_interval=POLL, clock=clock)
    notes = ddsif.subscribe("test")
    started(ddsif, ctx)
    assert apiserver.wait_for_watchers(CRD_GVR, 1, timeout=TIMEOUT)

    install(api_client, WIDGETS)
    install(api_client, GADGETS)
    assert wait_for(lambda: clock.waiters() == [1.0], TIMEOUT)  # woken, now batching
    assert notes.empty()
    assert running(ddsif) == set()

    clock.step(1.0)
    notes.get(timeout=TIMEOUT)
    assert running(ddsif) == {WIDGETS, GADGETS}
    ddsif.stop()


def test_a_crd_deleted_before_the_crd_watch_first_listed_is_still_noticed(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context
) -> None:
    install(api_client, GADGETS)
    clock = FakeClock()
    ddsif = DiscoveringDynamicSharedInformerFactory(api_client, example_only, poll_interval=POLL, clock=clock)
    notes = ddsif.subscribe("test")
    apiserver.set_delay(1.0, "list")  # the CRD informer's first list is answered late
    started(ddsif, ctx)
    notes.get(timeout=TIMEOUT)
    assert running(ddsif) == {GADGETS}
    uninstall(api_client, GADGETS)  # so that list never shows it, and no CRD event tells of it
    apiserver.set_delay(0, "list")

    def gadgets_gone() -> bool:
        if clock.waiters() == [1.0]:  # not the poll interval: the CRD watch was still catching up
            clock.step(1.0)
        return running(ddsif) == set()

    assert wait_for(gadgets_gone, TIMEOUT)
    notes.get(timeout=TIMEOUT)
    ddsif.stop()


def test_a_crd_watch_that_cannot_list_goes_back_to_the_poll_interval(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context, caplog: pytest.LogCaptureFixture,
) -> None:
    """CRDs forbidden (a common RBAC): the CRD informer never synced, so every pass was a
    catching-up pass, a second apart, reading all of discovery again, for good."""
    apiserver.forbid("customresourcedefinitions", verb="list")
    clock = FakeClock()
    ddsif = DiscoveringDynamicSharedInformerFactory(api_client, example_only, poll_interval=POLL, clock=clock)
    started(ddsif, ctx)
    fast = 0
    while True:
        assert wait_for(lambda: any(w > 0 for w in clock.waiters()), TIMEOUT)
        wait = min(w for w in clock.waiters() if w > 0)
        if wait == POLL:
            break
        assert wait == 1.0 and fast < SETTLE_PASSES, f"pass {fast + 1} waits {wait}s"
        fast += 1
        clock.step(wait)
    assert fast == SETTLE_PASSES
    said = [r for r in caplog.records if "CRD informer has not synced" in r.getMessage()]
    assert len(said) == 1 and said[0].levelname == "WARNING"
    assert "Forbidden" in said[0].getMessage() or "403" in said[0].getMessage(), said[0].getMessage()
    ddsif.stop()


def test_without_a_crd_watch_discovery_is_polled_and_only_changes_notify(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context
) -> None:
    clock, ddsif = polled(api_client)
    notes = ddsif.subscribe("test")
    started(ddsif, ctx)
    install(api_client, WIDGETS)
    assert running(ddsif) == set()

    poll_once(clock)
    notes.get(timeout=0)
    assert running(ddsif) == {WIDGETS}
    first = ddsif.for_resource(WIDGETS).informer()

    poll_once(clock)  # unchanged source: no notification
    assert notes.empty()
    assert ddsif.for_resource(WIDGETS).informer() is first

    install(api_client, GADGETS)  # same group version: polling reads it again anyway
    poll_once(clock)
    notes.get(timeout=0)
    assert running(ddsif) == {WIDGETS, GADGETS}

    uninstall(api_client, WIDGETS)
    poll_once(clock)
    notes.get(timeout=0)
    assert running(ddsif) == {GADGETS}
    assert first.is_stopped()
    ddsif.stop()


def test_subscriptions_coalesce_and_resubscribing_replaces_the_queue(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context
) -> None:
    clock, ddsif = polled(api_client)
    old = ddsif.subscribe("manager")
    other = ddsif.subscribe("other")
    started(ddsif, ctx)
    for gvr in (WIDGETS, GADGETS):
        install(api_client, gvr)
        poll_once(clock)
    assert old.qsize() == 1  # two changes, one pending notification

    new = ddsif.subscribe("manager")
    assert new is not old
    old.get_nowait()
    ddsif.unsubscribe("other")
    other.get_nowait()
    install(api_client, SPROCKETS)
    poll_once(clock)
    new.get(timeout=0)
    assert old.empty()
    assert other.empty()
    ddsif.stop()


def test_unsubscribing_with_the_old_queue_leaves_a_newer_subscription_of_the_id(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context
) -> None:
    """A subscriber that stops after its id subscribed again (a manager restarted while its
    previous run still stopped) ends its own subscription only, not the newer one."""
    clock, ddsif = polled(api_client)
    old = ddsif.subscribe("manager")
    new = ddsif.subscribe("manager")
    ddsif.unsubscribe("manager", old)
    started(ddsif, ctx)
    install(api_client, WIDGETS)
    poll_once(clock)
    new.get(timeout=0)
    assert old.empty()

    ddsif.unsubscribe("manager", new)
    install(api_client, GADGETS)
    poll_once(clock)
    assert new.empty()
    ddsif.stop()


def test_an_informer_asked_for_a_type_that_is_not_served_is_dropped_by_the_next_pass(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context
) -> None:
    clock, ddsif = polled(api_client)
    notes = ddsif.subscribe("test")
    started(ddsif, ctx)
    unserved = ddsif.for_resource(CONFIGMAPS)  # rejected by the filter: never started
    assert ddsif.for_resource(CONFIGMAPS) is unserved
    assert running(ddsif) == set()

    poll_once(clock)
    notes.get(timeout=0)
    assert ddsif.for_resource(CONFIGMAPS) is not unserved
    assert not unserved.informer().is_stopped()  # it never ran
    ddsif.stop()


def test_by_default_every_served_type_gets_an_informer(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context
) -> None:
    install(api_client, WIDGETS)
    ddsif = DiscoveringDynamicSharedInformerFactory(api_client, poll_interval=POLL, watch_crds=False)
    started(ddsif, ctx)
    served = set(CachedDiscoveryClient(api_client).server_resources().resources)
    assert running(ddsif) == served
    assert {WIDGETS, CONFIGMAPS, CRD_GVR} <= served
    assert ddsif.for_resource(WIDGETS).informer().wait_for_sync(TIMEOUT)
    ddsif.stop()


def test_a_late_gvr_handler_sees_only_later_events(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context
) -> None:
    install(api_client, WIDGETS)
    create_object(api_client, WIDGETS, "before")
    ddsif = DiscoveringDynamicSharedInformerFactory(api_client, example_only)
    early: queue.Queue[str] = queue.Queue()
    ddsif.add_event_handler(GVREventHandlerFuncs(add_func=lambda g, o: early.put(o["metadata"]["name"])))
    started(ddsif, ctx)
    # Synced means the cache holds "before"; its notification runs later, on the handler thread.
    # Once the early handler has it, the fan-out for "before" is over.
    assert early.get(timeout=TIMEOUT) == "before"
    seen: queue.Queue[str] = queue.Queue()
    ddsif.add_event_handler(GVREventHandlerFuncs(add_func=lambda g, o: seen.put(o["metadata"]["name"])))
    create_object(api_client, WIDGETS, "after")
    assert seen.get(timeout=TIMEOUT) == "after"
    assert early.get(timeout=TIMEOUT) == "after"
    ddsif.stop()


def test_shutdown_is_stop_by_the_name_every_factory_has(
        apiserver: FakeAPIServer, api_client: Any, ctx: Context) -> None:
    install(api_client, WIDGETS)
    ddsif = DiscoveringDynamicSharedInformerFactory(api_client, example_only, watch_crds=False)
    ddsif.start(ctx)
    assert ddsif.wait_ready(TIMEOUT)
    inf = ddsif.for_resource(WIDGETS).informer()
    ddsif.shutdown()
    assert inf.is_stopped()  # joined before shutdown returned
    assert not [t for t in _threads.kinformer_threads() if t.name == "kinformer-ddsif"]
    assert not ctx.cancelled()


def test_a_failed_pass_is_tried_again_soon_then_less_often(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context
) -> None:
    """A server starting up answered discovery 503 at the first pass: the factory was not
    ready, and started no informer, until the next poll interval."""
    install(api_client, WIDGETS)
    apiserver.fail_discovery(count=3, path="/apis")
    clock = FakeClock()
    ddsif = DiscoveringDynamicSharedInformerFactory(api_client, example_only, poll_interval=POLL, clock=clock)
    ddsif.start(ctx)
    for wait in (1.0, 2.0, 4.0):  # each failure waits twice as long, up to the poll interval
        assert wait_for(lambda: clock.waiters() == [wait], TIMEOUT), clock.waiters()  # noqa: B023
        assert not ddsif.ready()
        clock.step(wait)
    assert ddsif.wait_ready(TIMEOUT)
    assert wait_for(lambda: running(ddsif) == {WIDGETS}, TIMEOUT)
    ddsif.stop()

"""FakeAPIServer.preload: many objects stored at once, each as a create stores it, all or none."""

from __future__ import annotations

import copy
import gc
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CONFIGMAPS
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch

from kinformer import errors
from kinformer.gvr import GroupVersionResource
from kinformer.testing import FakeAPIServer

NS = "default"
PODS = GroupVersionResource("", "v1", "pods")
TESTING_DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def pod(name: str, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, **extra},
            "spec": {"containers": [{"name": "app", "image": "registry.example.com/app:1.0",
                                     "ports": [{"containerPort": 8080}]}]}}


def configmap(name: str, namespace: str = NS) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "data": {"k": name}}


def test_preloaded_objects_are_listed_as_created_with_increasing_versions_and_defaults(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    given = [pod(f"p{i}") for i in range(5)]
    untouched = copy.deepcopy(given)
    before = int(apiserver.current_resource_version())
    last = apiserver.preload(PODS, given)

    assert given == untouched  # the caller's objects are copied, not stamped
    listed = k8s.CoreV1Api(api_client).list_namespaced_pod(NS).items
    assert [p.metadata.name for p in listed] == [f"p{i}" for i in range(5)]
    versions = [int(p.metadata.resource_version) for p in listed]
    assert versions == list(range(before + 1, before + 6))  # one each, in the order given
    assert last == str(versions[-1]) == apiserver.current_resource_version()
    assert len({p.metadata.uid for p in listed}) == 5
    assert all(p.metadata.creation_timestamp is not None for p in listed)
    first = listed[0]
    container = first.spec.containers[0]
    assert (container.image_pull_policy, container.termination_message_path) == (
        "IfNotPresent", "/dev/termination-log")
    assert container.ports[0].protocol == "TCP"
    assert (first.spec.restart_policy, first.spec.dns_policy) == ("Always", "ClusterFirst")
    assert (first.status.phase, first.status.qos_class) == ("Pending", "BestEffort")
    assert first.metadata.generation == 1


def test_preload_keeps_a_given_status_and_managed_fields_as_create_does(
    apiserver: FakeAPIServer,
) -> None:
    fields = [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
               "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
               "fieldsV1": {"f:status": {"f:phase": {}}}, "subresource": "status"}]
    running = dict(pod("p", managedFields=fields), status={"phase": "Running"})
    apiserver.preload(PODS, [running])
    created = apiserver.create(PODS, dict(pod("q", managedFields=fields),
                                          status={"phase": "Running"}))
    stored = apiserver.get(PODS, NS, "p")
    assert stored["status"]["phase"] == created["status"]["phase"] == "Running"
    assert stored["metadata"]["managedFields"] == created["metadata"]["managedFields"] == fields


def test_a_watch_sees_one_added_event_per_preloaded_object_in_order(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    since = apiserver.current_resource_version()
    apiserver.preload(CONFIGMAPS, (configmap(f"c{i}") for i in range(4)))
    seen = []
    stream = k8s_watch.Watch().stream(k8s.CoreV1Api(api_client).list_namespaced_config_map, NS,
                                      resource_version=since, timeout_seconds=5)
    for event in stream:
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 4:
            break
    stream.close()
    assert seen == [("ADDED", f"c{i}") for i in range(4)]


@pytest.mark.parametrize(("bad", "error", "named"), [
    ({"metadata": {"name": "Bad_Name", "namespace": NS}}, errors.InvalidError,
     "item 2 (default/Bad_Name): "),
    ({"metadata": {"name": "c", "namespace": "nowhere"}}, errors.NotFoundError,
     "item 2 (nowhere/c): "),
    ({"metadata": {"name": "c0", "namespace": NS}}, errors.ConflictError,
     "item 2 (default/c0): "),  # the same name as item 0
    ({"metadata": {"name": "c", "namespace": NS, "labels": ["a"]}}, errors.BadRequestError,
     "item 2 (default/c): "),
    ({"metadata": {"name": "c", "namespace": NS}, "data": {"k": {1, 2}}},
     errors.BadRequestError, "item 2 (default/c): the object cannot be encoded as JSON"),
    ("not an object", errors.BadRequestError, "item 2: "),
])
def test_a_refused_object_raises_its_create_error_naming_it_and_nothing_is_stored(
    apiserver: FakeAPIServer, bad: Any, error: type[errors.APIError], named: str,
) -> None:
    before = apiserver.current_resource_version()
    with pytest.raises(error) as info:
        apiserver.preload(CONFIGMAPS, [configmap("c0"), configmap("c1"), bad, configmap("c3")])
    assert info.value.message.startswith(named), info.value.message
    assert apiserver.list_objects(CONFIGMAPS, NS) == []
    assert apiserver.current_resource_version() == before


def test_a_name_already_stored_is_refused_and_nothing_else_is_stored(
    apiserver: FakeAPIServer,
) -> None:
    apiserver.create(CONFIGMAPS, configmap("b"))
    with pytest.raises(errors.ConflictError, match=r"item 1 \(default/b\): configmaps \"b\" "
                                                   r"already exists"):
        apiserver.preload(CONFIGMAPS, [configmap("a"), configmap("b")])
    assert [c["metadata"]["name"] for c in apiserver.list_objects(CONFIGMAPS, NS)] == ["b"]


def test_an_iterable_that_fails_midway_stores_nothing(apiserver: FakeAPIServer) -> None:
    def objects() -> Iterator[dict[str, Any]]:
        yield configmap("a")
        raise RuntimeError("the source broke")

    with pytest.raises(RuntimeError, match="the source broke"):
        apiserver.preload(CONFIGMAPS, objects())
    assert apiserver.list_objects(CONFIGMAPS, NS) == []
    assert apiserver.bulk_create(CONFIGMAPS, [configmap("a")]) == apiserver.current_resource_version()


def test_no_collection_runs_while_a_preload_copies_and_stores(apiserver: FakeAPIServer) -> None:
    """The cyclic collector would walk the growing set of stored objects again and again."""
    collections: list[int] = []
    began: list[int] = []

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    def objects() -> Iterator[dict[str, Any]]:
        began.append(len(collections))
        for i in range(3000):  # enough allocations for many young collections, if enabled
            yield configmap(f"c{i}")

    assert gc.isenabled()
    gc.callbacks.append(count)
    try:
        apiserver.preload(CONFIGMAPS, objects())
        during = len(collections) - began[0]
    finally:
        gc.callbacks.remove(count)
    assert gc.isenabled()
    assert during <= 1  # the one the collector may run as soon as it is back
    assert len(apiserver.list_objects(CONFIGMAPS, NS)) == 3000


def test_the_example_in_the_testing_guide_runs() -> None:
    section = TESTING_DOC.read_text(encoding="utf-8").split("## Server-side helpers", 1)[1]
    match = re.search(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.DOTALL)
    assert match is not None and "preload(" in match.group(1)
    exec(compile(match.group(1), str(TESTING_DOC), "exec"), {})

"""docs/examples/mirror_configmaps.py end to end over FakeAPIServer: creates, updates and deletes
propagate, hand edits are undone, foreign ConfigMaps are left alone, and nothing outlives stop."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from _helpers import load_example
from kubernetes import client as k8s

from kinformer import _threads
from kinformer.testing import wait_for

TIMEOUT = 5.0


mirror = load_example("mirror_configmaps")


def cm(name: str, data: dict[str, str], **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "data": data}


def copy_of(core: k8s.CoreV1Api, name: str) -> Any:
    try:
        return core.read_namespaced_config_map(name, "target")
    except k8s.ApiException as err:
        if err.status == 404:
            return None
        raise


@pytest.fixture
def core(api_client: Any) -> k8s.CoreV1Api:
    api = k8s.CoreV1Api(api_client)
    for ns in ("source", "target"):
        api.create_namespace({"metadata": {"name": ns}})
    return api


@pytest.fixture
def running_mirror(api_client: Any, core: k8s.CoreV1Api) -> Iterator[threading.Event]:
    stop = threading.Event()
    runner = threading.Thread(
        target=mirror.run_mirror, args=(api_client, "source", "target", stop), name="test-mirror"
    )
    runner.start()
    try:
        yield stop
    finally:
        stop.set()
        runner.join(TIMEOUT)
        assert not runner.is_alive()


def test_labelled_configmaps_are_mirrored_and_follow_their_source(
    core: k8s.CoreV1Api, running_mirror: threading.Event
) -> None:
    core.create_namespaced_config_map("source", cm("app", {"a": "1"}, **{"kinformer.io/mirror": "true"}))
    core.create_namespaced_config_map("source", cm("private", {"p": "1"}))
    assert wait_for(lambda: copy_of(core, "app") is not None, TIMEOUT)
    copy = copy_of(core, "app")
    assert copy.data == {"a": "1"}
    assert copy.metadata.labels == {"kinformer.io/mirrored-from": "source"}

    core.patch_namespaced_config_map("app", "source", {"data": {"a": "2"}})
    assert wait_for(lambda: copy_of(core, "app").data == {"a": "2"}, TIMEOUT)

    core.patch_namespaced_config_map("app", "target", {"data": {"a": "edited"}})  # undone
    assert wait_for(lambda: copy_of(core, "app").data == {"a": "2"}, TIMEOUT)
    core.delete_namespaced_config_map("app", "target")  # recreated
    assert wait_for(lambda: copy_of(core, "app") is not None, TIMEOUT)

    core.patch_namespaced_config_map(
        "private", "source", {"metadata": {"labels": {"kinformer.io/mirror": "true"}}}
    )
    assert wait_for(lambda: copy_of(core, "private") is not None, TIMEOUT)
    core.patch_namespaced_config_map(
        "private", "source", {"metadata": {"labels": {"kinformer.io/mirror": "false"}}}
    )
    assert wait_for(lambda: copy_of(core, "private") is None, TIMEOUT)

    core.delete_namespaced_config_map("app", "source")
    assert wait_for(lambda: copy_of(core, "app") is None, TIMEOUT)


def test_a_configmap_that_is_not_a_copy_is_left_alone(
    core: k8s.CoreV1Api, running_mirror: threading.Event
) -> None:
    core.create_namespaced_config_map("target", cm("taken", {"mine": "yes"}))
    core.create_namespaced_config_map("source", cm("taken", {"a": "1"}, **{"kinformer.io/mirror": "true"}))
    core.create_namespaced_config_map("source", cm("marker", {"m": "1"}, **{"kinformer.io/mirror": "true"}))
    assert wait_for(lambda: copy_of(core, "marker") is not None, TIMEOUT)
    assert copy_of(core, "taken").data == {"mine": "yes"}


def test_mirroring_starts_from_what_exists_and_stop_leaves_no_thread(
    api_client: Any, core: k8s.CoreV1Api
) -> None:
    core.create_namespaced_config_map("source", cm("early", {"e": "1"}, **{"kinformer.io/mirror": "true"}))
    stop = threading.Event()
    runner = threading.Thread(
        target=mirror.run_mirror, args=(api_client, "source", "target", stop), name="test-mirror"
    )
    runner.start()
    assert wait_for(lambda: copy_of(core, "early") is not None, TIMEOUT)
    stop.set()
    runner.join(TIMEOUT)
    assert not runner.is_alive()
    assert [
        t.name for t in _threads.kinformer_threads() if not t.name.startswith("kinformer-apiserver")
    ] == []

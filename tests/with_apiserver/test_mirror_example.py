"""docs/examples/mirror_configmaps.py end to end over FakeAPIServer: creates, updates and deletes
propagate, hand edits are undone, foreign ConfigMaps are left alone, and nothing outlives stop."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import TIMEOUT, client_threads, cm_manifest, load_example, running
from kubernetes import client as k8s

from kinformer.testing import wait_for

MIRROR = {"kinformer.io/mirror": "true"}

mirror = load_example("mirror_configmaps")


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


def run_mirror(api_client: Any) -> functools.partial[None]:
    """``run(stop)`` mirroring labelled ConfigMaps from namespace "source" to "target"."""
    return functools.partial(mirror.run_mirror, api_client, "source", "target")


@pytest.fixture
def running_mirror(api_client: Any, core: k8s.CoreV1Api) -> Iterator[threading.Event]:
    with running(run_mirror(api_client), threading.Event()) as stop:
        yield stop


def test_labelled_configmaps_are_mirrored_and_follow_their_source(
    core: k8s.CoreV1Api, running_mirror: threading.Event
) -> None:
    core.create_namespaced_config_map("source", cm_manifest("app", {"a": "1"}, **MIRROR))
    core.create_namespaced_config_map("source", cm_manifest("private", {"p": "1"}))
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
    core.create_namespaced_config_map("target", cm_manifest("taken", {"mine": "yes"}))
    core.create_namespaced_config_map("source", cm_manifest("taken", {"a": "1"}, **MIRROR))
    core.create_namespaced_config_map("source", cm_manifest("marker", {"m": "1"}, **MIRROR))
    assert wait_for(lambda: copy_of(core, "marker") is not None, TIMEOUT)
    assert copy_of(core, "taken").data == {"mine": "yes"}


def test_mirroring_starts_from_what_exists_and_stop_leaves_no_thread(
    api_client: Any, core: k8s.CoreV1Api
) -> None:
    core.create_namespaced_config_map("source", cm_manifest("early", {"e": "1"}, **MIRROR))
    with running(run_mirror(api_client), threading.Event()):
        assert wait_for(lambda: copy_of(core, "early") is not None, TIMEOUT)
    assert client_threads() == []

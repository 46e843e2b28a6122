"""InformerManager over FakeAPIServer: a handler given before its type was tracked stays with it.

fleet's newer API, through the official client.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import CONFIGMAPS, create_cm, name_of

from kinformer import Context, _threads
from kinformer.gvr import APIResourceMeta, GroupVersionKind, GroupVersionResource
from kinformer.managers.informer_manager import InformerManager
from kinformer.testing import FakeAPIServer, Recorder

CM = APIResourceMeta(GroupVersionKind("", "v1", "ConfigMap"), CONFIGMAPS)
SECRET = APIResourceMeta(GroupVersionKind("", "v1", "Secret"), GroupVersionResource("", "v1", "secrets"))
TIMEOUT = 5.0


def informer_threads(gvr: GroupVersionResource) -> list[str]:
    """The threads of the informer of ``gvr`` (named ``kinformer-<role>-<gvr>``, ``v1/configmaps``
    for the core group)."""
    path = "/".join(part for part in (gvr.group, gvr.version, gvr.resource) if part)
    return [t.name for t in _threads.kinformer_threads() if f"-{path}" in t.name]


def handler_threads(gvr: GroupVersionResource) -> list[str]:
    """One delivery thread per handler registered on the running informer of ``gvr``."""
    return [name for name in informer_threads(gvr) if name.startswith("kinformer-handler-")]


@pytest.mark.parametrize("track", ["create_informer_for_resource", "add_dynamic_resources"])
def test_a_handler_given_before_its_type_is_tracked_stays_when_the_type_leaves_and_returns(
    apiserver: FakeAPIServer, api_client: Any, track: str
) -> None:
    recorder, refused = Recorder(name_of), Recorder(name_of)
    with InformerManager(api_client, 0, Context()) as manager:
        manager.add_event_handler_to_informer(CONFIGMAPS, recorder)  # fleet's newer API, handler first
        if track == "create_informer_for_resource":
            manager.create_informer_for_resource(CM)
        else:
            manager.add_dynamic_resources([CM], Recorder(), True)
        manager.start()
        assert manager.wait_for_cache_sync(TIMEOUT)
        expected_handlers = 1 if track == "create_informer_for_resource" else 2
        assert len(handler_threads(CONFIGMAPS)) == expected_handlers  # registered once, not again
        create_cm(api_client, "a")
        assert recorder.next() == ("add", "a", False)

        manager.add_dynamic_resources([SECRET], Recorder(), True)  # configmaps gone: stopped
        assert handler_threads(CONFIGMAPS) == []
        manager.add_dynamic_resources([SECRET, CM], Recorder(), True)  # and back: a fresh informer
        manager.add_event_handler_to_informer(CONFIGMAPS, refused)  # one handler per type, still
        manager.start()
        assert manager.wait_for_cache_sync(TIMEOUT)
        assert len(handler_threads(CONFIGMAPS)) == expected_handlers

        assert recorder.next() == ("add", "a", True)  # the fresh informer's initial list
        create_cm(api_client, "b")
        assert recorder.next() == ("add", "b", False)
        assert refused.quiet()


def test_a_handler_given_before_a_static_type_is_registered_once(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    early, static = Recorder(name_of), Recorder(name_of)
    with InformerManager(api_client, 0, Context()) as manager:
        manager.add_event_handler_to_informer(CONFIGMAPS, early)
        manager.add_static_resource(CM, static)
        manager.start()
        assert manager.wait_for_cache_sync(TIMEOUT)
        assert len(handler_threads(CONFIGMAPS)) == 2
        create_cm(api_client, "a")
        assert early.next() == ("add", "a", False)
        assert static.next() == ("add", "a", False)

"""The cache mutation detector: a handler or lister caller that edits a cached object is found.

With ``detect_mutations=True`` (or ``KINFORMER_CACHE_MUTATION_DETECTOR=1`` and the default
None) an informer keeps a deep copy of every object it caches; ``check_mutations()`` names the
keys whose object changed since, and a background check logs each at ERROR once. An object
written again or deleted is forgotten. Off, nothing is tracked.
"""

from __future__ import annotations

import base64
import logging
import threading
from typing import Any

import pytest
from helpers import CONFIGMAPS, create_cm, delete_cm, running, write

from kinformer import (
    APIResourceMeta,
    ConfigurationError,
    DynamicSharedInformerFactory,
    GroupVersionKind,
    GroupVersionResource,
    InformerManager,
    ListWatch,
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    _threads,
)
from kinformer.testing import FakeAPIServer
from kinformer.testing.waiting import wait_for

TIMEOUT = 10.0
PERIOD = 0.05  # seconds between background checks: several per test
LOGGER = "kinformer.cache.mutation_detector"


def informer_for(api_client: Any, **kwargs: Any) -> SharedIndexInformer:
    return SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"), name="cms",
        **kwargs)


def touching(prefix: str) -> ResourceEventHandlerFuncs:
    """A handler that labels, in place, every object it is handed whose name starts with
    ``prefix``: the bug the detector is for."""

    def touch(obj: Any) -> None:
        if obj["metadata"]["name"].startswith(prefix):
            obj["metadata"].setdefault("labels", {})["touched"] = "yes"

    return ResourceEventHandlerFuncs(add_func=touch, update_func=lambda _old, new: touch(new))


def errors_about(caplog: pytest.LogCaptureFixture, key: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == LOGGER and r.levelno == logging.ERROR
            and r.getMessage().startswith(f"cache mutation detected: {key} ")]


@pytest.mark.parametrize("profile", ["modern", "classic"])
def test_a_handler_that_changes_its_argument_is_found_and_logged_once(
    api_client: Any, caplog: pytest.LogCaptureFixture, profile: str
) -> None:
    create_cm(api_client, "bad-1")
    create_cm(api_client, "good")
    informer = informer_for(api_client, detect_mutations=True, mutation_check_period=PERIOD,
                            profile=profile)
    informer.add_event_handler(touching("bad-"))
    caplog.set_level(logging.ERROR, logger=LOGGER)
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert wait_for(lambda: informer.check_mutations() == ["default/bad-1"], TIMEOUT)
        assert wait_for(lambda: errors_about(caplog, "default/bad-1"), TIMEOUT)
        assert any(t.name == "kinformer-mutations-cms" for t in _threads.kinformer_threads())
        create_cm(api_client, "bad-2")  # found by a later check, which must not log bad-1 again
        assert wait_for(lambda: errors_about(caplog, "default/bad-2"), TIMEOUT)
        assert informer.check_mutations() == ["default/bad-1", "default/bad-2"]
    assert len(errors_about(caplog, "default/bad-1")) == 1
    assert len(errors_about(caplog, "default/bad-2")) == 1
    assert errors_about(caplog, "default/bad-1")[0].endswith(": metadata.labels.touched: added")


def test_the_error_names_the_fields_that_changed_once_per_key(
    api_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    create_cm(api_client, "a", app="a")
    informer = informer_for(api_client, detect_mutations=True, mutation_check_period=PERIOD)
    caplog.set_level(logging.ERROR, logger=LOGGER)
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        cached = informer.get_indexer().get_by_key("default/a")
        cached["metadata"]["labels"]["app"] = "b"
        cached["data"]["x"] = "new"
        del cached["data"]["k"]
        assert wait_for(lambda: errors_about(caplog, "default/a"), TIMEOUT)
    [message] = errors_about(caplog, "default/a")
    changes = message.split("before changing it): ", 1)[1]
    assert changes == "metadata.labels.app: 'a' -> 'b'; data.k: removed; data.x: added"


def test_a_handler_decoding_a_secret_in_place_is_reported_without_its_values(
    apiserver: FakeAPIServer, api_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    token = "decoded-secret-token-2718"
    secrets = GroupVersionResource("", "v1", "secrets")
    apiserver.create(secrets, {"metadata": {"name": "member", "namespace": "default"}, "type": "Opaque",
                               "data": {"token": base64.b64encode(token.encode()).decode()}})

    def decode(obj: Any) -> None:  # the bug: the cached Secret itself decoded
        obj["data"]["token"] = base64.b64decode(obj["data"]["token"]).decode()
        obj["metadata"]["labels"] = {"decoded": "yes"}

    informer = SharedIndexInformer(ListWatch.for_resource(api_client, secrets, namespace="default"),
                                   name="secrets", detect_mutations=True, mutation_check_period=PERIOD)
    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=decode))
    caplog.set_level(logging.ERROR, logger=LOGGER)
    with running(informer.run):
        assert wait_for(lambda: errors_about(caplog, "default/member"), TIMEOUT)
    [message] = errors_about(caplog, "default/member")
    assert message.split("before changing it): ", 1)[1] == "metadata.labels: added; data.token: changed"
    assert token not in caplog.text and base64.b64encode(token.encode()).decode() not in caplog.text


def test_the_error_stays_short_however_much_changed(
    api_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    create_cm(api_client, "a")
    informer = informer_for(api_client, detect_mutations=True, mutation_check_period=PERIOD)
    caplog.set_level(logging.ERROR, logger=LOGGER)
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        data = informer.get_indexer().get_by_key("default/a")["data"]
        data["k"] = "x" * 10_000
        data.update({f"added-{i}": "v" for i in range(100)})
        assert wait_for(lambda: errors_about(caplog, "default/a"), TIMEOUT)
    [message] = errors_about(caplog, "default/a")
    changes = message.split("before changing it): ", 1)[1].split("; ")
    assert len(changes) == 6 and changes[-1] == "and 96 more"
    assert changes[0].startswith("data.k: 'v' -> 'xxx") and len(changes[0]) < 80
    assert changes[1:3] == ["data.added-0: added", "data.added-1: added"]


def test_a_lister_caller_that_changes_a_cached_object_is_found(api_client: Any) -> None:
    create_cm(api_client, "a")
    informer = informer_for(api_client, detect_mutations=True)
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert informer.check_mutations() == []
        informer.get_indexer().get_by_key("default/a")["data"]["k"] = "changed"
        assert informer.check_mutations() == ["default/a"]


def test_an_object_written_again_or_deleted_is_no_longer_reported(api_client: Any) -> None:
    create_cm(api_client, "rewritten")
    create_cm(api_client, "deleted")
    informer = informer_for(api_client, detect_mutations=True)
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        indexer = informer.get_indexer()
        for key in ("default/rewritten", "default/deleted"):
            indexer.get_by_key(key)["data"]["k"] = "changed"
        assert informer.check_mutations() == ["default/deleted", "default/rewritten"]
        write(api_client, "PUT", "/api/v1/namespaces/default/configmaps/rewritten",
              {"metadata": {"name": "rewritten"}, "data": {"k": "new"}})
        delete_cm(api_client, "deleted")
        assert wait_for(lambda: informer.check_mutations() == [], TIMEOUT)
        assert indexer.get_by_key("default/deleted") is None


@pytest.mark.parametrize(("env", "argument", "on"), [
    ("1", None, True), ("TRUE", None, True), ("0", None, False), ("", None, False),
    ("true", False, False), ("", True, True),
])
def test_the_environment_variable_turns_it_on_unless_the_argument_says_otherwise(
    api_client: Any, monkeypatch: pytest.MonkeyPatch, env: str, argument: bool | None, on: bool
) -> None:
    monkeypatch.setenv("KINFORMER_CACHE_MUTATION_DETECTOR", env)
    create_cm(api_client, "a")
    informer = informer_for(api_client, detect_mutations=argument)
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        informer.get_indexer().get_by_key("default/a")["data"]["k"] = "changed"
        assert informer.check_mutations() == (["default/a"] if on else [])
        threads = [t.name for t in _threads.kinformer_threads() if t.name.startswith("kinformer-mutations-")]
        assert threads == (["kinformer-mutations-cms"] if on else [])


@pytest.mark.parametrize("period", [0, -1, float("nan"), float("inf")])
def test_a_bad_check_period_is_a_configuration_error(api_client: Any, period: float) -> None:
    with pytest.raises(ConfigurationError, match="mutation_check_period"):
        informer_for(api_client, detect_mutations=True, mutation_check_period=period)


def test_the_check_thread_stops_with_the_informer(api_client: Any) -> None:
    informer = informer_for(api_client, detect_mutations=True, mutation_check_period=3600)
    stop = threading.Event()
    with running(informer.run, stop):
        assert informer.wait_for_sync(timeout=TIMEOUT)
    assert not [t for t in _threads.kinformer_threads() if t.name.startswith("kinformer-mutations-")]


def test_a_factory_hands_detect_mutations_to_its_informers(api_client: Any) -> None:
    create_cm(api_client, "a")
    factory = DynamicSharedInformerFactory(api_client, detect_mutations=True)
    informer = factory.for_resource(CONFIGMAPS).informer()
    stop = threading.Event()
    try:
        factory.start(stop)
        assert informer.wait_for_sync(timeout=TIMEOUT)
        informer.get_indexer().get_by_key("default/a")["data"]["k"] = "changed"
        assert informer.check_mutations() == ["default/a"]
    finally:
        stop.set()
        factory.shutdown()


def test_a_manager_hands_detect_mutations_to_its_informers(
    api_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    create_cm(api_client, "a")
    caplog.set_level(logging.ERROR, logger=LOGGER)
    with InformerManager(api_client, 0, detect_mutations=True) as manager:
        meta = APIResourceMeta(GroupVersionKind("", "v1", "ConfigMap"), CONFIGMAPS)
        manager.add_static_resource(meta, ResourceEventHandlerFuncs())
        manager.start()
        assert manager.wait_for_cache_sync(TIMEOUT)
        manager.lister(CONFIGMAPS).by_namespace("default").get("a")["data"]["k"] = "changed"
        assert wait_for(lambda: errors_about(caplog, "default/a"), TIMEOUT)  # checked each second

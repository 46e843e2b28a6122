"""Authentication and permission errors: visible, backed off, and never a leaked token.

A 401 or 403 on the list or on the watch reaches the watch error handler and
``last_error()``; the reflector then waits one growing backoff step (on a FakeClock) per
attempt, so the fake time a window of attempts takes is counted, never the real time, and a
frozen clock means no request at all. The bearer token never shows in any log record (every
logger at DEBUG, urllib3's and the official client's included), error or repr, not even when
the server's error answer echoes the request that carried it.
"""

from __future__ import annotations

import base64
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from helpers import CONFIGMAPS, EchoingServer, client_for, client_with_token

from kinformer import (
    Controller,
    Indexer,
    ItemExponentialFailureRateLimiter,
    RateLimitingQueue,
    ResourceEventHandlerFuncs,
    errors,
    meta,
)
from kinformer.client.discovery import CachedDiscoveryClient
from kinformer.client.listerwatcher import ListOptions
from kinformer.client.listwatch import ListWatch
from kinformer.context import Context
from kinformer.factory import DynamicSharedInformerFactory
from kinformer.gvr import GroupVersionResource
from kinformer.handlers import wait_for_cache_sync
from kinformer.informer import SharedIndexInformer
from kinformer.managers.informer_manager import InformerManager
from kinformer.testing import FakeAPIServer, FakeClock, wait_for

TOKEN = "kinformer-secret-token-0123456789"
WRONG_TOKEN = "kinformer-wrong-token-9876543210"
SECRETS = GroupVersionResource("", "v1", "secrets")
TIMEOUT = 5.0
WINDOW = 60.0  # fake seconds of retrying: 0.8, 1.6, 3.2, 6.4, 12.8 s (jittered up to 2x) fit in it
NO_HOT_LOOP = 0.3  # real seconds during which a frozen clock must see no request


@pytest.fixture
def server() -> Iterator[FakeAPIServer]:
    """A token-protected server (HTTPS) of its own, so no fault switch outlives a test."""
    with FakeAPIServer(token=TOKEN, bookmark_interval=0.2) as secure:
        yield secure


class Run:
    """An informer on a FakeClock collecting what its watch error handler sees."""

    def __init__(self, server: FakeAPIServer, client: Any) -> None:
        self.server = server
        self.client = client
        self.clock = FakeClock()
        self.errors: queue.SimpleQueue[BaseException] = queue.SimpleQueue()
        self.informer = SharedIndexInformer(
            ListWatch.for_resource(client, CONFIGMAPS, namespace="default"),
            clock=self.clock, name="auth")
        self.informer.set_watch_error_handler(lambda r, e: self.errors.put(e))
        self.stop = Context()
        self.thread = threading.Thread(target=self.informer.run, args=(self.stop,),
                                       name="test-informer-run")
        self.thread.start()

    def requests(self) -> int:
        return sum(1 for _, path, _, _ in self.server.requests if path.endswith("/configmaps"))

    def close(self) -> None:
        self.stop.cancel()
        self.thread.join(TIMEOUT)
        self.client.close()
        assert not self.thread.is_alive()

    def retry_window(self, per_attempt: int) -> list[float]:
        """Step the clock through each backoff wait for WINDOW fake seconds; the waits seen.

        While the clock stands still no request comes; each step past a wait makes exactly
        ``per_attempt`` requests before the reflector waits again.
        """
        count = self.requests()
        assert self.clock.wait_for_waiters(1, TIMEOUT), "the reflector is not backing off"
        assert not wait_for(lambda: self.requests() > count, NO_HOT_LOOP), "requests while time stood still"
        waits: list[float] = []
        while True:
            wait = self.clock.waiters()[0]
            if sum(waits) + wait > WINDOW:
                return waits
            waits.append(wait)
            self.clock.step(wait)
            count += per_attempt
            assert self._reaches(count), "no new attempt after the backoff"
            assert self.clock.wait_for_waiters(1, TIMEOUT), "the reflector is not backing off"
            assert self.requests() == count
            assert isinstance(self.errors.get(timeout=TIMEOUT), errors.APIError)

    def _reaches(self, count: int) -> bool:
        return wait_for(lambda: self.requests() >= count, TIMEOUT)


Setup = Callable[[FakeAPIServer], Any]


def wrong_token(server: FakeAPIServer) -> Any:
    return client_with_token(server, WRONG_TOKEN)


def fail_watches_401(server: FakeAPIServer) -> Any:
    server.fail_next(1_000_000, 401, verb="watch", resource="configmaps")
    return client_with_token(server, TOKEN)


def forbid(verb: str) -> Setup:
    def setup(server: FakeAPIServer) -> Any:
        server.forbid("configmaps", verb)
        return client_with_token(server, TOKEN)

    return setup


CASES: dict[str, tuple[Setup, type[errors.APIError], bool]] = {
    # name: (setup returning the client, the error, whether the list itself fails)
    "401 on list": (wrong_token, errors.UnauthorizedError, True),
    "403 on list": (forbid("list"), errors.ForbiddenError, True),
    "401 on watch": (fail_watches_401, errors.UnauthorizedError, False),
    "403 on watch": (forbid("watch"), errors.ForbiddenError, False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_auth_errors_reach_the_handler_and_last_error_and_back_off_without_a_hot_loop(
    server: FakeAPIServer, caplog: pytest.LogCaptureFixture, case: str
) -> None:
    setup, error_type, list_fails = CASES[case]
    run = Run(server, setup(server))
    try:
        with caplog.at_level(logging.WARNING):
            error = run.errors.get(timeout=TIMEOUT)
            assert isinstance(error, error_type), repr(error)
            assert error.status in (401, 403) and error.reason in ("Unauthorized", "Forbidden")
            if list_fails:
                assert not wait_for_cache_sync(None, run.informer.has_synced, timeout=0.2)
                assert "caches did not sync" in caplog.text
            else:
                assert run.informer.wait_for_sync(timeout=TIMEOUT)
            assert wait_for(lambda: run.informer.last_error() is error, TIMEOUT)
            assert error.reason in caplog.text  # the reflector's warning says why
        waits = run.retry_window(per_attempt=1 if list_fails else 2)
        assert 3 <= len(waits) <= 6, waits
        assert waits == sorted(waits) and waits[0] < 1.6 and waits[-1] >= 6.4, waits
        assert isinstance(run.informer.last_error(), error_type)
    finally:
        run.close()


def test_the_bearer_token_never_shows_in_logs_errors_or_reprs(
    server: FakeAPIServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # the root logger: kinformer, urllib3 and kubernetes alike
    for name in ("urllib3", "kubernetes", "kinformer"):
        caplog.set_level(logging.DEBUG, logger=name)
    server.forbid("secrets")
    client = client_with_token(server, TOKEN)
    wrong = client_with_token(server, WRONG_TOKEN)
    seen: list[BaseException] = []
    shown: list[str] = []
    stop = Context()
    factory = DynamicSharedInformerFactory(client)
    manager = InformerManager(client, parent_stop=stop)
    discovery = CachedDiscoveryClient(client)
    try:
        configmaps = factory.for_resource(CONFIGMAPS)
        secrets = factory.for_resource(SECRETS)
        for generic in (configmaps, secrets):
            generic.informer().set_watch_error_handler(lambda r, e: seen.append(e))
        factory.start(stop)
        assert configmaps.informer().wait_for_sync(timeout=TIMEOUT)
        server.create(CONFIGMAPS, {"metadata": {"name": "token-test", "namespace": "default"}})
        assert wait_for(lambda: configmaps.lister().list(), TIMEOUT)
        server.drop_watches()
        assert wait_for(lambda: secrets.informer().last_error() is not None, TIMEOUT)
        discovery.server_resources()
        unauthorized = ListWatch.for_resource(wrong, CONFIGMAPS)
        with pytest.raises(errors.UnauthorizedError) as raised:
            unauthorized.list(ListOptions())
        seen.append(raised.value)
        seen.append(secrets.informer().last_error() or AssertionError("no error"))
        shown += [repr(o) for o in (factory, configmaps, configmaps.informer(), configmaps.lister(),
                                    manager, discovery, unauthorized)]
    finally:
        stop.cancel()
        factory.shutdown()
        manager.stop()
        client.close()
        wrong.close()
    assert any(isinstance(e, errors.ForbiddenError) for e in seen)
    shown += [repr(e) for e in seen] + [str(e) for e in seen]
    shown += [str(getattr(e, "body", "")) for e in seen]
    assert any(r.name.startswith("urllib3") and r.levelno == logging.DEBUG for r in caplog.records)
    for text in [caplog.text, *shown, *(r.getMessage() for r in caplog.records)]:
        assert TOKEN not in text and WRONG_TOKEN not in text, text


@pytest.mark.parametrize("as_status", [False, True], ids=["text", "status"])
def test_an_error_answer_echoing_the_request_never_carries_its_token(as_status: bool) -> None:
    server = EchoingServer(as_status)
    client = client_for(f"http://127.0.0.1:{server.server_address[1]}", TOKEN)
    try:
        with pytest.raises(errors.UnauthorizedError) as raised:
            ListWatch.for_resource(client, CONFIGMAPS, "default").list(ListOptions())
    finally:
        client.close()
        server.close()
    error = raised.value
    shown = [str(error), repr(error), str(error.body), *map(str, error.args)]
    for text in shown:
        assert TOKEN not in text, text
    assert "[redacted]" in error.message
    if as_status:  # the server's own words around it stay
        assert error.message == "token [redacted] has expired (/api/v1/namespaces/default/configmaps)"
        assert error.body["message"] == error.message and error.reason == "Unauthorized"
    else:
        assert error.message.startswith("denied GET /api/v1/namespaces/default/configmaps\n")
        assert "\nAccept: application/json\n" in error.message


def test_a_secret_a_key_function_cannot_key_is_named_without_its_data(server: FakeAPIServer) -> None:
    from kubernetes import client as k8s

    encoded = base64.b64encode(f"token: {TOKEN}".encode()).decode()
    server.create(SECRETS, {"metadata": {"name": "member", "namespace": "default"},
                            "data": {"kubeconfig": encoded}})
    client = client_with_token(server, TOKEN)
    try:
        listed = ListWatch.for_resource(client, SECRETS, "default").list(ListOptions()).items
        typed = k8s.CoreV1Api(client).read_namespaced_secret("member", "default")
    finally:
        client.close()
    by_owner = Indexer(key_func=lambda obj: meta.labels(obj)["owner"])  # the Secret has no owner
    for obj in (*listed, typed):
        with pytest.raises(errors.KeyFuncError) as raised:
            by_owner.add(obj)
        assert encoded not in str(raised.value) and "member'" in str(raised.value)
        assert str(raised.value).startswith("couldn't create key for object ")
    with pytest.raises(errors.KeyFuncError) as raised:  # no metadata: the repr is all it can show
        Indexer().add({"data": {"kubeconfig": encoded}})
    shown = "{'data': {'kubeconfig': '[redacted]'}}"
    assert str(raised.value) == f"couldn't create key for object {shown}: object has no meta: dict {shown}"


def test_a_list_function_on_the_official_client_whose_error_quotes_the_token_logs_it_redacted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from kubernetes import client as k8s

    caplog.set_level(logging.DEBUG, logger="kinformer")
    server = EchoingServer(as_status=False)
    client = client_for(f"http://127.0.0.1:{server.server_address[1]}", TOKEN)
    core = k8s.CoreV1Api(client)  # its ApiException quotes the answer, which echoes the request
    informer = SharedIndexInformer(ListWatch(lambda options: core.list_namespaced_config_map("default"),
                                             lambda options: iter(())),
                                   clock=FakeClock(), name="official")
    stop = Context()
    thread = threading.Thread(target=informer.run, args=(stop,), name="test-informer-run")
    thread.start()
    try:
        assert wait_for(lambda: informer.last_error() is not None, TIMEOUT)
    finally:
        stop.cancel()
        thread.join(TIMEOUT)
        client.close()
        server.close()
    assert isinstance(informer.last_error(), k8s.ApiException)  # the error itself, as raised
    failed = [r.getMessage() for r in caplog.records if "list at rv='0' failed" in r.getMessage()]
    assert failed and "HTTP response body: denied GET /api/v1/namespaces/default/configmaps" in failed[0]
    assert "authorization: [redacted]" in failed[0].lower()
    assert TOKEN not in caplog.text


def test_a_reconcile_failing_with_an_error_that_quotes_the_token_logs_it_redacted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from kubernetes import client as k8s

    caplog.set_level(logging.DEBUG, logger="kinformer")
    server = EchoingServer(as_status=False)  # its answer echoes the request's headers
    client = client_for(f"http://127.0.0.1:{server.server_address[1]}", TOKEN)
    core = k8s.CoreV1Api(client)

    class Reads:
        def reconcile(self, key: str) -> None:
            namespace, name = key.split("/")
            core.read_namespaced_config_map(name, namespace)

    queue: RateLimitingQueue[str] = RateLimitingQueue(
        ItemExponentialFailureRateLimiter(1.0, 60.0), FakeClock(), name="official")  # no retry
    controller = Controller("official", Reads(), queue=queue)
    stop = Context()
    thread = threading.Thread(target=controller.run, args=(stop,), name="test-controller-run")
    thread.start()
    try:
        controller.enqueue("default/app")
        assert wait_for(lambda: any("reconcile failed" in r.getMessage() for r in caplog.records), TIMEOUT)
    finally:
        stop.cancel()
        thread.join(TIMEOUT)
        client.close()
        server.close()
    assert TOKEN not in caplog.text
    assert "HTTP response body: denied GET /api/v1/namespaces/default/configmaps/app" in caplog.text
    assert "authorization: [redacted]" in caplog.text.lower()


def test_a_handler_failing_with_an_error_that_quotes_the_token_logs_it_redacted(
    apiserver: FakeAPIServer, api_client: Any, caplog: pytest.LogCaptureFixture,
) -> None:
    from kubernetes import client as k8s

    caplog.set_level(logging.DEBUG, logger="kinformer")
    echoing = EchoingServer(as_status=False)  # its answer echoes the request's headers
    client = client_for(f"http://127.0.0.1:{echoing.server_address[1]}", TOKEN)
    core = k8s.CoreV1Api(client)
    apiserver.create(CONFIGMAPS, {"metadata": {"name": "app", "namespace": "default"}})
    informer = SharedIndexInformer(ListWatch.for_resource(api_client, CONFIGMAPS, "default"), name="copies")
    # a handler copying each object elsewhere, through the official client
    informer.add_event_handler(ResourceEventHandlerFuncs(
        add_func=lambda obj: core.create_namespaced_config_map("copies", obj)))
    stop = Context()
    thread = threading.Thread(target=informer.run, args=(stop,), name="test-informer-run")
    thread.start()
    try:
        assert wait_for(lambda: any("failed on add" in r.getMessage() for r in caplog.records), TIMEOUT)
    finally:
        stop.cancel()
        thread.join(TIMEOUT)
        client.close()
        echoing.close()
    assert TOKEN not in caplog.text
    assert "HTTP response body: denied POST /api/v1/namespaces/copies/configmaps" in caplog.text
    assert "authorization: [redacted]" in caplog.text.lower()

"""ProbeServer over real HTTP (urllib): kube-apiserver's check listing, timeouts, GET only, /metrics.

Informer checks run against informers over FakeAPIServer; a leader elector is duck-typed, so a
small object with ``check()`` stands in for one.
"""

from __future__ import annotations

import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import CONFIGMAPS, TIMEOUT, EchoingServer, client_for, running

from kinformer import (
    AlreadyStartedError,
    ConfigurationError,
    ListWatch,
    ProbeServer,
    RateLimitingQueue,
    SharedIndexInformer,
    informers_synced_check,
    leader_election_check,
)
from kinformer.errors import LifecycleError
from kinformer.testing import FakeClock, wait_for

_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy


def fetch(url: str, method: str = "GET", headers: dict[str, str] | None = None) -> tuple[int, str, Any]:
    """``(status, body, headers)`` of one request; error statuses are answers, not exceptions."""
    req = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with _opener.open(req, timeout=TIMEOUT) as resp:
            return resp.status, resp.read().decode(), resp.headers
    except urllib.error.HTTPError as err:
        with err:
            return err.code, err.read().decode(), err.headers


def failing(reason: str) -> Any:
    def check() -> None:
        raise RuntimeError(reason)

    return check


@pytest.fixture
def probes() -> Iterator[ProbeServer]:
    server = ProbeServer()
    with server:
        yield server


def test_with_passing_checks_both_endpoints_answer_ok(probes: ProbeServer) -> None:
    probes.add_healthz_check("ping", lambda: None)
    probes.add_readyz_check("cache", lambda: True)
    assert fetch(probes.url + "/healthz")[:2] == (200, "ok")
    status, body, headers = fetch(probes.url + "/readyz")
    assert (status, body) == (200, "ok")
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    assert fetch(probes.url + "/readyz?verbose")[:2] == (200, "[+]cache ok\nreadyz check passed\n")


def test_a_raising_or_false_check_fails_with_kube_apiserver_listing(probes: ProbeServer) -> None:
    probes.add_readyz_check("cache", lambda: None)
    probes.add_readyz_check("db", failing("connection\nrefused"))
    probes.add_readyz_check("flag", lambda: False)
    status, body, _ = fetch(probes.url + "/readyz")
    assert status == 500
    assert body == (
        "[+]cache ok\n"
        "[-]db failed: connection refused\n"
        "[-]flag failed: returned False\n"
        "readyz check failed\n"
    )
    assert fetch(probes.url + "/healthz")[:2] == (200, "ok")  # liveness has its own checks


def test_a_check_whose_error_quotes_a_token_fails_without_it() -> None:
    from kubernetes import client as k8s

    token = "probe-secret-token-31415"
    echoing = EchoingServer(as_status=False)  # its 401 echoes the request, Authorization included
    client = client_for(f"http://127.0.0.1:{echoing.server_address[1]}", token)
    probes = ProbeServer(check_timeout=TIMEOUT)  # the official client's first call takes a while
    try:
        with probes:
            probes.add_readyz_check("api", lambda: k8s.CoreV1Api(client).list_namespace())
            status, body, _ = fetch(probes.url + "/readyz")
    finally:
        client.close()
        echoing.close()
    assert status == 500 and token not in body
    line = body.splitlines()[0]  # the official client's ApiException, on one line
    assert line.startswith("[-]api failed: (401) Reason: Unauthorized HTTP response headers: ")
    assert "HTTP response body: denied GET /api/v1/namespaces " in line
    assert "authorization: [redacted]" in line.lower()


def test_exclude_skips_a_check_and_a_path_runs_one(probes: ProbeServer) -> None:
    probes.add_readyz_check("cache", lambda: None)
    probes.add_readyz_check("db", failing("down"))
    assert fetch(probes.url + "/readyz?exclude=db&verbose")[:2] == (
        200,
        "[+]cache ok\n[+]db excluded: ok\nreadyz check passed\n",
    )
    assert fetch(probes.url + "/readyz?exclude=nope")[1].splitlines()[-2:] == [
        "warn: some health checks cannot be excluded: no matches for nope",
        "readyz check failed",
    ]
    assert fetch(probes.url + "/readyz/cache")[:2] == (200, "ok")
    assert fetch(probes.url + "/readyz/db")[:2] == (500, "[-]db failed: down\nreadyz/db check failed\n")
    assert fetch(probes.url + "/readyz/other")[0] == 404


def test_a_hanging_check_fails_after_the_timeout_and_is_not_started_twice() -> None:
    release = threading.Event()
    entered = threading.Event()
    calls: list[int] = []

    def hangs() -> None:
        calls.append(1)
        entered.set()
        release.wait(TIMEOUT)

    with ProbeServer(check_timeout=0.05) as probes:
        probes.add_readyz_check("hangs", hangs)
        try:
            assert fetch(probes.url + "/readyz")[:2] == (
                500,
                "[-]hangs failed: timed out after 0.05s\nreadyz check failed\n",
            )
            assert fetch(probes.url + "/readyz")[1].startswith(
                "[-]hangs failed: still running from an earlier probe\n"
            )
            assert entered.wait(TIMEOUT)
            assert calls == [1]
        finally:
            release.set()


def test_a_request_waiting_on_a_slow_check_does_not_hold_up_others() -> None:
    release = threading.Event()
    answers: list[tuple[int, str]] = []
    with ProbeServer(check_timeout=TIMEOUT) as probes:
        probes.add_readyz_check("slow", lambda: release.wait(TIMEOUT))
        waiting = threading.Thread(target=lambda: answers.append(fetch(probes.url + "/readyz")[:2]))
        waiting.start()
        try:
            assert fetch(probes.url + "/healthz")[:2] == (200, "ok")
            assert answers == []  # the readiness request still waits on its check
        finally:
            release.set()
            waiting.join(TIMEOUT)
    assert answers == [(200, "ok")]


def test_only_get_is_served(probes: ProbeServer) -> None:
    for method in ("POST", "PUT", "DELETE", "HEAD", "BREW"):
        status, _, headers = fetch(probes.url + "/healthz", method)
        assert (status, headers["Allow"]) == (405, "GET")
    assert fetch(probes.url + "/nothing")[0] == 404


def test_metrics_serves_the_registry_in_prometheus_text(prometheus: Any, probes: ProbeServer) -> None:
    queue: RateLimitingQueue[str] = RateLimitingQueue(name="reconciler", clock=FakeClock())  # b stays delayed
    queue.add("default/a")
    queue.add_rate_limited("default/b")
    status, body, headers = fetch(probes.url + "/metrics")
    queue.shut_down()
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert 'workqueue_adds_total{name="reconciler"} 1.0' in body.splitlines()
    assert 'workqueue_retries_total{name="reconciler"} 1.0' in body.splitlines()
    assert "# TYPE workqueue_queue_duration_seconds histogram" in body


def test_metrics_without_the_extra_is_not_found(probes: ProbeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # as if it were not installed
    status, body, _ = fetch(probes.url + "/metrics")
    assert (status, body) == (404, "metrics need the prometheus extra: pip install 'kinformer[prometheus]'\n")


def test_informers_synced_check_follows_the_informers(
    apiserver: Any, api_client: Any, probes: ProbeServer
) -> None:
    informer = SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"), name="probe-configmaps"
    )
    probes.add_readyz_check("informers", informers_synced_check(informer))
    assert fetch(probes.url + "/readyz")[:2] == (
        500,
        "[-]informers failed: not synced: probe-configmaps\nreadyz check failed\n",
    )
    with running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        assert fetch(probes.url + "/readyz")[:2] == (200, "ok")
    # stopped (the process shutting down, a member's informer gone): its cache follows the
    # server no more, as a factory's has_synced() says once it stopped
    assert informer.is_stopped() and informer.has_synced()
    assert fetch(probes.url + "/readyz")[:2] == (
        500,
        "[-]informers failed: stopped: probe-configmaps\nreadyz check failed\n",
    )


class Elector:
    """Stands in for a leader elector: ``check`` raises while the lease is overdue."""

    def __init__(self) -> None:
        self.overdue = False
        self.asked: list[float] = []

    def check(self, max_tolerable_expired_lease: float) -> None:
        self.asked.append(max_tolerable_expired_lease)
        if self.overdue:
            raise RuntimeError("failed election to renew leadership on lease my-lock")


def test_leader_election_check_fails_while_the_elector_check_raises(probes: ProbeServer) -> None:
    elector = Elector()
    probes.add_healthz_check("leader-election", leader_election_check(elector, 20.0))
    assert fetch(probes.url + "/healthz")[:2] == (200, "ok")
    elector.overdue = True
    assert fetch(probes.url + "/healthz")[:2] == (
        500,
        "[-]leader-election failed: failed election to renew leadership on lease my-lock\n"
        "healthz check failed\n",
    )
    assert elector.asked == [20.0, 20.0]


def test_lifecycle_and_bad_checks_raise_typed_errors() -> None:
    probes = ProbeServer()
    with pytest.raises(LifecycleError):
        _ = probes.url
    probes.add_readyz_check("a", lambda: None)
    with pytest.raises(ConfigurationError):
        probes.add_readyz_check("a", lambda: None)
    with pytest.raises(ConfigurationError):
        probes.add_healthz_check("has space", lambda: None)
    with pytest.raises(ConfigurationError):
        ProbeServer(check_timeout=0)
    probes.start()
    try:
        with pytest.raises(AlreadyStartedError):
            probes.start()
        assert probes.url == f"http://127.0.0.1:{probes.port}"
    finally:
        probes.stop()
    probes.stop()  # idempotent


def test_run_serves_until_stopped() -> None:
    probes = ProbeServer()

    def listening() -> bool:
        try:
            return probes.port > 0
        except LifecycleError:
            return False

    with running(probes.run):
        assert wait_for(listening, TIMEOUT)
        assert fetch(probes.url + "/healthz")[:2] == (200, "ok")
    with pytest.raises(urllib.error.URLError):
        _opener.open(probes.url + "/healthz", timeout=TIMEOUT)

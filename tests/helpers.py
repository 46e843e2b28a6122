"""Helpers shared by the whole suite, so no test file writes its own copy.

Object builders (:func:`cm`, :func:`cm_manifest`, :func:`crd`) and their sorted names and keys
(:func:`names`, :func:`keys`), a recording event handler (:class:`Recorder`), a scripted server
for informers (:class:`ScriptedSource`), a runner for anything with ``run(stop)``
(:func:`running`), fake-clock steps (:func:`step_when_waiting`, :func:`clock_waits`) and, for the
tests in ``with_apiserver/``, requests through the official client's ``ApiClient``
(:func:`request`, :func:`create_cm`, :func:`api_error`), plain HTTP exchanges
(:func:`http_exchange`), clients (:func:`client_for`, :func:`client_with_token`), the live
client threads (:func:`client_threads`) and a server that accepts connections and never answers
(:class:`SilentServer`).

Test files in ``tests/`` and ``tests/with_apiserver/`` import it as ``helpers``: pytest's default
("prepend") import mode puts ``tests/`` on ``sys.path`` when it loads ``tests/conftest.py``, which
also has pytest rewrite the asserts in here. kinformer names come from ``kinformer`` and
``kinformer.testing`` only; the official client's typed APIs, slow to import, are not used.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kinformer import (
    ChannelWatch,
    Context,
    DeletedFinalStateUnknown,
    GroupVersionResource,
    ListOptions,
    ListResult,
    ListWatch,
    _threads,
    meta_namespace_key_func,
)
from kinformer.testing import FakeAPIServer, FakeClock, wait_for

TIMEOUT = 5.0  # seconds any one wait for a thread may take before the test fails
EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


# -- objects -----------------------------------------------------------------------------------


def cm(
    name: str,
    rv: int | str | None = 1,
    namespace: str = "ns",
    *,
    data: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    typed: bool = True,
    **labels: str,
) -> dict[str, Any]:
    """A ConfigMap as a list or watch yields it: keyed ``namespace/name``, at resourceVersion ``rv``.

    An empty ``namespace`` makes it cluster-scoped (keyed ``name``); ``rv=None`` leaves the
    version out, as in an object given to ``FakeAPIServer.create``. ``labels``,
    ``annotations`` and ``data`` appear only when given. ``typed=False`` leaves out
    ``apiVersion`` and ``kind``, as the items of a list response come from a server.
    """
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    if rv is not None:
        metadata["resourceVersion"] = str(rv)
    if labels:
        metadata["labels"] = labels
    if annotations:
        metadata["annotations"] = annotations
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap"} if typed else {}
    obj["metadata"] = metadata
    if data is not None:
        obj["data"] = data
    return obj


def cm_manifest(name: str, data: dict[str, str] | None = None, **labels: str) -> dict[str, Any]:
    """A ConfigMap to create through the API: the request path names the namespace, the server
    sets the version. ``labels`` (``{}`` when none) and ``data`` as given."""
    manifest: dict[str, Any] = {"metadata": {"name": name, "labels": labels}}
    if data is not None:
        manifest["data"] = data
    return manifest


def crd(
    gvr: GroupVersionResource,
    scope: str = "Namespaced",
    *,
    versions: tuple[str, ...] = (),
    short_names: tuple[str, ...] = (),
    status: bool = False,
) -> dict[str, Any]:
    """A CustomResourceDefinition serving ``gvr``: kind and singular come from the plural.

    ``versions`` (default: ``gvr.version`` alone) are all served, the first one stored; with
    ``status`` each has a status subresource. Any schema is accepted.
    """
    kind = gvr.resource[:-1].capitalize()
    names: dict[str, Any] = {"plural": gvr.resource, "singular": gvr.resource[:-1], "kind": kind}
    if short_names:
        names["shortNames"] = list(short_names)
    served = []
    for i, version in enumerate(versions or (gvr.version,)):
        entry: dict[str, Any] = {
            "name": version,
            "served": True,
            "storage": i == 0,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        }
        if status:
            entry["subresources"] = {"status": {}}
        served.append(entry)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": gvr.group_resource},
        "spec": {"group": gvr.group, "scope": scope, "names": names, "versions": served},
    }


def describe(obj: Any) -> str:
    """``name`` followed by ``resourceVersion`` (``"a1"``), or ``DFSU(key)`` for a tombstone:
    short enough to compare whole lists of events at once."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return f"DFSU({obj.key})"
    return f"{obj['metadata']['name']}{obj['metadata'].get('resourceVersion', '')}"


def name_of(obj: Any) -> str:
    """``metadata.name`` alone, for objects whose resourceVersion the server chose."""
    return str(obj["metadata"]["name"])


def names(objs: Any) -> list[str]:
    """The sorted ``metadata.name`` of each object."""
    return sorted(name_of(o) for o in objs)


def keys(objs: Any) -> list[str]:
    """The sorted store key of each object: ``namespace/name``, or ``name`` when cluster-scoped."""
    return sorted(meta_namespace_key_func(o) for o in objs)


# -- handlers, sources and runners -------------------------------------------------------------


class Recorder:
    """A ResourceEventHandler that queues every call as a short tuple for the test to take.

    ``("add", describe(obj), is_in_initial_list)``, ``("update", describe(old), describe(new))``
    and ``("delete", describe(obj))``, with ``describe`` given (default :func:`describe`).
    Callbacks run on the informer's delivery thread; ``entered`` is set by the first one, and
    with a ``gate`` every callback waits for it to be set before it records. With a ``probe``,
    every callback then calls it with its object (the new one of an update), still on the
    delivery thread, and appends the answer to ``probed`` before the event is queued: what the
    cache held while a handler ran. :meth:`next` and :meth:`take` block for at most TIMEOUT.
    """

    def __init__(
        self,
        describe: Callable[[Any], str] = describe,
        gate: threading.Event | None = None,
        probe: Callable[[Any], Any] | None = None,
    ) -> None:
        self.describe = describe
        self.gate = gate
        self.probe = probe
        self.probed: list[Any] = []
        self.entered = threading.Event()
        self.events: queue.Queue[tuple[Any, ...]] = queue.Queue()

    def _record(self, obj: Any, *event: Any) -> None:
        self.entered.set()
        if self.gate is not None:
            self.gate.wait()
        if self.probe is not None:
            self.probed.append(self.probe(obj))
        self.events.put(event)

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._record(obj, "add", self.describe(obj), is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        self._record(new, "update", self.describe(old), self.describe(new))

    def on_delete(self, obj: Any) -> None:
        self._record(obj, "delete", self.describe(obj))

    def next(self) -> tuple[Any, ...]:
        """The oldest event not taken yet, waiting for it if need be."""
        return self.events.get(timeout=TIMEOUT)

    def take(self, count: int) -> list[tuple[Any, ...]]:
        """The next ``count`` events, in the order they were delivered."""
        return [self.next() for _ in range(count)]

    def quiet(self) -> bool:
        """True if every event delivered so far has been taken."""
        return self.events.empty()


class ScriptedSource:
    """A scripted API server for one resource type, offered as ``lister_watcher``.

    A list answers ``items`` at resourceVersion ``rv`` (or raises ``list_error`` when set); each
    watch opens a :class:`ChannelWatch` that the test takes with :meth:`next_watch` and feeds.
    The test may change ``items``, ``rv`` and ``list_error`` between requests.
    """

    def __init__(self, *items: Any, rv: int = 10) -> None:
        self.items = list(items)
        self.rv = rv
        self.list_error: BaseException | None = None
        self._watches: queue.Queue[ChannelWatch] = queue.Queue()
        self.lister_watcher = ListWatch(self.list, self.watch)

    def list(self, options: ListOptions) -> ListResult:
        if self.list_error is not None:
            raise self.list_error
        return ListResult(list(self.items), str(self.rv))

    def watch(self, options: ListOptions) -> ChannelWatch:
        watch = ChannelWatch()
        self._watches.put(watch)
        return watch

    def next_watch(self) -> ChannelWatch:
        """The oldest watch the test has not taken yet, waiting up to TIMEOUT for it to open."""
        return self._watches.get(timeout=TIMEOUT)


@contextmanager
def running(
    run: Callable[[Any], object],
    stop: Context | threading.Event | None = None,
    *,
    deadline: float = TIMEOUT * 2,
) -> Iterator[Any]:
    """Call ``run(stop)`` on a thread for the body of the ``with``, which gets ``stop``.

    ``stop`` defaults to a fresh :class:`~kinformer.Context`. On the way out it is cancelled
    (or set), and ``run`` must return within ``deadline`` seconds (default twice TIMEOUT), or
    the test fails: a test of how promptly ``run`` stops gives its own.
    """
    stop = stop if stop is not None else Context()
    thread = threading.Thread(target=run, args=(stop,), name="test-run")
    thread.start()
    try:
        yield stop
    finally:
        if isinstance(stop, Context):
            stop.cancel()
        else:
            stop.set()
        thread.join(deadline)
        assert not thread.is_alive(), f"{run} did not return within {deadline} s of stop"


def client_threads() -> list[str]:
    """Names of the live kinformer threads other than a FakeAPIServer's."""
    return [t.name for t in _threads.kinformer_threads() if not t.name.startswith("kinformer-apiserver")]


# -- the fake clock ----------------------------------------------------------------------------


def step_when_waiting(clock: FakeClock, seconds: float | None = None) -> float:
    """Once a thread waits on ``clock`` with time left, step it ``seconds`` (default: that
    thread's wait, the shortest there is) and return the step.

    Waits whose time already came do not count: their threads are about to wake.
    """
    assert wait_for(lambda: any(w > 0 for w in clock.waiters()), TIMEOUT), "nothing waits on the clock"
    if seconds is None:
        seconds = min(w for w in clock.waiters() if w > 0)
    clock.step(seconds)
    return seconds


def clock_waits(clock: FakeClock, seconds: float) -> bool:
    """True once a thread waits on ``clock`` with exactly ``seconds`` left (False after TIMEOUT)."""
    return wait_for(lambda: seconds in clock.waiters(), TIMEOUT)


# -- requests through the official client ------------------------------------------------------


def request(
    api_client: Any,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
    query: list[tuple[str, str]] | None = None,
) -> tuple[int, Any]:
    """Send one request through ``api_client``'s own machinery: ``(status, decoded body)``.

    For requests the typed APIs cannot express, and to keep a file from importing them; a body
    that is not JSON comes back as bytes.
    """
    headers = {"Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = content_type
    params = api_client.param_serialize(
        method, path, query_params=query or [], header_params=headers, body=body
    )
    response = api_client.call_api(*params)
    data = response.read()
    try:
        return int(response.status), json.loads(data)
    except ValueError:
        return int(response.status), data


def write(api_client: Any, method: str, path: str, body: Any = None) -> Any:
    """:func:`request` that must succeed (status below 300); the decoded body."""
    status, answer = request(api_client, method, path, body)
    assert status < 300, (status, answer)
    return answer


def create_cm(api_client: Any, name: str, namespace: str = "default", **labels: str) -> Any:
    """Create ConfigMap ``namespace/name`` holding ``{"k": "v"}``; the server's answer."""
    body = cm_manifest(name, {"k": "v"}, **labels)
    return write(api_client, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body)


def delete_cm(api_client: Any, name: str, namespace: str = "default") -> None:
    """Delete ConfigMap ``namespace/name``, which must exist."""
    write(api_client, "DELETE", f"/api/v1/namespaces/{namespace}/configmaps/{name}")


def api_error(call: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    """``call(*args, **kwargs)``, a typed API method of the official client, must fail:
    ``(HTTP status, decoded Status body)``."""
    from kubernetes.client import ApiException

    with pytest.raises(ApiException) as info:
        call(*args, **kwargs)
    return info.value.status, json.loads(info.value.body)


def http_exchange(
    server: FakeAPIServer, method: str, path: str, body: bytes | None = None,
    content_type: str = "application/json",
) -> tuple[int, dict[str, str], bytes]:
    """One plain HTTP request to ``server`` (no client library in between, for what a client
    hides: exact bytes, headers, protobuf bodies): ``(status, headers, body bytes)``."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(server.url + path, data=body, method=method)
    if body is not None:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        with err:
            return err.code, dict(err.headers), err.read()


def client_for(url: str, token: str | None = None, ca_file: str | None = None) -> Any:
    """An ``ApiClient`` for the server at ``url``, sending ``token`` as a bearer token (none if
    None) and trusting ``ca_file`` for HTTPS (the system's CAs if None)."""
    from kubernetes import client as k8s

    configuration = k8s.Configuration()
    configuration.host = url
    if ca_file is not None:
        configuration.ssl_ca_cert = ca_file
    if token is not None:
        configuration.api_key = {"authorization": token}
        configuration.api_key_prefix = {"authorization": "Bearer"}
    return k8s.ApiClient(configuration)


def client_with_token(server: FakeAPIServer, token: str | None) -> Any:
    """An ``ApiClient`` for the HTTPS ``server`` sending ``token`` as a bearer token (none if None)."""
    return client_for(server.url, token, server.ca_file)


@contextmanager
def example_replicas(
    example: str, kubeconfig: str, names: Iterable[str], logs: Path
) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """Run ``docs/examples/<example>.py --replica NAME --kubeconfig PATH --fast`` once per name,
    each its own process logging to ``logs/<name>.log``; yields name -> process.

    On the way out every process still running gets SIGTERM and must exit 0 within TIMEOUT * 2
    seconds (it is killed and the test fails otherwise).
    """
    started: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for name in names:
            with open(logs / f"{name}.log", "wb") as log:
                started[name] = subprocess.Popen(
                    [sys.executable, str(EXAMPLES / f"{example}.py"), "--replica", name,
                     "--kubeconfig", kubeconfig, "--fast"],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        yield started
        running_ones = [p for p in started.values() if p.poll() is None]
        for process in running_ones:
            process.terminate()
        codes = {name: p.wait(TIMEOUT * 2) for name, p in started.items() if p in running_ones}
        assert set(codes.values()) <= {0}, f"replicas did not stop cleanly: {codes}"
    finally:
        for process in started.values():
            if process.poll() is None:
                process.kill()
                process.wait()


def load_example(name: str) -> ModuleType:
    """Import ``docs/examples/<name>.py`` as a module named ``name``."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- metrics ----------------------------------------------------------------------------------


def metric_value(registry: Any, metric: str, /, **labels: str) -> float | None:
    """The value of ``metric`` with ``labels`` in a Prometheus ``registry``; None if there is none."""
    value: float | None = registry.get_sample_value(metric, labels)
    return value


# -- a server that never answers ----------------------------------------------------------------


class SilentServer:
    """A loopback server that accepts every connection and never answers: a hung API server.

    ``accepted`` is set once a client connected (and so waits for an answer). :meth:`close`
    ends the accepting thread and drops every connection.
    """

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.accepted = threading.Event()
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, name="test-silent-server", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        port: int = self.sock.getsockname()[1]
        return port

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed
                return
            self._conns.append(conn)
            self.accepted.set()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept
        self.sock.close()
        self._thread.join(TIMEOUT)
        for conn in self._conns:
            conn.close()

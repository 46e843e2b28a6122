"""Helpers shared by the whole suite, so no test file writes its own copy.

The ConfigMaps' resource (:data:`CONFIGMAPS`), object builders (:func:`cm`,
:func:`cm_manifest`, :func:`crd`) and their sorted names and keys (:func:`names`,
:func:`keys`), an informer over kinformer's shipped test fakes with a recording handler on it
(:func:`recorded_informer`, over ``kinformer.testing.ScriptedSource`` and ``Recorder``), a
runner for anything with ``run(stop)`` (:class:`Background`, and :func:`running` for a
``with`` block) and an informer over HTTP run by it (:class:`Running`), fake-clock steps
(:func:`step_when_waiting`, :func:`clock_waits`) and, for the tests in ``with_apiserver/``,
requests through the official client's ``ApiClient`` (:func:`request`, :func:`create_cm`,
:func:`api_error`), plain HTTP exchanges (:func:`http_exchange`), clients (:func:`client_for`,
:func:`client_with_token`), the live client threads (:func:`client_threads`), a child
child process run for a ``with`` block with its output read as lines (:class:`ChildProcess`,
:data:`KINFORMER` and :class:`Lines`), a server that accepts connections and never answers
(:class:`SilentServer`) and one that refuses every request echoing it (:class:`EchoingServer`).

Test files in ``tests/`` and ``tests/with_apiserver/`` import it as ``helpers``: pytest's default
("prepend") import mode puts ``tests/`` on ``sys.path`` when it loads ``tests/conftest.py``, which
also has pytest rewrite the asserts in here. kinformer names come from ``kinformer`` and
``kinformer.testing`` only; the official client's typed APIs, slow to import, are not used.
"""

from __future__ import annotations

import contextlib
import http.server
import importlib.util
import json
import queue
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType, TracebackType
from typing import IO, Any

import pytest

from kinformer import (
    Context,
    GroupVersionResource,
    ListWatch,
    SharedIndexInformer,
    _threads,
    meta_namespace_key_func,
)
from kinformer.testing import FakeAPIServer, FakeClock, Recorder, ScriptedSource, wait_for
from kinformer.testing.recorder import describe as describe

TIMEOUT = 5.0  # seconds any one wait for a thread may take before the test fails
CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")  # the resource most tests watch
EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"
KINFORMER = (sys.executable, "-m", "kinformer")  # the command line of the kinformer under test


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


def recorded_informer(
    *items: Any, handler: Recorder | None = None, resync_period: float | None = None,
    **informer_kwargs: Any,
) -> tuple[ScriptedSource, SharedIndexInformer, Recorder]:
    """A SharedIndexInformer over a ScriptedSource of ``items`` with a Recorder registered on it:
    ``(source, informer, handler)``, not started. ``handler`` (default a fresh Recorder) is
    added with ``resync_period`` when given, else with the informer's default;
    ``informer_kwargs`` go to the informer."""
    source = ScriptedSource(*items)
    informer = SharedIndexInformer(source.lister_watcher, **informer_kwargs)
    handler = handler if handler is not None else Recorder()
    if resync_period is None:
        informer.add_event_handler(handler)
    else:
        informer.add_event_handler_with_resync_period(handler, resync_period)
    return source, informer, handler


class Background:
    """``run(stop)`` on a thread of its own until :meth:`stop`: how a test runs a component.

    ``stop`` (default: a fresh :class:`~kinformer.Context`) is the signal handed to ``run``,
    kept as :attr:`signal`. The thread starts at once, or at :meth:`start` with
    ``start=False``. :meth:`stop` cancels (or sets) the signal, and the test fails unless ``run``
    returned within ``deadline`` seconds (default twice TIMEOUT); a test of how promptly ``run``
    stops gives its own.
    """

    def __init__(
        self,
        run: Callable[[Any], object],
        stop: Context | threading.Event | None = None,
        *,
        deadline: float = TIMEOUT * 2,
        start: bool = True,
    ) -> None:
        self.run = run
        self.signal: Context | threading.Event = stop if stop is not None else Context()
        self.deadline = deadline
        self.thread = threading.Thread(target=run, args=(self.signal,), name="test-run")
        if start:
            self.thread.start()

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        if isinstance(self.signal, Context):
            self.signal.cancel()
        else:
            self.signal.set()
        if self.thread.ident is None:  # never started
            return
        self.thread.join(self.deadline)
        assert not self.thread.is_alive(), f"{self.run} did not return within {self.deadline} s of stop"


@contextmanager
def running(
    run: Callable[[Any], object],
    stop: Context | threading.Event | None = None,
    *,
    deadline: float = TIMEOUT * 2,
) -> Iterator[Any]:
    """A :class:`Background` run of ``run(stop)`` for the body of the ``with``, which gets
    ``stop``; stopped on the way out."""
    background = Background(run, stop, deadline=deadline)
    try:
        yield background.signal
    finally:
        background.stop()


class Lines:
    """A stream's lines (a child process's stdout or stderr), read on a plain thread into a queue.

    Each wait for a line takes at most ``timeout`` seconds (default TIMEOUT), then fails the
    test with ``queue.Empty``; a wait past the end of the output fails it with what was seen.
    """

    def __init__(self, stream: IO[str], timeout: float = TIMEOUT) -> None:
        self.timeout = timeout
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def next(self, timeout: float | None = None) -> str:
        """The next line, without its newline."""
        line = self._queue.get(timeout=self.timeout if timeout is None else timeout)
        assert line is not None, "output ended"
        return line

    def until(self, text: str, timeout: float | None = None) -> list[str]:
        """The lines up to and including the next one with ``text``."""
        seen: list[str] = []
        while True:
            line = self._queue.get(timeout=self.timeout if timeout is None else timeout)
            assert line is not None, f"output ended before a line with {text!r}; saw {seen}"
            seen.append(line)
            if text in line:
                return seen

    def next_matching(self, text: str, timeout: float | None = None) -> str:
        """The next line with ``text``, skipping the lines before it."""
        return self.until(text, timeout)[-1]

    def rest(self, timeout: float | None = None) -> str:
        """The lines still to come, up to the end of the output, joined by newlines."""
        seen: list[str] = []
        while (line := self._queue.get(timeout=self.timeout if timeout is None else timeout)) is not None:
            seen.append(line)
        self._queue.put(None)  # the end, for any later wait
        return "\n".join(seen)

    def join(self) -> bool:
        """Wait (at most TIMEOUT) until the stream ended and every line was queued: whether it did."""
        self._thread.join(TIMEOUT)
        return not self._thread.is_alive()


class ChildProcess:
    """A child process for the body of a ``with`` block, which owns its whole life.

    ``args`` starts at once, stdin from /dev/null, with ``env`` (default: this process's). Its
    stdout (``stdout=True``, the default) and stderr (``stderr=True``) are read as :class:`Lines`,
    :attr:`out` and :attr:`err`, whose waits take at most ``line_timeout`` seconds; ``log`` sends
    both to that file instead, and a stream neither read nor logged goes to /dev/null.

    :meth:`stop` sends a signal (default SIGTERM) and returns the exit code, waiting at most
    ``timeout`` seconds for it; :meth:`wait` only waits. On the way out of the block one still
    running gets SIGTERM and ``timeout`` seconds, then is killed; the readers are joined and the
    pipes closed. A kill there fails the test, unless the block raised already: the program did
    not stop when asked.
    """

    def __init__(
        self,
        args: Sequence[str],
        *,
        stdout: bool = True,
        stderr: bool = False,
        log: Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = TIMEOUT * 2,
        line_timeout: float = TIMEOUT,
    ) -> None:
        self.args = list(args)
        self.timeout = timeout
        if log is not None:
            with open(log, "wb") as file:
                self.process = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=file,
                                                stderr=subprocess.STDOUT, env=env, text=True)
        else:
            self.process = subprocess.Popen(
                self.args, stdin=subprocess.DEVNULL, env=env, text=True,
                stdout=subprocess.PIPE if stdout else subprocess.DEVNULL,
                stderr=subprocess.PIPE if stderr else subprocess.DEVNULL)
        self._out = self._read(self.process.stdout, line_timeout)
        self._err = self._read(self.process.stderr, line_timeout)

    @staticmethod
    def _read(pipe: IO[str] | None, timeout: float) -> Lines | None:
        return Lines(pipe, timeout) if pipe is not None else None

    @property
    def out(self) -> Lines:
        """Its stdout's lines."""
        assert self._out is not None, "stdout is not read"
        return self._out

    @property
    def err(self) -> Lines:
        """Its stderr's lines."""
        assert self._err is not None, "stderr is not read"
        return self._err

    @property
    def running(self) -> bool:
        """Whether it has not exited yet."""
        return self.process.poll() is None

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code, waiting at most ``timeout`` seconds (default: the one given) for it."""
        return self.process.wait(self.timeout if timeout is None else timeout)

    def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float | None = None) -> int:
        """Send ``sig`` unless it exited already, then :meth:`wait`: its exit code."""
        self.process.send_signal(sig)
        return self.wait(timeout)

    def __enter__(self) -> ChildProcess:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None,
    ) -> None:
        if self.running:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(self.timeout)
        killed = self.running
        if killed:
            self.process.kill()
            self.process.wait()
        for lines, pipe in ((self._out, self.process.stdout), (self._err, self.process.stderr)):
            if lines is not None and pipe is not None and lines.join():  # one still reading keeps it
                pipe.close()
        assert not killed or exc_type is not None, (
            f"{self.args} did not stop within {self.timeout} s of SIGTERM and was killed")


class Running(Background):
    """An informer of ``default``'s ConfigMaps over ``client`` (HTTP to ``server``) on a
    :class:`~kinformer.testing.FakeClock`, ``handler`` added, run as a :class:`Background`.

    The watch errors the informer reports collect in :attr:`errors`, in order; :meth:`error`
    waits for the next one. :meth:`lists` counts the lists ``server`` answered, and
    :meth:`relisted` steps the clock past backoffs until there was another.
    """

    def __init__(
        self, server: FakeAPIServer, client: Any, handler: Any, name: str = "running", *, start: bool = True
    ) -> None:
        self.server = server
        self.clock = FakeClock()
        self.handler = handler
        self.errors: list[BaseException] = []
        self._taken = 0  # errors handed out by error()
        self.informer = SharedIndexInformer(
            ListWatch.for_resource(client, CONFIGMAPS, namespace="default"), clock=self.clock, name=name)
        self.informer.add_event_handler(handler)
        self.informer.set_watch_error_handler(lambda reflector, error: self.errors.append(error))
        super().__init__(self.informer.run, start=start)

    def error(self) -> BaseException:
        """The next watch error not handed out yet, waiting at most TIMEOUT for it."""
        assert wait_for(lambda: len(self.errors) > self._taken, TIMEOUT), "no watch error"
        self._taken += 1
        return self.errors[self._taken - 1]

    def lists(self) -> int:
        """How many lists of ConfigMaps the server answered so far."""
        return sum(1 for _, path, query, _ in self.server.requests
                   if path.endswith("/configmaps") and query.get("watch") != "true")

    def relisted(self, lists: int, step: float) -> bool:
        """Step the clock ``step`` seconds at a time until the informer listed more than ``lists``
        times (False after TIMEOUT)."""
        def stepped() -> bool:
            self.clock.step(step)
            return self.lists() > lists
        return wait_for(stepped, TIMEOUT)


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
) -> Iterator[dict[str, ChildProcess]]:
    """Run ``docs/examples/<example>.py --replica NAME --kubeconfig PATH --fast`` once per name,
    each a :class:`ChildProcess` logging to ``logs/<name>.log``; yields name -> process.

    On the way out every process still running gets SIGTERM, all at once, and must exit 0 within
    TIMEOUT * 2 seconds (it is killed and the test fails otherwise).
    """
    with contextlib.ExitStack() as stack:
        started = {
            name: stack.enter_context(ChildProcess(
                [sys.executable, str(EXAMPLES / f"{example}.py"), "--replica", name,
                 "--kubeconfig", kubeconfig, "--fast"], log=logs / f"{name}.log"))
            for name in names}
        yield started
        running_ones = {name: replica for name, replica in started.items() if replica.running}
        for replica in running_ones.values():
            replica.process.terminate()
        codes = {name: replica.wait() for name, replica in running_ones.items()}
        assert set(codes.values()) <= {0}, f"replicas did not stop cleanly: {codes}"


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

    @property
    def connections(self) -> int:
        """How many connections it accepted so far (each a request left without an answer)."""
        return len(self._conns)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept
        self.sock.close()
        self._thread.join(TIMEOUT)
        for conn in self._conns:
            conn.close()


class EchoingServer(http.server.ThreadingHTTPServer):
    """A loopback server answering every request 401 with a body that echoes it: the request
    line and headers as text, or a ``Status`` whose message quotes the bearer token."""

    daemon_threads = True

    def __init__(self, as_status: bool) -> None:
        super().__init__(("127.0.0.1", 0), _Echo)
        self.as_status = as_status
        self.thread = threading.Thread(target=self.serve_forever, name="test-echoing-server")
        self.thread.start()

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        self.thread.join(TIMEOUT)


class _Echo(http.server.BaseHTTPRequestHandler):
    server: EchoingServer

    def do_GET(self) -> None:
        if self.server.as_status:
            credential = self.headers.get("Authorization", "").split()[-1]
            body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                               "code": 401, "reason": "Unauthorized",
                               "message": f"token {credential} has expired ({self.path})"}).encode()
        else:
            headers = "".join(f"{k}: {v}\n" for k, v in self.headers.items())
            body = f"denied {self.command} {self.path}\n{headers}".encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json" if self.server.as_status else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))  # the body, unanswered
        self.do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        pass

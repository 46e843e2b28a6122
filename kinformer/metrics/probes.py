"""ProbeServer: ``/healthz``, ``/readyz`` and ``/metrics`` over HTTP, as a controller in a Pod serves them.

Kubernetes points a liveness probe at ``/healthz`` and a readiness probe at ``/readyz``; each
runs the checks added for it and answers like kube-apiserver: 200 ``ok``, or 500 with one
``[+]name ok`` / ``[-]name failed: reason`` line per check (that listing also on 200 with
``?verbose``; ``?exclude=name`` skips a check; ``/readyz/<name>`` runs one). ``/metrics`` is the
Prometheus text format of the registry the
:class:`~kinformer.metrics.prometheus.PrometheusMetricsProvider` fills (the ``prometheus``
extra). Ready-made checks: :func:`informers_synced_check`, :func:`leader_election_check`.
A failed check's reason is its exception's message with credentials hidden
(:func:`kinformer.errors.redact`): a probe body is read by whoever can reach the port.
"""

from __future__ import annotations

import http.server
import logging
import socket
import socketserver
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from kinformer import _checks, _threads, errors
from kinformer import context as context_module
from kinformer.metrics import provider as provider_module

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # a request's errors: none may quote a token

CHECK_TIMEOUT = 0.5  # seconds a check may take; the kubelet gives a whole probe 1 s by default
REQUEST_TIMEOUT = 5.0  # seconds a client may take to send its request before it is dropped
JOIN_TIMEOUT = 5.0  # seconds stop() waits for request and check threads before naming them

Check = Callable[[], object]
_EXCLUDED = "excluded"  # the reason of a check skipped with ?exclude=, told apart by identity


class _Synced(Protocol):
    def has_synced(self) -> bool: ...


class _Elector(Protocol):
    def check(self, max_tolerable_expired_lease: float) -> None: ...


def informers_synced_check(*informers: _Synced) -> Check:
    """A check failing while any of ``informers`` (anything with ``has_synced()``) is not synced,
    or has stopped (those with ``is_stopped()``, as a :class:`~kinformer.SharedIndexInformer`):
    a stopped informer's cache follows the server no more, though it stays synced.

    The reason names the informers not synced yet and those stopped (by their ``name`` when
    they have one).
    """

    def check() -> None:
        pending: list[str] = []
        stopped: list[str] = []
        for i in informers:
            is_stopped = getattr(i, "is_stopped", None)
            if is_stopped is not None and is_stopped():
                stopped.append(str(getattr(i, "name", i)))
            elif not i.has_synced():
                pending.append(str(getattr(i, "name", i)))
        reasons = [f"{what}: {', '.join(names)}" for what, names in
                   (("not synced", pending), ("stopped", stopped)) if names]
        if reasons:
            raise errors.KinformerError("; ".join(reasons))

    return check


def leader_election_check(elector: _Elector, max_tolerable_expired_lease: float = 0.0) -> Check:
    """A check calling ``elector.check(max_tolerable_expired_lease)``: fails while it raises.

    A leader elector's check raises while this process leads on a lease it failed to renew for
    longer than the lease duration plus ``max_tolerable_expired_lease`` seconds: a liveness
    check, so a stuck leader is restarted and another candidate can take over.
    ``max_tolerable_expired_lease`` is finite seconds, else :class:`~kinformer.ConfigurationError`.
    """
    _checks.seconds("max_tolerable_expired_lease", max_tolerable_expired_lease)

    def check() -> None:
        elector.check(max_tolerable_expired_lease)

    return check


class _Outcome:
    """The answer of one check run; written by the check's thread, read by the request's."""

    __slots__ = ("done", "reason")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.reason: str | None = None  # None: passed


class _CheckEntry:
    """A named check and the thread of its run still going, if any."""

    __slots__ = ("fn", "name", "running")

    def __init__(self, name: str, fn: Check) -> None:
        self.name = name
        self.fn = fn
        self.running: threading.Thread | None = None  # guarded by ProbeServer._lock


class ProbeServer:
    """Serves health and readiness checks and Prometheus metrics over HTTP, on its own threads.

    Binds ``host`` (loopback by default; give ``"0.0.0.0"`` inside a Pod so the kubelet and
    Prometheus reach it) and ``port`` (0: any free port, see :attr:`port`). Only GET is served;
    other methods get 405. Each request runs its checks at once, each on its own thread
    (``kinformer-probes-check-<name>``); a check fails when it raises or returns False, and a
    check still running after ``check_timeout`` seconds fails without holding up the answer
    (it is not started again while that run goes on); a ``port`` outside 0-65535 or a
    ``check_timeout`` that is not positive, finite seconds raises
    :class:`~kinformer.ConfigurationError`. ``registry`` is the Prometheus registry
    served on ``/metrics``; by default the current provider's, else ``prometheus_client``'s
    global one; without the ``prometheus`` extra ``/metrics`` answers 404.

    Checks may be added before or after :meth:`start`. ``start`` runs once; :meth:`stop` stops
    serving and joins every thread started here (a check still hanging is named in a warning
    after a bounded wait). Also a context manager, and :meth:`run` blocks until a stop signal.
    All methods are thread-safe.

    Example::

        probes = ProbeServer("0.0.0.0", 8081)
        probes.add_readyz_check("informers", informers_synced_check(informer))
        probes.start()
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        registry: Any = None,
        check_timeout: float = CHECK_TIMEOUT,
    ) -> None:
        self.host = host
        self._requested_port = _checks.integer("port", port, minimum=0, maximum=65535)
        self.registry = registry
        self.check_timeout = _checks.seconds("check_timeout", check_timeout, positive=True)
        self._lock = threading.Lock()  # guards the check lists, _threads_alive, _server, _state
        self._checks: dict[str, list[_CheckEntry]] = {"healthz": [], "readyz": []}
        self._threads_alive: set[threading.Thread] = set()  # request and check threads
        self._server: _HTTPServer | None = None
        self._serve_thread: threading.Thread | None = None
        self._state = "new"  # new -> started -> stopped

    # -- configuration --------------------------------------------------------------------------

    def add_healthz_check(self, name: str, fn: Check) -> None:
        """Run ``fn()`` for ``/healthz`` (liveness) under ``name``; ConfigurationError if taken."""
        self._add("healthz", name, fn)

    def add_readyz_check(self, name: str, fn: Check) -> None:
        """Run ``fn()`` for ``/readyz`` (readiness) under ``name``; ConfigurationError if taken."""
        self._add("readyz", name, fn)

    def _add(self, endpoint: str, name: str, fn: Check) -> None:
        if not name or "/" in name or any(c.isspace() for c in name):
            raise errors.ConfigurationError(f"check name must be non-empty, without '/' or spaces: {name!r}")
        if not callable(fn):
            raise errors.ConfigurationError(f"check {name!r} is not callable: {fn!r}")
        with self._lock:
            if any(entry.name == name for entry in self._checks[endpoint]):
                raise errors.ConfigurationError(f"{endpoint} check {name!r} is already added")
            self._checks[endpoint].append(_CheckEntry(name, fn))

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port; raises LifecycleError before :meth:`start`."""
        server = self._server
        if server is None:
            raise errors.LifecycleError("probe server is not started")
        return int(server.server_address[1])

    @property
    def url(self) -> str:
        """``http://host:port`` of the started server (no trailing slash)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> None:
        """Bind and start serving on a thread (``kinformer-probes-<port>``); returns at once.

        Raises AlreadyStartedError on a second call and OSError when the address is taken.
        """
        with self._lock:
            if self._state != "new":
                raise errors.AlreadyStartedError("probe server has already started")
            server = _HTTPServer(self)
            self._server = server
            self._state = "started"
            self._serve_thread = _threads.spawn(
                server.serve_forever, _threads.thread_name("probes", self.port), 0.1
            )
        log.info("probe server listening url=%s", self.url)

    def stop(self) -> None:
        """Stop serving and join every thread started here; idempotent, a no-op before start."""
        with self._lock:
            if self._state != "started":
                self._state = "stopped"
                return
            self._state = "stopped"
            server, serve_thread = self._server, self._serve_thread
        assert server is not None and serve_thread is not None
        server.shutdown()
        server.server_close()
        threads = [serve_thread]
        with self._lock:
            threads += list(self._threads_alive)
        _threads.join_all(threads, JOIN_TIMEOUT)
        log.info("probe server stopped")

    def run(self, stop: context_module.StopSignal) -> None:
        """Start, block until ``stop`` fires, then :meth:`stop`."""
        self.start()
        try:
            stop.wait()
        finally:
            self.stop()

    def __enter__(self) -> ProbeServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.url if self._server is not None else f"{self.host}:{self._requested_port}"
        return f"<ProbeServer {where} {self._state}>"

    # -- checks ---------------------------------------------------------------------------------

    def _run_checks(
        self, endpoint: str, only: str | None, excluded: Iterable[str]
    ) -> list[tuple[str, str | None]] | None:
        """``[(name, failure reason or None)]`` in the order added; None when ``only`` is unknown."""
        skip = set(excluded)
        with self._lock:
            entries = list(self._checks[endpoint])
        if only is not None:
            entries = [e for e in entries if e.name == only]
            if not entries:
                return None
        started: list[tuple[_CheckEntry, _Outcome | None]] = []
        for entry in entries:
            if entry.name in skip:
                started.append((entry, None))
                continue
            started.append((entry, self._start_check(entry)))
        deadline = time.monotonic() + self.check_timeout
        results: list[tuple[str, str | None]] = []
        for entry, outcome in started:
            if outcome is None:
                results.append((entry.name, _EXCLUDED))
                continue
            if not outcome.done.wait(max(0.0, deadline - time.monotonic())):
                results.append((entry.name, f"timed out after {self.check_timeout:g}s"))
                continue
            results.append((entry.name, outcome.reason))
        return results

    def _start_check(self, entry: _CheckEntry) -> _Outcome:
        """Run ``entry`` on its own thread; an outcome failed at once if a run is still going."""
        outcome = _Outcome()
        with self._lock:
            if entry.running is not None:
                outcome.reason = "still running from an earlier probe"
                outcome.done.set()
                return outcome
            if self._state != "started":
                outcome.reason = "probe server stopped"
                outcome.done.set()
                return outcome
            thread = threading.Thread(
                target=self._check_thread,
                args=(entry, outcome),
                name=_threads.thread_name("probes-check", entry.name),
                daemon=True,
            )
            entry.running = thread
            self._threads_alive.add(thread)
        thread.start()
        return outcome

    def _check_thread(self, entry: _CheckEntry, outcome: _Outcome) -> None:
        try:
            if entry.fn() is False:
                outcome.reason = "returned False"
        except Exception as exc:
            # any exception: one of the official client's quotes the answer, which may echo a token
            outcome.reason = errors.redact(" ".join(str(exc).split())) or type(exc).__name__
        finally:
            with self._lock:
                entry.running = None
                self._threads_alive.discard(threading.current_thread())
            outcome.done.set()

    def _track(self, thread: threading.Thread, alive: bool) -> None:
        with self._lock:
            if alive:
                self._threads_alive.add(thread)
            else:
                self._threads_alive.discard(thread)

    # -- answers --------------------------------------------------------------------------------

    def _health(self, endpoint: str, only: str | None, query: dict[str, list[str]]) -> tuple[int, str]:
        """Status and body of ``/healthz`` or ``/readyz`` (``only``: one named check)."""
        results = self._run_checks(endpoint, only, query.get("exclude", []))
        if results is None:
            return 404, f"no {endpoint} check named {only!r}\n"
        lines: list[str] = []
        failed: list[str] = []
        for name, reason in results:
            if reason is _EXCLUDED:
                lines.append(f"[+]{name} excluded: ok")
            elif reason is None:
                lines.append(f"[+]{name} ok")
            else:
                lines.append(f"[-]{name} failed: {reason}")
                failed.append(name)
        known = {name for name, _ in results}
        unknown = [name for name in query.get("exclude", []) if name not in known]
        if unknown:
            lines.append(f"warn: some health checks cannot be excluded: no matches for {', '.join(unknown)}")
        listing = "".join(line + "\n" for line in lines)
        label = f"{endpoint}/{only}" if only else endpoint
        if failed:
            log.info("%s check failed: %s", label, ", ".join(failed))
            return 500, f"{listing}{label} check failed\n"
        if "verbose" not in query:
            return 200, "ok"
        return 200, f"{listing}{label} check passed\n"

    def _metrics(self, accept: str) -> tuple[int, str, bytes]:
        """Status, content type and body of ``/metrics``."""
        try:
            from prometheus_client import REGISTRY, exposition
        except ImportError:
            return 404, _TEXT, b"metrics need the prometheus extra: pip install 'kinformer[prometheus]'\n"
        registry = self.registry
        if registry is None:
            registry = getattr(provider_module.get_provider(), "registry", None) or REGISTRY
        encoder, content_type = exposition.choose_encoder(accept)
        return 200, content_type, encoder(registry)


_TEXT = "text/plain; charset=utf-8"


class _HTTPServer(http.server.HTTPServer):
    """The listening socket; each connection is handled on a named thread tracked for stop()."""

    allow_reuse_address = True

    def __init__(self, probes: ProbeServer) -> None:
        self.probes = probes
        if ":" in probes.host:
            self.address_family = socket.AF_INET6
        super().__init__((probes.host, probes._requested_port), _Handler)

    def server_bind(self) -> None:
        # skip HTTPServer's reverse name lookup of the host: it can stall on a Pod's DNS
        socketserver.TCPServer.server_bind(self)
        self.server_name = str(self.server_address[0])
        self.server_port = int(self.server_address[1])

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._handle,
            args=(request, client_address),
            name=_threads.thread_name("probes-request", self.server_port),
            daemon=True,
        )
        self.probes._track(thread, True)
        thread.start()

    def _handle(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            log.debug("probe request from %s failed", client_address, exc_info=True)
        finally:
            self.shutdown_request(request)
            self.probes._track(threading.current_thread(), False)


class _Handler(http.server.BaseHTTPRequestHandler):
    """One request: GET of /healthz, /readyz (optionally /<check>) or /metrics; 405 otherwise."""

    server: _HTTPServer
    timeout = REQUEST_TIMEOUT
    server_version = "kinformer-probes"

    def do_GET(self) -> None:
        probes = self.server.probes
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        parts = [p for p in url.path.split("/") if p]
        if parts in (["healthz"], ["readyz"]) or (len(parts) == 2 and parts[0] in ("healthz", "readyz")):
            status, body = probes._health(parts[0], parts[1] if len(parts) == 2 else None, query)
            self._answer(status, _TEXT, body.encode())
        elif parts == ["metrics"]:
            status, content_type, data = probes._metrics(self.headers.get("Accept", ""))
            self._answer(status, content_type, data)
        else:
            self._answer(404, _TEXT, b"404 page not found\n")

    def __getattr__(self, name: str) -> Any:
        # the base class looks up do_<METHOD> for each request: every method but GET gets 405
        if name.startswith("do_"):
            return self._not_allowed
        raise AttributeError(name)

    def _not_allowed(self) -> None:
        self._answer(405, _TEXT, b"method not allowed: only GET is served\n", allow="GET")

    def _answer(self, status: int, content_type: str, body: bytes, allow: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Length", str(len(body)))
        if allow is not None:
            self.send_header("Allow", allow)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("probe request %s: " + format, self.address_string(), *args)

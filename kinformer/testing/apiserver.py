"""FakeAPIServer: a Kubernetes-compatible API server on loopback for tests, benchmarks and demos.

A real HTTP/1.1 server (HTTPS with a throwaway CA when a bearer token is set) that the official
``kubernetes`` client, kubectl and client-go use unchanged: discovery, CRUD, list with
pagination and resource versions, chunked watch streams with bookmarks, CRDs, and the
behaviours where a fake usually differs from kube-apiserver. The listener and request handling
live in ``_apiserver.wire``, objects and watches in ``_apiserver.storage``, the per-type rules in
``_apiserver.registry``; this module owns the lifecycle, the fault switches and the server-side
helpers.

Example::

    with FakeAPIServer() as server:
        server.write_kubeconfig("kubeconfig")
        api = kubernetes.client.CoreV1Api(server.api_client())
        api.list_namespaced_config_map("default")
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from kinformer import _checks, _gc, _threads, errors
from kinformer.gvr import GroupVersionResource, KubeObject
from kinformer.testing import _tempdirs
from kinformer.testing._apiserver import clusters, records, server_state, status, tls
from kinformer.testing._apiserver.clusters import ROOT, WILDCARD
from kinformer.testing._apiserver.resources import ResourceType
from kinformer.testing._apiserver.status import StatusError
from kinformer.testing._apiserver.storage import storage as store
from kinformer.testing._apiserver.storage import watchers
from kinformer.testing._apiserver.wire import request as parsing
from kinformer.testing._apiserver.wire import serving, shards

TLS_DIR_PREFIX = "kinformer-apiserver-"  # with a token: the TLS material, in an OwnedDirectory
POLL_INTERVAL = 0.05  # how long stop() may wait for the accept loop to notice


class FakeAPIServer:
    """A Kubernetes API server on loopback, speaking the real REST protocol.

    ``start()``/``stop()`` or a ``with`` block; ``stop()`` closes every connection and joins every
    ``kinformer-apiserver-*`` thread, and ``start()`` again serves the same state on the same
    port. All methods are thread-safe. The server-side helpers (``create``, ``update``, ...)
    bypass HTTP and raise :class:`~kinformer.APIError` subclasses as a client would see.
    The bearer token, when given, is never logged nor shown in ``repr``.

    ``feature_gates`` turns on what a real server keeps behind a gate, off by default:
    ``{"ShardedListAndWatch": True}`` serves the ``shardSelector`` of lists and watches
    (:mod:`kinformer.sharding`). An unknown gate name raises
    :class:`~kinformer.ConfigurationError`, as does a number out of range: a ``port`` outside
    0-65535, a size below 1, an interval or wait that is not finite, positive seconds.

    ``logical_clusters=True`` serves kcp's logical clusters: a path prefixed
    ``/clusters/<name>`` (lowercase letters, digits and ``-``, in words joined by ``:``, e.g.
    ``root:org:team``; any other name is 400) addresses that logical cluster, which has its own
    objects, namespaces and CRDs and comes into being, with the default namespaces, the first
    time it is named; an unprefixed path addresses ``root``. Every object written there carries
    the annotation ``kcp.io/cluster: <name>``. ``/clusters/*`` lists and watches every logical
    cluster at once (one resourceVersion sequence for the whole server) and answers 405 to
    every other verb; its discovery documents list the built-in types and every CRD of any
    logical cluster. The helpers take ``cluster=`` (None: ``root``; ``"*"`` reads across
    clusters), and so do :meth:`api_client` and :meth:`kubeconfig`. Without it, ``/clusters/``
    paths are 404 and ``cluster=`` may only name ``root``.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        *,
        history_size: int = 10_000,
        bookmark_interval: float = 60.0,
        future_rv_wait: float = 3.0,
        max_backlog: int = 200_000,
        feature_gates: Mapping[str, bool] | None = None,
        logical_clusters: bool = False,
    ) -> None:
        self._host = host
        self._port = _checks.integer("port", port, minimum=0, maximum=65535)
        _checks.integer("history_size", history_size, minimum=1)
        _checks.integer("max_backlog", max_backlog, minimum=1)
        _checks.seconds("bookmark_interval", bookmark_interval, positive=True)
        _checks.seconds("future_rv_wait", future_rv_wait)
        self._storage = store.Storage(history_size=history_size, max_backlog=max_backlog,
                                      future_rv_wait=future_rv_wait,
                                      logical_clusters=bool(logical_clusters))
        self._state = server_state.ServerState(
            self._storage, token, bookmark_interval, self.check_feature_gates(feature_gates or {}))
        self._lifecycle = threading.Lock()  # guards _server, _thread, _port
        self._server: serving.HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._tls_dir: _tempdirs.OwnedDirectory | None = None
        self._tls: tls.Material | None = None
        self._context: ssl.SSLContext | None = None
        if token is not None:
            self._tls_dir = _tempdirs.OwnedDirectory(TLS_DIR_PREFIX)
            self._tls = tls.generate(self._tls_dir.name, host)
            self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._context.load_cert_chain(self._tls.cert, self._tls.key)

    @staticmethod
    def check_feature_gates(gates: Mapping[str, bool]) -> dict[str, bool]:
        """``gates`` as the server would take them; an unknown name raises ConfigurationError."""
        return shards.check_gates(gates)

    def __repr__(self) -> str:
        state = "running" if self._server is not None else "stopped"
        return f"<FakeAPIServer {self.url} {state}>"

    # ---- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeAPIServer:
        """Bind and serve on a background thread; a no-op when already running."""
        with self._lifecycle:
            if self._server is not None:
                return self
            server = serving.HTTPServer((self._host, self._port), self._state, self._context)
            self._port = server.server_port
            self._state.address = f"{self._host}:{self._port}"
            self._state.stopping.clear()
            self._server = server
            self._thread = _threads.spawn(server.serve_forever,
                                          _threads.thread_name("apiserver", self._port),
                                          poll_interval=POLL_INTERVAL)
            return self

    def stop(self, timeout: float = 5.0) -> None:
        """Close every connection (open watches end abruptly) and join every serving thread.

        Stored objects and versions survive: ``start()`` serves them again on the same port.
        """
        with self._lifecycle:
            server, thread = self._server, self._thread
            self._server = self._thread = None
            if server is None:
                return
            self._state.stopping.set()
            self._storage.signal_watchers(watchers.DROP)
            server.shutdown()
            workers = server.close_connections()
            server.server_close()
            _threads.join_all([t for t in (thread, *workers) if t is not None], timeout)

    def __enter__(self) -> FakeAPIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """Whether the server is accepting connections."""
        return self._server is not None

    # ---- client configuration ----------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (0 before the first start when none was asked for)."""
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``, or ``https://...`` when a token is set."""
        scheme = "https" if self._context is not None else "http"
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"{scheme}://{host}:{self._port}"

    @property
    def logical_clusters(self) -> bool:
        """Whether ``/clusters/<name>`` paths are served (``logical_clusters=True``)."""
        return self._storage.logical_clusters

    @property
    def ca_file(self) -> str | None:
        """The CA certificate path when serving HTTPS, else None."""
        return self._tls.ca if self._tls is not None else None

    def _url_of(self, cluster: str | None) -> str:
        """The URL a client of ``cluster`` talks to: ``url``, or ``url/clusters/<cluster>``."""
        if cluster is None:
            return self.url
        return f"{self.url}/{clusters.PREFIX}/{self._cluster(cluster)}"

    def api_client(self, cluster: str | None = None) -> Any:
        """A new ``kubernetes.client.ApiClient`` configured for this server (host, token, CA);
        with ``cluster``, for that logical cluster (``"*"``: across them, list and watch only)."""
        from kubernetes import client

        configuration = client.Configuration()
        configuration.host = self._url_of(cluster)
        token = self._state.token
        if token is not None:
            configuration.api_key = {"authorization": token.decode()}
            configuration.api_key_prefix = {"authorization": "Bearer"}
            configuration.ssl_ca_cert = self.ca_file
            configuration.verify_ssl = True
        return client.ApiClient(configuration)

    def kubeconfig(self, cluster: str | None = None) -> dict[str, Any]:
        """The kubeconfig document for this server (context ``kinformer``, namespace default);
        with ``cluster``, its server is that logical cluster's URL."""
        server: dict[str, Any] = {"server": self._url_of(cluster)}
        if self._tls is not None:
            with open(self._tls.ca, "rb") as f:
                server["certificate-authority-data"] = base64.b64encode(f.read()).decode()
        user: dict[str, Any] = {}
        if self._state.token is not None:
            user["token"] = self._state.token.decode()
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "kinformer", "cluster": server}],
            "users": [{"name": "kinformer", "user": user}],
            "contexts": [{"name": "kinformer", "context": {
                "cluster": "kinformer", "user": "kinformer", "namespace": "default"}}],
            "current-context": "kinformer",
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | os.PathLike[str], cluster: str | None = None) -> str:
        """Write the kubeconfig (owner-only permissions, it may hold the token); returns the path."""
        path = os.fspath(path)
        document = self.kubeconfig(cluster)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(document, f, indent=2)
        return path

    # ---- fault switches ----------------------------------------------------------------------

    def fail_next(
        self, count: int = 1, status: int = 500, verb: str | None = None,
        resource: str | None = None, retry_after: int | None = None,
    ) -> None:
        """Answer the next ``count`` resource requests (of ``verb``/``resource`` if given) with
        an error Status of HTTP ``status``. Discovery and health paths are not counted. A 429
        carries ``Retry-After`` (and ``details.retryAfterSeconds``) of ``retry_after`` whole
        seconds, 1 unless given; another status carries it only when given."""
        if verb is not None and verb not in server_state.VERBS:
            raise errors.ConfigurationError(f"unknown verb {verb!r}; one of {server_state.VERBS}")
        if retry_after is not None and (isinstance(retry_after, bool) or not isinstance(retry_after, int)
                                        or retry_after < 1):
            raise errors.ConfigurationError(f"retry_after must be whole seconds >= 1, not {retry_after!r}")
        with self._state.lock:
            self._state.failures.append(server_state._Failure(count, status, verb, resource, retry_after))

    def fail_discovery(self, count: int = 1, status: int = 503, path: str | None = None) -> None:
        """Answer the next ``count`` discovery requests (``/api``, ``/api/v1``, ``/apis``,
        ``/apis/<group>``, ``/apis/<group>/<version>``; only ``path``, one of those, if given)
        with an error Status of HTTP ``status``, as an aggregated API or a server starting up
        answers. :meth:`fail_next` leaves discovery alone."""
        if path is not None and not path.startswith(("/api", "/apis")):
            raise errors.ConfigurationError(f"not a discovery path: {path!r}")
        with self._state.lock:
            self._state.discovery_failures.append(
                server_state._Failure(count, status, None, path and path.rstrip("/")))

    def corrupt_next(
        self, body: bytes, count: int = 1, verb: str = "list", resource: str | None = None
    ) -> None:
        """Answer the next ``count`` ``verb`` requests with HTTP 200 and ``body`` as it is.

        For answers no real server sends: a list that is not JSON, not a list, or holds an
        object without a name. Only requests on ``resource`` (a plural) count, if given;
        :meth:`fail_next` failures are served first.
        """
        if verb not in server_state.VERBS:
            raise errors.ConfigurationError(f"unknown verb {verb!r}; one of {server_state.VERBS}")
        with self._state.lock:
            self._state.raw_answers.append(server_state._RawAnswer(count, bytes(body), verb, resource))

    def set_delay(self, seconds: float, verb: str | None = None) -> None:
        """Delay every request (of ``verb`` if given) by ``seconds``; 0 removes the delay."""
        seconds = _checks.seconds("seconds", seconds)
        with self._state.lock:
            if seconds > 0:
                self._state.delays[verb] = seconds
            else:
                self._state.delays.pop(verb, None)

    def pace_initial_events(self, seconds: float, end_bookmark: bool = True) -> None:
        """Write the initial events of watches started from now on (``sendInitialEvents``, or
        no resourceVersion) one at a time, ``seconds`` apart: a large state over a slow link, or
        a loaded server. ``end_bookmark=False`` leaves out the bookmark that ends them, as a
        server that ignores ``sendInitialEvents`` does. ``pace_initial_events(0)`` undoes both."""
        seconds = _checks.seconds("seconds", seconds)
        with self._state.lock:
            self._state.initial_pacing = (seconds, bool(end_bookmark))

    def forbid(self, resource: str, verb: str | None = None) -> None:
        """Answer 403 Forbidden to ``verb`` (every verb if None) on ``resource`` (a plural)."""
        with self._state.lock:
            self._state.forbidden.add((resource, verb))

    def allow(self, resource: str, verb: str | None = None) -> None:
        """Undo :meth:`forbid`."""
        with self._state.lock:
            self._state.forbidden.discard((resource, verb))

    def clear_faults(self) -> None:
        """Undo every :meth:`fail_next`, :meth:`fail_discovery`, :meth:`corrupt_next`,
        :meth:`set_delay`, :meth:`pace_initial_events` and :meth:`forbid` still in force: the
        server answers normally again."""
        with self._state.lock:
            self._state.failures.clear()
            self._state.discovery_failures.clear()
            self._state.raw_answers.clear()
            self._state.delays.clear()
            self._state.forbidden.clear()
            self._state.initial_pacing = (0.0, True)

    def drop_watches(self) -> int:
        """End every open watch abruptly (no terminating chunk); returns how many."""
        return self._storage.signal_watchers(watchers.DROP)

    def end_watches(self) -> int:
        """End every open watch cleanly, as a server-side timeout does; returns how many."""
        return self._storage.signal_watchers(watchers.STOP)

    def inject_watch_garbage(self, line: bytes = b"not json") -> int:
        """Make the next line of every open watch ``line`` (malformed); returns how many."""
        return self._storage.signal_watchers(watchers.GARBAGE, bytes(line))

    def cut_watches_midline(self) -> int:
        """Write half an event line on every open watch, then close it abruptly."""
        return self._storage.signal_watchers(watchers.CUT)

    def freeze_watches(self) -> int:
        """Stop writing to every open watch while keeping its connection open, as a hung server
        or a network path that died silently does: no event, bookmark or clean end at
        ``timeoutSeconds`` reaches it any more, and it ends only when its client gives up and
        closes the connection, at :meth:`drop_watches` or at :meth:`stop`; until then it counts in
        :meth:`watcher_count`. Watches opened later are served as usual. Returns how many."""
        return self._storage.signal_watchers(watchers.FREEZE)

    def compact(self) -> int:
        """Forget the event history: watches and Exact lists from older versions get 410."""
        return self._storage.compact()

    @property
    def requests(self) -> list[tuple[str, str, dict[str, str], int]]:
        """The requests served so far (the last 100,000): (method, path, query, HTTP status)."""
        with self._state.lock:
            return list(self._state.requests)

    def clear_requests(self) -> None:
        """Forget the requests recorded so far."""
        with self._state.lock:
            self._state.requests.clear()

    def watcher_count(self, gvr: GroupVersionResource, *, cluster: str | None = None) -> int:
        """Open watches on the resource of ``gvr`` (any version): on every logical cluster and
        across them when ``cluster`` is None, else on that one (``"*"``: those across them)."""
        return self._storage.watcher_count(gvr.group_resource, self._watched(cluster))

    def wait_for_watchers(self, gvr: GroupVersionResource, count: int = 1,
                          timeout: float = 5.0, *, cluster: str | None = None) -> bool:
        """Wait until at least ``count`` watches are open on ``gvr``'s resource (counted as
        :meth:`watcher_count` counts them)."""
        return self._storage.wait_for_watchers(gvr.group_resource, count, timeout,
                                               self._watched(cluster))

    def _watched(self, cluster: str | None) -> str | None:
        return None if cluster is None else self._cluster(cluster)

    # ---- server-side helpers -----------------------------------------------------------------

    def _cluster(self, cluster: str | None) -> str:
        """The logical cluster a helper addresses (None: the root); ConfigurationError for a
        name the server cannot serve."""
        if cluster is None:
            return ROOT
        if not isinstance(cluster, str):
            raise errors.ConfigurationError(f"cluster must be a str, not {cluster!r}")
        if cluster != ROOT and not self._storage.logical_clusters:
            raise errors.ConfigurationError(
                f"cluster={cluster!r} needs a server with logical_clusters=True")
        try:
            return clusters.check_name(cluster)
        except StatusError as err:
            raise errors.ConfigurationError(err.message) from None

    def _type(self, gvr: GroupVersionResource, cluster: str = ROOT,
              verb: str = "list") -> ResourceType:
        """The type of ``gvr`` served in ``cluster``; 404, or 405 for ``verb`` other than a
        list across clusters, as the server answers."""
        rt = self._storage.resolve(gvr.group, gvr.version, gvr.resource, cluster)
        if rt is None:
            raise errors.api_error_from_status(404, status.path_not_found().body())
        if cluster == WILDCARD and verb not in clusters.READ_ACROSS:
            raise errors.api_error_from_status(405, clusters.refuse_across(verb, rt).body())
        return rt

    def current_resource_version(self) -> str:
        """The latest resourceVersion, as a string."""
        return str(self._storage.resource_version)

    def create(self, gvr: GroupVersionResource, obj: KubeObject, *,
               cluster: str | None = None) -> KubeObject:
        """Create ``obj`` (namespace from its metadata) and return the stored copy."""
        where = self._cluster(cluster)
        rt = self._type(gvr, where, "create")
        body = records.copy(obj)
        ns = str((body.get("metadata") or {}).get("namespace") or "") if rt.namespaced else ""
        return self._call(lambda: self._storage.create(rt, ns, body, cluster=where))

    def preload(self, gvr: GroupVersionResource, objects: Iterable[KubeObject], *,
                cluster: str | None = None) -> str:
        """Store many objects at once, each as :meth:`create` stores it; returns the last
        resourceVersion.

        For loading a large data set in seconds: no HTTP request per object, one lock hold,
        the cyclic collector paused. Each object is copied (the caller's stay untouched) and
        gets what a create gives it: a uid, ``creationTimestamp``, its own resourceVersion
        (increasing in the order given), the type's defaults and starting status (a status
        given is kept, as for :meth:`create`), and an ADDED event for open watches. A
        ``managedFields`` given is kept; none is recorded.

        All or none: every object is checked before any is stored. The first that a create
        would refuse (a malformed body, an invalid name, a missing namespace, a name already
        stored or given twice) raises the :class:`~kinformer.APIError` subclass a create
        gets, its message beginning with the item's position and name (``item 3 (ns/a):
        ...``), and nothing is stored; an object that cannot be encoded as JSON raises
        :class:`~kinformer.errors.BadRequestError` the same way. Example::

            server.preload(PODS, (make_pod(i) for i in range(150_000)))

        ``cluster`` names the logical cluster to store into, as for :meth:`create`.
        """
        where = self._cluster(cluster)
        rt = self._type(gvr, where, "create")
        try:
            with _gc.paused():
                bodies = list(_copies(objects))
                return str(self._storage.bulk_create(rt, bodies, cluster=where))
        except StatusError as err:
            raise errors.api_error_from_status(err.code, err.body()) from None

    def bulk_create(self, gvr: GroupVersionResource, objs: Iterable[KubeObject], *,
                    cluster: str | None = None) -> str:
        """:meth:`preload` by its earlier name: many objects at once, all or none."""
        return self.preload(gvr, objs, cluster=cluster)

    def update(self, gvr: GroupVersionResource, obj: KubeObject, *,
               cluster: str | None = None) -> KubeObject:
        """Replace an object as PUT does (409 on a stale resourceVersion)."""
        where = self._cluster(cluster)
        rt = self._type(gvr, where, "update")
        body = records.copy(obj)
        meta = body.get("metadata") or {}
        ns = str(meta.get("namespace") or "") if rt.namespaced else ""
        return self._call(lambda: self._storage.update(rt, ns, str(meta.get("name", "")), body,
                                                       cluster=where))

    def delete(self, gvr: GroupVersionResource, namespace: str | None, name: str, *,
               cluster: str | None = None, propagation_policy: str | None = None) -> KubeObject:
        """Delete an object; returns its final state. ``propagation_policy`` ``"Orphan"`` or
        ``"Foreground"`` adds the garbage collector's finalizer (``orphan``,
        ``foregroundDeletion``) as a DELETE with that policy does: the object is then only
        marked, and goes when an update removes the finalizer."""
        where = self._cluster(cluster)
        rt = self._type(gvr, where, "delete")
        if propagation_policy is not None and propagation_policy not in parsing.GC_FINALIZERS:
            raise errors.ConfigurationError(f"propagation_policy must be one of "
                                            f"{sorted(parsing.GC_FINALIZERS)}, not {propagation_policy!r}")
        finalizer = None if propagation_policy is None else parsing.GC_FINALIZERS[propagation_policy]
        return self._call(lambda: self._storage.delete(rt, namespace or "", name, cluster=where,
                                                       gc_finalizer=finalizer)[0])

    def get(self, gvr: GroupVersionResource, namespace: str | None, name: str, *,
            cluster: str | None = None) -> KubeObject:
        """The stored object (a private copy)."""
        where = self._cluster(cluster)
        rt = self._type(gvr, where, "get")
        return self._call(lambda: self._storage.get(rt, namespace or "", name, where))

    def list_objects(self, gvr: GroupVersionResource, namespace: str | None = None, *,
                     cluster: str | None = None) -> list[KubeObject]:
        """Every stored object of the type (private copies), sorted by namespace and name;
        ``cluster="*"``: of every logical cluster, sorted by cluster first."""
        where = self._cluster(cluster)
        rt = self._type(gvr, where)
        return [records.loads(e.data) for e in self._storage.entries(rt, namespace or "", where)]

    def _call(self, op: Any) -> KubeObject:
        try:
            entry = op()
        except StatusError as err:
            raise errors.api_error_from_status(err.code, err.body()) from None
        obj: KubeObject = records.loads(entry.data)
        return obj


def _copies(objects: Iterable[Any]) -> Iterator[Any]:
    """A private copy of each object; one that cannot be encoded raises 400 naming it."""
    for index, obj in enumerate(objects):
        try:
            yield records.copy(obj)
        except (TypeError, ValueError) as exc:  # orjson's and json's encode errors
            problem = status.bad_request(f"the object cannot be encoded as JSON: {exc}")
            raise status.for_item(problem, index, obj) from None

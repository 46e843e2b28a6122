"""Cluster providers: what tells a multi-cluster factory which member clusters exist.

multicluster-runtime's ``Provider``, on threads. A provider's ``run(stop, engage, disengage)``
blocks until ``stop`` is cancelled, calling ``engage(name, api_client)`` when a cluster appears
or its credentials change and ``disengage(name)`` when it goes; the factory
(``factory.py``) keeps one set of informers per engaged cluster. :class:`StaticClusterProvider`
offers a fixed set of clients; the kubeconfig providers (``kubeconfig.py``) read contexts of a
kubeconfig file or kubeconfig Secrets of a hub cluster.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from kinformer import context, errors

log = logging.getLogger(__name__)

Engage = Callable[[str, Any], None]
"""``engage(name, api_client)``: start (or, called again, restart) watching cluster ``name``."""

Disengage = Callable[[str], None]
"""``disengage(name)``: stop watching cluster ``name``; a name not engaged is ignored."""


@runtime_checkable
class ClusterProvider(Protocol):
    """Reports member clusters joining, changing and leaving (multicluster-runtime's ``Provider``).

    ``run(stop, engage, disengage)`` blocks until ``stop`` (a :class:`~kinformer.Context`) is
    cancelled. It calls ``engage(name, api_client)`` when a cluster appears or its credentials
    change (then again, with the new client) and ``disengage(name)`` when it goes; both return
    promptly and never wait on the network. A provider may also offer ``has_synced() -> bool``,
    True once its first pass of engagements is done (it is then a
    :class:`SyncingClusterProvider`, as the static, contexts, Secret and ClusterProfile providers
    are); without it a provider counts as synced once its ``run`` has begun. An ``api_client``
    is a ``kubernetes.client.ApiClient`` (or anything :meth:`ListWatch.for_resource
    <kinformer.ListWatch.for_resource>` accepts); a provider that made it closes it once the
    cluster was disengaged or ``run`` returned.
    """

    def run(self, stop: context.Context, engage: Engage, disengage: Disengage) -> None: ...


@runtime_checkable
class SyncingClusterProvider(ClusterProvider, Protocol):
    """A :class:`ClusterProvider` that says when its first pass of engagements is done.

    ``has_synced()`` is the optional half of the provider protocol, declared here so that it is
    typed: a factory's ``has_synced()`` and ``wait_for_cache_sync()`` wait for it. Thread-safe
    and cheap: it is called from any thread, often.
    """

    def has_synced(self) -> bool: ...


def provider_synced(provider: ClusterProvider, run_began: bool) -> bool:
    """The provider's ``has_synced()`` when it is a :class:`SyncingClusterProvider`, else
    whether its ``run`` has begun."""
    if isinstance(provider, SyncingClusterProvider):
        return bool(provider.has_synced())
    return run_began


def check_name(name: Any) -> str:
    """``name`` when it is a non-empty string without ``|``, else
    :class:`~kinformer.ConfigurationError`: ``|`` ends the cluster in a cluster-aware key
    (``member-1|default/app``), so the keys of a cluster named ``prod|eu`` could not be split
    back into cluster, namespace and name."""
    if not isinstance(name, str) or not name:
        raise errors.ConfigurationError(f"a cluster name must be a non-empty string, got {name!r}")
    if "|" in name:
        raise errors.ConfigurationError(
            f"cluster name {name!r} holds '|', which ends the cluster in its objects' keys "
            "(<cluster>|<namespace>/<name>); name the cluster without it")
    return name


class HubWatch:
    """The run-once and synced bookkeeping of a provider that watches objects on a hub.

    The kubeconfig-Secret and ClusterProfile providers each run one informer over the hub with
    one handler that turns objects into engagements; this holds what they share. :meth:`claim`
    succeeds once (then :class:`~kinformer.AlreadyStartedError`); :meth:`run` registers the
    handler, runs the informer until ``stop`` and then closes the handler (its ``close()``);
    :meth:`has_synced` is True once the handler took every object of the first list.
    Thread-safe.
    """

    __slots__ = ("_lock", "_registration", "_started")

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _registration, _started
        self._registration: Any = None
        self._started = False

    def claim(self, owner: object) -> None:
        with self._lock:
            if self._started:
                raise errors.AlreadyStartedError(f"{owner!r} already started")
            self._started = True

    def run(self, stop: context.Context, informer: Any, handler: Any) -> None:
        registration = informer.add_event_handler(handler)
        with self._lock:
            self._registration = registration
        try:
            informer.run(stop)
        finally:
            handler.close()

    def has_synced(self) -> bool:
        with self._lock:
            registration = self._registration
        return registration is not None and bool(registration.has_synced())


class StaticClusterProvider:
    """A fixed set of member clusters: engages each of ``clusters`` (name to ``ApiClient``) once.

    Synced once every cluster was engaged. The clients stay the caller's: nothing closes them.
    Runs once at a time; a bad name raises :class:`~kinformer.ConfigurationError` here.

    Example, with ``east`` and ``west`` two API clients and ``stop`` a ``threading.Event``::

        factory = MultiClusterInformerFactory(StaticClusterProvider({"east": east, "west": west}))
        configmaps = factory.for_resource(GroupVersionResource("", "v1", "configmaps"))
        factory.start(stop)
        factory.wait_for_cache_sync(timeout=10)
        web = configmaps.lister().cluster("east").by_namespace("default").get("web")
        factory.shutdown()
    """

    def __init__(self, clusters: Mapping[str, Any]) -> None:
        self._clusters = {check_name(name): api_client for name, api_client in clusters.items()}
        self._synced = threading.Event()

    def run(self, stop: context.Context, engage: Engage, disengage: Disengage) -> None:
        """Engage every cluster, then wait for ``stop``."""
        for name, api_client in self._clusters.items():
            if stop.cancelled():
                return
            engage(name, api_client)
        self._synced.set()
        stop.wait()

    def has_synced(self) -> bool:
        """True once every cluster was engaged."""
        return self._synced.is_set()

    def __repr__(self) -> str:
        return f"<StaticClusterProvider {', '.join(self._clusters) or 'no clusters'}>"

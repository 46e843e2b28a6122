"""Cluster providers that read kubeconfigs: the contexts of a file, or Secrets on a hub cluster.

:class:`KubeconfigContextsProvider` engages one cluster per context of a kubeconfig file, as
``kubectl --context`` would reach it. :class:`KubeconfigSecretProvider` is multicluster-runtime's
kubeconfig provider: it watches, through a kinformer informer, the Secrets of one namespace of a
hub cluster labelled ``sigs.k8s.io/multicluster-runtime-kubeconfig=true`` and engages one
cluster per Secret from the kubeconfig under its ``kubeconfig`` key, so a hub built for
multicluster-runtime works unchanged. Both make their clients with the official client's
kubeconfig loader (:func:`client_from_kubeconfig`) and close them once done. Credentials never
reach a log line: a kubeconfig that does not parse is reported by position, not by content.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import os
import threading
from collections.abc import Iterable
from typing import Any

from kinformer import _checks, _threads, context, errors, meta
from kinformer.cache import store
from kinformer.client import listwatch, pool
from kinformer.clusters import credentials
from kinformer.clusters.provider import Disengage, Engage, HubWatch
from kinformer.gvr import GroupVersionResource
from kinformer.informer import SharedIndexInformer

log = logging.getLogger(__name__)

SECRETS = GroupVersionResource("", "v1", "secrets")
DEFAULT_SECRET_LABEL = "sigs.k8s.io/multicluster-runtime-kubeconfig"  # multicluster-runtime's
DEFAULT_SECRET_KEY = "kubeconfig"  # multicluster-runtime's DefaultKubeconfigSecretKey
CREDENTIAL_TIMEOUT = 60.0  # seconds a context's credential plugin may take before it is skipped
LOAD_JOIN_TIMEOUT = 5.0  # a stop kills a loading plugin within a moment; this only bounds a bug


def member_configuration() -> Any:
    """A fresh ``kubernetes.client.Configuration`` for a member cluster's client: as the
    official client's loaders make one, with :func:`member_settings`."""
    from kubernetes.client import Configuration

    return member_settings(type.__call__(Configuration))  # without the copy of the default one


def member_settings(configuration: Any) -> Any:
    """``configuration``, before a member's ``ApiClient`` is made of it, with urllib3's
    retries off (``retries = False``) and, where the official client offers it
    (``keep_alive``), TCP keepalive on.

    kinformer's own requests never use urllib3's retries, and retry with backoff of their
    own; urllib3's would retry each other request to a member that went down three times,
    each with a multi-line WARNING. A request through such a client that cannot connect
    raises at once instead. Keepalive is client-go's (probes after 30 s idle, 15 s apart,
    9 unanswered end the connection): a watch whose peer vanished without a reset breaks
    within three minutes even on a server that sends no bookmarks, where it would wait for
    its end (up to 10.5 minutes), and an idle watch is not dropped silently by a NAT or load
    balancer. Only clients the providers make are so (the kubeconfig providers' and
    :class:`~kinformer.ClusterProfileProvider`'s); a client given to
    :class:`~kinformer.StaticClusterProvider` stays as its owner made it.
    """
    configuration.retries = False
    if hasattr(configuration, "keep_alive"):  # newer official clients; kinformer's pools read it
        configuration.keep_alive = True
    return configuration


def client_from_kubeconfig(document: bytes | str, context_name: str | None = None,
                           credential_timeout: float = CREDENTIAL_TIMEOUT, *,
                           stop: context.Context | None = None) -> Any:
    """A new ``kubernetes.client.ApiClient`` for a kubeconfig document (YAML or JSON) and its
    ``context_name`` (default: its current context), made for a member cluster
    (:func:`member_configuration`: urllib3's retries off, TCP keepalive on).

    Nothing is sent over the network. A user's ``exec`` credential plugin runs for at most
    ``credential_timeout`` seconds, and is killed when ``stop`` is cancelled. A document that
    is not a usable kubeconfig (its plugin fails, hangs or gives nothing; its context names a
    missing user) raises :class:`~kinformer.ConfigurationError` saying why without quoting it
    (it holds credentials); so does a plugin killed by ``stop``.
    """
    import types

    import yaml
    from kubernetes.client import ApiClient
    from kubernetes.config.config_exception import ConfigException

    try:
        parsed = yaml.safe_load(document)
    except yaml.YAMLError as err:
        raise errors.ConfigurationError(f"not a kubeconfig: {_yaml_problem(err)}") from None
    if not isinstance(parsed, dict):
        raise errors.ConfigurationError(f"not a kubeconfig: a {type(parsed).__name__}, not a mapping")
    try:
        with credentials.attempt(credential_timeout, stop, name="kubeconfig-credentials") as ctx:
            configuration = member_configuration()
            credentials.load_context(types.SimpleNamespace(config=parsed, save_changes=None),
                                     context_name, configuration, ctx, persist=False,
                                     interactive=False)
        return ApiClient(configuration=configuration)
    except credentials.PluginStopped as err:
        if stop is not None and stop.cancelled():
            raise errors.ConfigurationError(
                f"not a usable kubeconfig: its credential plugin {err.command} was stopped") from None
        raise errors.ConfigurationError(
            f"not a usable kubeconfig: its credential plugin {err.command} did not finish within "
            f"{credential_timeout:g}s") from None
    except credentials.CredentialsError as err:  # names the user and plugin, no credential
        raise errors.ConfigurationError(f"not a usable kubeconfig: {err}") from None
    except ConfigException as err:  # its messages name keys and entries, never their values
        raise errors.ConfigurationError(f"not a usable kubeconfig: {err}") from None
    except Exception as err:  # the loader raises anything on a document of the wrong shape
        raise errors.ConfigurationError(
            f"not a usable kubeconfig: the loader failed with {type(err).__name__}") from None


def _yaml_problem(err: Exception) -> str:
    """A YAML error without the snippet of the document PyYAML quotes (it may hold a token)."""
    problem = getattr(err, "problem", None) or getattr(err, "context", None) or type(err).__name__
    mark = getattr(err, "problem_mark", None)
    if mark is not None:
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return str(problem)


class KubeconfigContextsProvider:
    """One cluster per context of a kubeconfig file, named after the context.

    ``path`` defaults to ``$KUBECONFIG`` (its files merged, as kubectl does) or
    ``~/.kube/config``; ``contexts`` limits it to those contexts. The file is read here: a
    missing or unreadable file, or a context it lacks, raises
    :class:`~kinformer.ConfigurationError`. ``run`` makes a client per context, each on a
    thread of its own, engages each once it is made and closes them when it returns; a context
    whose client cannot be made (its credential plugin fails, gives nothing, or takes more than
    ``credential_timeout`` seconds and is killed; its user is missing) is logged as an error
    and skipped, and holds no other context back. Synced once every context was engaged or
    skipped. Its clients have urllib3's retries off and TCP keepalive on
    (:func:`member_configuration`).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None,
                 contexts: Iterable[str] | None = None,
                 credential_timeout: float = CREDENTIAL_TIMEOUT) -> None:
        from kubernetes.config import kube_config as loader
        from kubernetes.config.config_exception import ConfigException

        kube_config: Any = loader  # untyped
        self._path = os.fspath(path) if path is not None else (
            os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config"))
        try:  # the merge alone: no current context is needed to list them all
            merger = kube_config.KubeConfigMerger(self._path)
            if merger.config is None:
                raise ConfigException("Invalid kube-config file. No configuration found.")
            found = [entry.value if hasattr(entry, "value") else entry
                     for entry in merger.config["contexts"]]
        except Exception as err:
            reason = str(err) if not hasattr(err, "problem_mark") else _yaml_problem(err)
            raise errors.ConfigurationError(
                f"cannot read kubeconfig {self._path}: {reason}") from None
        names = [str(c["name"]) for c in found or () if isinstance(c, dict) and c.get("name")]
        if contexts is not None:
            wanted = list(dict.fromkeys(contexts))
            missing = [name for name in wanted if name not in names]
            if missing:
                raise errors.ConfigurationError(
                    f"kubeconfig {self._path} has no context {', '.join(map(repr, missing))}; "
                    f"it has: {', '.join(names) or 'none'}")
            names = wanted
        self._contexts = names
        self._merger = merger
        self._credential_timeout = _checks.seconds("credential_timeout", credential_timeout,
                                                   positive=True)
        self._synced = threading.Event()

    @property
    def contexts(self) -> list[str]:
        """The contexts engaged, in order."""
        return list(self._contexts)

    def run(self, stop: context.Context, engage: Engage, disengage: Disengage) -> None:
        """Engage every context's cluster, wait for ``stop``, then close the clients.

        Each context is loaded on a thread of its own, so one whose credential plugin hangs
        engages late or not at all while the others engage at once; ``stop`` kills a plugin
        still running.
        """
        clients: list[Any] = []
        lock = threading.Lock()  # guards clients
        loads = stop.child("kubeconfig-contexts")

        def load(name: str) -> None:
            try:
                with credentials.attempt(self._credential_timeout, loads, f"context-{name}") as ctx:
                    api_client = self._client(name, ctx)
            except credentials.PluginStopped as err:
                if not loads.cancelled():  # not a stop: the plugin's time ran out
                    log.error("kubeconfig %s: context %s skipped: its credential plugin %s did "
                              "not finish within %gs", self._path, name, err.command,
                              self._credential_timeout)
                return
            if api_client is None:
                return
            with lock:
                if loads.cancelled():  # stopped meanwhile: engage nothing more
                    _close(api_client)
                    return
                clients.append(api_client)
            try:
                engage(name, api_client)
            except errors.ConfigurationError as err:  # a name no cluster can have
                log.error("kubeconfig %s: context %s skipped: %s", self._path, name, err)

        threads = [_threads.spawn(load, _threads.thread_name("kubeconfig", name), name)
                   for name in self._contexts]
        try:
            for thread in threads:
                while thread.is_alive() and not stop.cancelled():
                    thread.join(0.1)
            if not stop.cancelled():
                self._synced.set()
            stop.wait()
        finally:
            loads.cancel()  # a plugin still running is killed within a moment
            _threads.join_all(threads)
            with lock:
                for api_client in clients:
                    _close(api_client)

    def _client(self, name: str, ctx: context.Context) -> Any:
        """A client of context ``name``, or None (logged) when it cannot be made; raises
        :class:`~kinformer.clusters.credentials.PluginStopped` when ``ctx`` killed its plugin."""
        from kubernetes.client import ApiClient

        try:
            configuration = member_configuration()
            credentials.load_context(self._merger, name, configuration, ctx, persist=False,
                                     interactive=False)
            return ApiClient(configuration=configuration)
        except credentials.PluginStopped:
            raise
        except credentials.CredentialsError as err:  # names the user and plugin, no credential
            log.error("kubeconfig %s: context %s skipped: %s", self._path, name, err)
        except Exception as err:
            log.error("kubeconfig %s: context %s skipped: %s", self._path, name, type(err).__name__)
        return None

    def has_synced(self) -> bool:
        """True once every context was engaged."""
        return self._synced.is_set()

    def __repr__(self) -> str:
        return f"<KubeconfigContextsProvider {self._path} contexts={len(self._contexts)}>"


class KubeconfigSecretProvider:
    """multicluster-runtime's kubeconfig provider: a cluster per kubeconfig Secret on a hub.

    ``run`` watches, with a :class:`~kinformer.SharedIndexInformer` over ``hub_client``, the
    Secrets of ``namespace`` labelled ``<label>=true``. Each is a cluster named after the
    Secret, reached through the kubeconfig (current context) under ``data[key]``. A new
    Secret engages its cluster; a changed kubeconfig engages it again with a new client
    (the factory disengages it first); a deleted Secret, one that lost the label, or one
    without ``key`` disengages it. A kubeconfig that does not parse is logged and skipped
    (a cluster it would have replaced keeps its working client); the other Secrets go on.
    Each kubeconfig is loaded on a thread of its own (``kinformer-kubeconfig-secret-<name>``):
    one whose credential plugin hangs engages late, or is skipped with an error after
    :data:`CREDENTIAL_TIMEOUT` seconds, and holds no other Secret back; a Secret changed or
    deleted while its kubeconfig loads engages only its last kubeconfig, or nothing; a stop
    kills a plugin still running. Synced once the Secrets listed first were all engaged or
    skipped. Clients it made are closed once their cluster was disengaged or ``run`` returned.
    """

    def __init__(self, hub_client: Any, namespace: str, label: str = DEFAULT_SECRET_LABEL,
                 key: str = DEFAULT_SECRET_KEY) -> None:
        for what, value in (("namespace", namespace), ("label", label), ("key", key)):
            if not isinstance(value, str) or not value:
                raise errors.ConfigurationError(f"{what} must be a non-empty string, got {value!r}")
        self._hub_client = hub_client
        self.namespace = namespace
        self.label = label
        self.key = key
        self._hub = HubWatch()
        self._secrets: _SecretHandler | None = None  # set once by run

    def run(self, stop: context.Context, engage: Engage, disengage: Disengage) -> None:
        """Watch the Secrets until ``stop``; runs once (:class:`~kinformer.AlreadyStartedError`)."""
        self._hub.claim(self)
        watched = SharedIndexInformer(
            listwatch.ListWatch.for_resource(self._hub_client, SECRETS, self.namespace,
                                             label_selector=f"{self.label}=true"),
            name=f"kubeconfig-secrets-{self.namespace}")
        secrets = _SecretHandler(self.namespace, self.key, engage, disengage, stop)
        self._secrets = secrets
        self._hub.run(stop, watched, secrets)

    def has_synced(self) -> bool:
        """True once the Secrets of the first list were all engaged or skipped."""
        secrets = self._secrets
        return self._hub.has_synced() and secrets is not None and secrets.first_list_loaded()

    def __repr__(self) -> str:
        return f"<KubeconfigSecretProvider {self.namespace} {self.label}=true key={self.key}>"


class _SecretHandler:
    """Turns kubeconfig Secrets into engagements.

    Its callbacks run on the Secret informer's delivery thread and never wait on a credential
    plugin: each kubeconfig is loaded on a thread of its own, and the load engages its cluster
    only if it is still the Secret's newest kubeconfig. ``_lock`` is held while engaging or
    disengaging, so one cluster's engagements follow its Secret's changes in order (the
    factory's engage and disengage never wait on the network; a re-engage joins the old
    informers, which stop at once).
    """

    def __init__(self, namespace: str, key: str, engage: Engage, disengage: Disengage,
                 stop: context.Context) -> None:
        self._namespace = namespace
        self._key = key
        self._engage = engage
        self._disengage = disengage
        self._loads = stop.child(f"kubeconfig-secrets-{namespace}")  # cancelled: plugins killed
        self._lock = threading.Lock()  # guards the fields below
        # cluster -> (digest of its kubeconfig, the client made from it): engaged
        self._clusters: dict[str, tuple[str, Any]] = {}
        # cluster -> (its load, the digest it loads): the Secret's newest kubeconfig, loading
        self._loading: dict[str, tuple[object, str]] = {}
        self._first_list: set[str] = set()  # clusters of the first list not engaged or skipped
        self._threads: list[threading.Thread] = []

    def first_list_loaded(self) -> bool:
        """Whether every Secret of the first list was engaged, skipped or has gone."""
        with self._lock:
            return not self._first_list

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._apply(obj, is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        self._apply(new, False)

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, store.DeletedFinalStateUnknown):
            name = store.split_meta_namespace_key(obj.key)[1]
        else:
            name = meta.name(obj)
        self._remove(name, "was deleted")

    def _apply(self, secret: Any, initial: bool) -> None:
        name = meta.name(secret)
        data = secret.get("data") if isinstance(secret, dict) else None
        encoded = data.get(self._key) if isinstance(data, dict) else None
        if not encoded or not isinstance(encoded, str):
            with self._lock:
                engaged = name in self._clusters
            if engaged:
                self._remove(name, f"has no {self._key!r} key any more")
            else:
                self._forget_load(name)
                log.warning("kubeconfig Secret %s/%s has no %r key; skipped", self._namespace, name,
                            self._key)
            return
        digest = hashlib.sha256(encoded.encode()).hexdigest()
        with self._lock:
            if self._loads.cancelled():
                return
            current = self._clusters.get(name)
            loading = self._loading.get(name)
            if loading is not None and loading[1] == digest:
                return  # something else of the Secret changed while its kubeconfig loads
            if current is not None and current[0] == digest:
                self._loading.pop(name, None)  # back to the kubeconfig engaged: a load overtaken
                self._first_list.discard(name)
                return
            load = object()
            self._loading[name] = (load, digest)
            if initial:
                self._first_list.add(name)
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(_threads.spawn(
                self._load, _threads.thread_name("kubeconfig-secret", name), name, load, digest,
                encoded))

    def _load(self, name: str, load: object, digest: str, encoded: str) -> None:
        """Make the client of one kubeconfig, on a thread of its own; engage it if it is still
        the Secret's newest (else close it)."""
        try:
            api_client = client_from_kubeconfig(base64.b64decode(encoded, validate=True),
                                                stop=self._loads)
        except (errors.ConfigurationError, binascii.Error) as err:
            with self._lock:
                newest = self._loading.get(name, (None, ""))[0] is load
                if newest:
                    del self._loading[name]
                    self._first_list.discard(name)
                keeps = name in self._clusters
            if newest and not self._loads.cancelled():
                reason = str(err) if isinstance(err, errors.ConfigurationError) else "not base64"
                log.error("kubeconfig Secret %s/%s: %s; skipped%s", self._namespace, name, reason,
                          "; the cluster keeps its previous kubeconfig" if keeps else "")
            return
        previous = None
        with self._lock:
            if self._loads.cancelled() or self._loading.get(name, (None, ""))[0] is not load:
                engaged = False  # stopped, or the Secret changed or went meanwhile
            else:
                del self._loading[name]
                self._first_list.discard(name)
                try:
                    self._engage(name, api_client)
                except Exception:
                    _close(api_client)
                    raise
                previous = self._clusters.get(name)
                self._clusters[name] = (digest, api_client)
                engaged = True
        if not engaged:
            _close(api_client)
        elif previous is not None:
            _close(previous[1])  # the factory stopped the informers that used it

    def _forget_load(self, name: str) -> None:
        """A kubeconfig of ``name`` still loading is no longer wanted: it engages nothing."""
        with self._lock:
            self._loading.pop(name, None)
            self._first_list.discard(name)

    def _remove(self, name: str, why: str) -> None:
        with self._lock:
            self._loading.pop(name, None)
            self._first_list.discard(name)
            entry = self._clusters.pop(name, None)
            if entry is None:
                return
            log.info("kubeconfig Secret %s/%s %s: disengaging cluster %s", self._namespace, name,
                     why, name)
            try:
                self._disengage(name)
            finally:
                _close(entry[1])

    def close(self) -> None:
        """The run is over: kill the plugins still running, wait for their loads and close
        every client made."""
        self._loads.cancel()
        with self._lock:
            threads, self._threads = self._threads, []
        _threads.join_all(threads, LOAD_JOIN_TIMEOUT)
        with self._lock:
            clusters, self._clusters = self._clusters, {}
        for _digest, api_client in clusters.values():
            _close(api_client)


def _close(api_client: Any) -> None:
    """Close a client made here, and kinformer's connections through it (its own pool)."""
    try:
        api_client.close()
    finally:
        pool.close(api_client)

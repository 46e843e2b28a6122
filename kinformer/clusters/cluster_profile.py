"""ClusterProfileProvider: member clusters from SIG Multicluster's Cluster Inventory API.

KEP-4322's ``ClusterProfile`` (``clusterprofiles.multicluster.x-k8s.io``) is how fleet, Open
Cluster Management, GKE fleet and Argo CD publish their members on a hub; KEP-5339 says how a
consumer reaches one: the profile lists access providers (``status.accessProviders``; in
v1alpha1 also the older ``status.credentialProviders``), each a name and a kubeconfig-style
cluster (server, CA data, TLS server name, proxy), and the consumer knows, per provider name,
an exec credential plugin that gives the token or certificate. :class:`ClusterProfileProvider`
watches the profiles through a kinformer informer, as ``KubeconfigSecretProvider``
(``kubeconfig.py``) watches Secrets, and makes each reachable profile's client with
``exec_credential.py``, whose credentials refresh themselves when they expire.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from kinformer import _checks, context, errors, meta
from kinformer.cache import store
from kinformer.client import listwatch
from kinformer.clusters import exec_credential, kubeconfig
from kinformer.clusters.provider import Disengage, Engage, HubWatch
from kinformer.gvr import GroupVersionResource
from kinformer.informer import SharedIndexInformer

log = logging.getLogger(__name__)

GROUP = "multicluster.x-k8s.io"
VERSIONS = ("v1alpha1", "v1alpha2")
CONTROL_PLANE_HEALTHY = "ControlPlaneHealthy"  # the condition a cluster manager keeps on each profile
RETRY_PERIOD = 30.0  # a profile skipped because its plugin failed is first tried again after this
RETRY_MAX = 300.0  # ... doubling up to this: a hanging plugin holds the delivery thread while it runs


def cluster_profiles(version: str = "v1alpha1") -> GroupVersionResource:
    """The ClusterProfile resource of ``version`` (``v1alpha1`` or ``v1alpha2``)."""
    if version not in VERSIONS:
        raise errors.ConfigurationError(
            f"version must be one of {', '.join(VERSIONS)}, got {version!r}")
    return GroupVersionResource(GROUP, version, "clusterprofiles")


ARGS_EXTENSION = "clusterprofiles.multicluster.x-k8s.io/exec/additional-args"  # KEP-5339's
ENVS_EXTENSION = "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs"  # KEP-5339's
ARGS_POLICIES = ("Ignore", "Append")
ENVS_POLICIES = ("Ignore", "AppendIfNotExists", "Replace")


class AccessProvider(NamedTuple):
    """One access provider the consumer knows: its name, its plugin, and what a profile may
    add to the plugin's arguments and environment (KEP-5339's policies; by default nothing)."""

    name: str
    exec_config: exec_credential.ExecConfig
    args_policy: str = "Ignore"
    envs_policy: str = "Ignore"

    def exec_config_for(self, cluster: Mapping[str, Any]) -> exec_credential.ExecConfig:
        """The plugin as run for a profile's ``cluster``: its :data:`ARGS_EXTENSION` appended to
        the arguments under ``Append``; its :data:`ENVS_EXTENSION` added to the environment,
        never over the consumer's variables under ``AppendIfNotExists``, over them under
        ``Replace``. An extension of the wrong shape raises
        :class:`~kinformer.ConfigurationError`."""
        config = self.exec_config
        for extension in cluster.get("extensions") or ():
            if not isinstance(extension, Mapping):
                continue
            value = extension.get("extension")
            if extension.get("name") == ARGS_EXTENSION and self.args_policy == "Append":
                if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
                    raise errors.ConfigurationError(
                        f"the {ARGS_EXTENSION} extension is not a list of strings")
                config = dataclasses.replace(config, args=(*config.args, *value))
            elif extension.get("name") == ENVS_EXTENSION and self.envs_policy != "Ignore":
                if not isinstance(value, Mapping) or not all(
                        isinstance(k, str) and k and isinstance(v, str) for k, v in value.items()):
                    raise errors.ConfigurationError(
                        f"the {ENVS_EXTENSION} extension is not a mapping of names to strings")
                env = dict(config.env)
                for name, setting in value.items():
                    if self.envs_policy == "Replace" or name not in env:
                        env[name] = setting
                config = dataclasses.replace(config, env=tuple(env.items()))
        return config


def access_providers_from(value: Any) -> list[AccessProvider]:
    """The consumer's access providers: a list of ``{"name": ..., "execConfig": {...}}`` (or
    KEP-5339's provider file, ``{"providers": [...]}``), checked; at least one, names unique."""
    if isinstance(value, Mapping) and "providers" in value:
        value = value["providers"]
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise errors.ConfigurationError(
            'access_providers must be a list of {"name": ..., "execConfig": {...}}')
    found: list[AccessProvider] = []
    for i, entry in enumerate(value):
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or not name:
            raise errors.ConfigurationError(f"access_providers[{i}] needs a non-empty name")
        if any(known.name == name for known in found):
            raise errors.ConfigurationError(f"access_providers names {name!r} twice")
        config = exec_credential.ExecConfig.from_dict(
            entry.get("execConfig"), f"access_providers[{i}].execConfig")
        policies = []
        for key, allowed in (("profileSourcedCLIArgsPolicy", ARGS_POLICIES),
                             ("profileSourcedEnvVarsPolicy", ENVS_POLICIES)):
            policy = entry.get(key) or "Ignore"
            if policy not in allowed:
                raise errors.ConfigurationError(
                    f"access_providers[{i}].{key} must be one of {', '.join(allowed)}, got {policy!r}")
            policies.append(policy)
        found.append(AccessProvider(name, config, *policies))
    if not found:
        raise errors.ConfigurationError("access_providers is empty: no profile could be reached")
    return found


class ClusterProfileProvider:
    """A member cluster per ClusterProfile on a hub (SIG Multicluster's Cluster Inventory API).

    ``run`` watches, with a :class:`~kinformer.SharedIndexInformer` over ``hub_client``, the
    ClusterProfiles of ``namespace`` (None: every namespace) in API version ``version``
    (``v1alpha1``, served by every release, or ``v1alpha2``). Each is a cluster named
    ``<namespace>/<name>``. Its access providers are read in order, ``status.accessProviders``
    first, then v1alpha1's ``status.credentialProviders``; the first whose name is one of
    ``access_providers`` (the consumer's ``{"name": ..., "execConfig": {...}}``, KEP-5339)
    gives the server, CA data, TLS server name and proxy, and that provider's exec plugin
    (:class:`~kinformer.clusters.exec_credential.ExecConfig`) the token or client
    certificate. The plugin runs when the profile engages (with ``spec.cluster`` in
    ``KUBERNETES_EXEC_INFO`` when ``provideClusterInfo`` is true) and again on the first
    request after its credential's ``expirationTimestamp`` has passed. A consumer's entry may
    let the profile add to the plugin's arguments and environment
    (``profileSourcedCLIArgsPolicy``, ``profileSourcedEnvVarsPolicy``: see
    :meth:`AccessProvider.exec_config_for`); by default it adds nothing.

    A profile engages while its ``ControlPlaneHealthy`` condition is not ``False`` (a profile
    without conditions engages), disengages when it becomes ``False`` or the profile is
    deleted, and engages again with a new client when its chosen provider or that provider's
    cluster details change; other changes (conditions, properties, heartbeats) change
    nothing. A profile that no known provider can reach, or whose plugin fails, is skipped
    (a cluster it would have replaced is disengaged) and logged once, naming the profile,
    until its state changes; one whose plugin failed is tried again when its access details
    change, else after ``retry_period`` seconds, doubling up to five minutes (the informer
    resyncs every ``retry_period``). Other profiles go on either way. Plugins run on the
    informer's delivery thread, one at a time, each for at most ``plugin_timeout`` seconds.

    Synced once the profiles listed first were all handled. Clients it made are closed once
    their cluster was disengaged or ``run`` returned. Bad arguments raise
    :class:`~kinformer.ConfigurationError`; no credential reaches a log line or a repr.

    Example, with ``hub`` an ``ApiClient`` of the hub and ``stop`` a ``threading.Event``::

        provider = ClusterProfileProvider(hub, "fleet-system", access_providers=[
            {"name": "token-secretreader", "execConfig": {
                "apiVersion": "client.authentication.k8s.io/v1", "command": "secretreader-plugin",
                "provideClusterInfo": True}}])
        factory = MultiClusterInformerFactory(provider)
        configmaps = factory.for_resource(GroupVersionResource("", "v1", "configmaps"))
        factory.start(stop)
        factory.wait_for_cache_sync(timeout=30)
        print(factory.clusters())  # ['fleet-system/member-1', ...]
    """

    def __init__(self, hub_client: Any, namespace: str | None = None,
                 access_providers: Any = None, *, version: str = "v1alpha1",
                 retry_period: float = RETRY_PERIOD,
                 plugin_timeout: float = exec_credential.PLUGIN_TIMEOUT) -> None:
        if namespace is not None and (not isinstance(namespace, str) or not namespace):
            raise errors.ConfigurationError(
                f"namespace must be None (every namespace) or a non-empty string, got {namespace!r}")
        if access_providers is None:
            raise errors.ConfigurationError(
                'access_providers is required: a list of {"name": ..., "execConfig": {...}}')
        self._hub_client = hub_client
        self.namespace = namespace
        self.access_providers = access_providers_from(access_providers)
        self.gvr = cluster_profiles(version)
        self._retry_period = _checks.seconds("retry_period", retry_period, positive=True)
        self._plugin_timeout = _checks.seconds("plugin_timeout", plugin_timeout, positive=True)
        self._hub = HubWatch()

    def run(self, stop: context.Context, engage: Engage, disengage: Disengage) -> None:
        """Watch the ClusterProfiles until ``stop``; runs once (:class:`~kinformer.AlreadyStartedError`)."""
        self._hub.claim(self)
        watched = SharedIndexInformer(
            listwatch.ListWatch.for_resource(self._hub_client, self.gvr, self.namespace or ""),
            default_event_handler_resync_period=self._retry_period,
            name=f"clusterprofiles-{self.namespace or 'all'}")
        profiles = _ProfileHandler(self.access_providers, self._plugin_timeout, self._retry_period,
                                   engage, disengage)
        self._hub.run(stop, watched, profiles)

    def has_synced(self) -> bool:
        """True once the profiles of the first list were all handled."""
        return self._hub.has_synced()

    def __repr__(self) -> str:
        known = ", ".join(p.name for p in self.access_providers)
        where = self.namespace or "all namespaces"
        return f"<ClusterProfileProvider {self.gvr.version} {where} providers={known}>"


def control_plane_healthy(profile: Any) -> str | None:
    """The status of the profile's ``ControlPlaneHealthy`` condition; None without one."""
    status = profile.get("status") if isinstance(profile, dict) else None
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, dict) and condition.get("type") == CONTROL_PLANE_HEALTHY:
            return str(condition.get("status"))
    return None


def offered_access(profile: Any) -> list[tuple[str, dict[str, Any]]]:
    """The profile's access providers as ``(name, cluster)``, in order: ``status.accessProviders``,
    then ``status.credentialProviders`` (v1alpha1's older name); malformed entries left out."""
    status = profile.get("status") if isinstance(profile, dict) else None
    if not isinstance(status, dict):
        return []
    offered = []
    for field in ("accessProviders", "credentialProviders"):
        entries = status.get(field)
        for entry in entries if isinstance(entries, list) else ():
            if (isinstance(entry, dict) and isinstance(entry.get("name"), str)
                    and isinstance(entry.get("cluster"), dict)):
                offered.append((entry["name"], entry["cluster"]))
    return offered


class _Engaged(NamedTuple):
    digest: str  # of the provider chosen and its cluster details
    api_client: Any


class _Failed(NamedTuple):
    digest: str  # of the access details whose plugin failed
    retry_at: float  # time.monotonic() before which they are not tried again
    backoff: float  # the wait that led to retry_at


class _ProfileHandler:
    """Turns ClusterProfiles into engagements; runs on the profile informer's delivery thread."""

    def __init__(self, known: list[AccessProvider], plugin_timeout: float, retry_period: float,
                 engage: Engage, disengage: Disengage) -> None:
        self._known = {provider.name: provider for provider in known}
        self._plugin_timeout = plugin_timeout
        self._retry_period = retry_period
        self._engage = engage
        self._disengage = disengage
        # delivery thread only: what is engaged, and why each skipped profile was (logged once)
        self._clusters: dict[str, _Engaged] = {}
        self._skipped: dict[str, str] = {}
        self._failed: dict[str, _Failed] = {}  # profiles whose plugin failed, with when to retry

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._apply(obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._apply(new)

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, store.DeletedFinalStateUnknown):
            namespace, name = store.split_meta_namespace_key(obj.key)
            cluster = f"{namespace}/{name}"
        else:
            cluster = "/".join(meta.namespace_and_name(obj))
        self._skipped.pop(cluster, None)
        self._failed.pop(cluster, None)
        self._remove(cluster, "was deleted")

    def _apply(self, profile: Any) -> None:
        cluster = "/".join(meta.namespace_and_name(profile))
        if control_plane_healthy(profile) == "False":
            self._skip(cluster, "unhealthy", logging.INFO,
                       f"its {CONTROL_PLANE_HEALTHY} condition is False")
            return
        chosen = next(((name, details) for name, details in offered_access(profile)
                       if name in self._known), None)
        if chosen is None:
            offered = ", ".join(sorted({name for name, _details in offered_access(profile)}))
            self._skip(cluster, "unreachable", logging.WARNING,
                       f"no access provider this consumer knows (it offers: {offered or 'none'}; "
                       f"known: {', '.join(self._known)})")
            return
        provider, details = chosen
        digest = hashlib.sha256(json.dumps([provider, details], sort_keys=True).encode()).hexdigest()
        current = self._clusters.get(cluster)
        if current is not None and current.digest == digest:
            return  # something else of the profile changed
        failed = self._failed.get(cluster)
        if failed is not None and failed.digest == digest and time.monotonic() < failed.retry_at:
            return  # its plugin failed: tried again once the backoff passed (or the details change)
        try:
            source = exec_credential.ExecCredentialSource(
                self._known[provider].exec_config_for(details), details, f"ClusterProfile {cluster}",
                timeout=self._plugin_timeout)
            api_client = exec_credential.exec_api_client(details, source, kubeconfig.member_settings)
        except (errors.ExecPluginError, errors.ConfigurationError) as err:
            backoff = self._retry_period if failed is None or failed.digest != digest else min(
                RETRY_MAX, failed.backoff * 2)
            self._failed[cluster] = _Failed(digest, time.monotonic() + backoff, backoff)
            self._skip(cluster, f"failed {digest}", logging.ERROR,
                       f"access provider {provider}: {err}; retrying with backoff")
            return
        self._failed.pop(cluster, None)
        was_skipped = self._skipped.pop(cluster, None)
        if was_skipped is not None:
            log.info("ClusterProfile %s: engaging through access provider %s", cluster, provider)
        try:
            self._engage(cluster, api_client)
        except Exception:
            exec_credential.close_api_client(api_client)
            raise
        self._clusters[cluster] = _Engaged(digest, api_client)
        if current is not None:
            exec_credential.close_api_client(current.api_client)  # its informers were stopped

    def _skip(self, cluster: str, reason: str, level: int, why: str) -> None:
        """Disengage ``cluster`` if engaged; log why it is skipped when the reason is new."""
        self._remove(cluster, None)
        if self._skipped.get(cluster) != reason:
            self._skipped[cluster] = reason
            log.log(level, "ClusterProfile %s skipped: %s", cluster, why)

    def _remove(self, cluster: str, why: str | None) -> None:
        entry = self._clusters.pop(cluster, None)
        if entry is None:
            return
        if why is not None:
            log.info("ClusterProfile %s %s: disengaging it", cluster, why)
        try:
            self._disengage(cluster)
        finally:
            exec_credential.close_api_client(entry.api_client)

    def close(self) -> None:
        """Close every client made; the run is over."""
        clusters, self._clusters = self._clusters, {}
        for entry in clusters.values():
            exec_credential.close_api_client(entry.api_client)

"""ClusterProfileProvider over real servers: ClusterProfiles (SIG Multicluster's Cluster Inventory
API) on a hub, members that require a bearer token over HTTPS, and an exec credential plugin (a
small Python script) that gives the token, records every run and what it was told."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _fleet import NAMESPACES, SECRETS, ClusterRecorder
from helpers import CONFIGMAPS, TIMEOUT, cm, crd, running
from kubernetes import client as k8s

from kinformer import (
    ClusterProfileProvider,
    ClusterProvider,
    ConfigurationError,
    ExecPluginError,
    GroupVersionResource,
    MultiClusterInformer,
    MultiClusterInformerFactory,
)
from kinformer.client import pool
from kinformer.clusters.exec_credential import ExecConfig, ExecCredential, parse_exec_credential
from kinformer.testing import FakeAPIServer, wait_for

PROFILES = GroupVersionResource("multicluster.x-k8s.io", "v1alpha1", "clusterprofiles")
PROFILES_V1ALPHA2 = GroupVersionResource("multicluster.x-k8s.io", "v1alpha2", "clusterprofiles")
TOKEN = "plugin-t0ken-never-logged"
EXEC_API = "client.authentication.k8s.io/v1"

JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJwbHVnaW4tdXNlciJ9.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"
PLUGIN = f'JWT = "{JWT}"\n' + '''\
import datetime, json, os, sys
log = os.environ["PLUGIN_LOG"]
before = sum(1 for _ in open(log)) if os.path.exists(log) else 0
with open(log, "a") as f:
    f.write(json.dumps({"info": json.loads(os.environ.get("KUBERNETES_EXEC_INFO", "null")),
                        "args": sys.argv[1:],
                        "env": {k: os.environ.get(k) for k in ("EXTRA", "GREETING")}}) + "\\n")
mode = os.environ.get("PLUGIN_MODE", "token")
if mode == "exit" or (mode == "fail-first" and before == 0) or (mode == "expire-then-fail" and before):
    sys.stderr.write("plugin: the identity service said no\\n")
    sys.exit(3)
if mode == "garbage":
    print("token: " + os.environ["PLUGIN_TOKEN"])
    sys.exit(0)
if mode == "expire-then-echo" and before:  # fails, quoting the token it gave before
    sys.stderr.write("plugin: the identity service refused " + os.environ["PLUGIN_TOKEN"] + "\\n")
    sys.exit(3)
if mode in ("echo-exit", "jwt-exit"):  # fails, quoting its token (printed too, or a JWT)
    said = os.environ["PLUGIN_TOKEN"] if mode == "echo-exit" else JWT
    if mode == "echo-exit":
        print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                          "status": {"token": said}}))
    sys.stderr.write("plugin: the identity service refused " + said + " for now\\n")
    sys.exit(4)
if mode == "hang":
    read_end, _write_end = os.pipe()
    os.read(read_end, 1)  # nothing is ever written: the plugin never answers
if mode == "certificate":
    status = {"clientCertificateData": "CERT PEM", "clientKeyData": "KEY PEM"}
else:
    status = {"token": os.environ["PLUGIN_TOKEN"]}
if mode in ("expired-first", "expire-then-fail", "expire-then-echo") and before == 0:
    past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    status["expirationTimestamp"] = past.strftime("%Y-%m-%dT%H:%M:%SZ")
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": status}))
'''


class Plugin:
    """The exec plugin script and what each access provider's runs of it recorded."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.script = directory / "plugin.py"
        self.script.write_text(PLUGIN)

    def provider(self, name: str, mode: str = "token", token: str = TOKEN, *,
                 provide_cluster_info: bool = True, **policies: str) -> dict[str, Any]:
        """A consumer's access provider ``name`` running the script in ``mode``, with the
        environment ``GREETING=consumer``; ``policies`` are KEP-5339's profile-sourced ones."""
        return {"name": name, **policies, "execConfig": {
            "apiVersion": EXEC_API, "command": sys.executable, "args": [str(self.script), name],
            "env": [{"name": "PLUGIN_LOG", "value": str(self.directory / f"{name}.log")},
                    {"name": "PLUGIN_MODE", "value": mode},
                    {"name": "PLUGIN_TOKEN", "value": token},
                    {"name": "GREETING", "value": "consumer"}],
            "provideClusterInfo": provide_cluster_info, "interactiveMode": "Never"}}

    def runs(self, name: str) -> list[dict[str, Any]]:
        """Each run of provider ``name``: the ``KUBERNETES_EXEC_INFO`` it saw and its args."""
        log = self.directory / f"{name}.log"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]


def profile(namespace: str, name: str, member: FakeAPIServer | None, provider: str = "token-plugin",
            *, field: str = "accessProviders", healthy: str | None = None,
            version: str = "v1alpha1", extensions: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    """A ClusterProfile offering ``member`` through access provider ``provider`` (in
    ``status.<field>``), with a ControlPlaneHealthy condition when ``healthy`` is given."""
    status: dict[str, Any] = {"version": {"kubernetes": "1.36.2"}}
    if member is not None:
        cluster = dict(member.kubeconfig()["clusters"][0]["cluster"])
        cluster["tls-server-name"] = "localhost"
        cluster["extensions"] = [{"name": "client.authentication.k8s.io/exec",
                                  "extension": {"audience": name}}, *extensions]
        status[field] = [{"name": provider, "cluster": cluster}]
    if healthy is not None:
        status["conditions"] = [{"type": "ControlPlaneHealthy", "status": healthy, "reason": "Probed",
                                 "message": "", "lastTransitionTime": "2026-12-01T00:00:00Z"}]
    return {"apiVersion": f"multicluster.x-k8s.io/{version}", "kind": "ClusterProfile",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"x-k8s.io/cluster-manager": "test"}},
            "spec": {"displayName": name, "clusterManager": {"name": "test"}},
            "status": status}


def set_health(hub: FakeAPIServer, namespace: str, name: str, healthy: str) -> None:
    found = hub.get(PROFILES, namespace, name)
    found["status"]["conditions"] = profile(namespace, name, None, healthy=healthy)["status"]["conditions"]
    hub.update(PROFILES, found)


@pytest.fixture
def plugin(tmp_path: Path) -> Plugin:
    return Plugin(tmp_path)


@pytest.fixture
def members() -> Iterator[dict[str, FakeAPIServer]]:
    """Two members that require the plugin's token (over HTTPS, with their own CA), each
    holding ``default/app`` with data naming the member."""
    made = {name: FakeAPIServer(token=TOKEN).start() for name in ("east", "west")}
    try:
        for name, server in made.items():
            server.create(CONFIGMAPS, cm("app", None, "default", data={"member": name}))
        yield made
    finally:
        for server in made.values():
            server.stop()


@pytest.fixture
def hub(apiserver: FakeAPIServer, api_client: Any) -> FakeAPIServer:
    """The hub: the ClusterProfile CRD (v1alpha1 and v1alpha2 served), created through the
    official client, and the namespaces the profiles live in."""
    definition = crd(PROFILES, versions=("v1alpha1", "v1alpha2"))
    definition["spec"]["names"].update(kind="ClusterProfile", listKind="ClusterProfileList")
    k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition(definition)
    for namespace in ("team-a", "team-b"):
        apiserver.create(NAMESPACES, {"metadata": {"name": namespace}})
    return apiserver


Started = tuple[MultiClusterInformerFactory, MultiClusterInformer, ClusterRecorder]


@pytest.fixture
def start(api_client: Any) -> Iterator[Callable[..., Started]]:
    """``start(providers, **provider_options)``: a started factory over a ClusterProfileProvider
    of the hub, its ConfigMap informer and a recorder on it; shut down after the test."""
    factories: list[MultiClusterInformerFactory] = []

    def make(providers: list[dict[str, Any]], **options: Any) -> Started:
        factory = MultiClusterInformerFactory(
            ClusterProfileProvider(api_client, access_providers=providers, **options))
        configmaps = factory.for_resource(CONFIGMAPS)
        recorder = ClusterRecorder()
        configmaps.add_event_handler(recorder)
        factories.append(factory)
        factory.start(threading.Event())
        return factory, configmaps, recorder

    yield make
    for factory in factories:
        factory.shutdown()


def test_each_profile_engages_its_member_with_the_plugins_token(
    hub: FakeAPIServer, members: dict[str, FakeAPIServer], plugin: Plugin, start: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="kinformer")
    hub.create(PROFILES, profile("team-a", "member", members["east"]))
    hub.create(PROFILES, profile("team-b", "member", members["west"]))
    factory, configmaps, recorder = start([plugin.provider("token-plugin")])
    assert sorted(recorder.take(2)) == [("add", "team-a/member", "app"), ("add", "team-b/member", "app")]
    assert factory.wait_for_cache_sync(timeout=TIMEOUT)
    assert factory.clusters() == ["team-a/member", "team-b/member"]
    # the same default/app in two members stays two objects, each with its cluster
    lister = configmaps.lister()
    assert [lister.cluster(c).by_namespace("default").get("app")["data"]["member"]
            for c in factory.clusters()] == ["east", "west"]
    members["west"].create(CONFIGMAPS, cm("later", None, "default"))
    assert recorder.next() == ("add", "team-b/member", "later")

    # one run per profile (no expiry: never again), told the profile's cluster
    runs = plugin.runs("token-plugin")
    assert len(runs) == 2
    seen = {run["info"]["spec"]["cluster"]["server"]: run["info"] for run in runs}
    east = seen[members["east"].url]
    assert east["apiVersion"] == EXEC_API and east["kind"] == "ExecCredential"
    assert east["spec"]["interactive"] is False
    assert east["spec"]["cluster"]["certificate-authority-data"] == (
        members["east"].kubeconfig()["clusters"][0]["cluster"]["certificate-authority-data"])
    assert east["spec"]["cluster"]["tls-server-name"] == "localhost"
    assert east["spec"]["cluster"]["config"] == {"audience": "member"}
    assert runs[0]["args"] == ["token-plugin"]
    assert TOKEN not in caplog.text


def test_a_profiles_member_client_neither_retries_by_itself_nor_leaves_idle_connections_unprobed(
    hub: FakeAPIServer, members: dict[str, FakeAPIServer], plugin: Plugin, start: Any,
) -> None:
    """As the kubeconfig providers' clients: urllib3's own retries off (a member that is down
    fails a request at once, not after three retries with a WARNING each) and TCP keepalive on
    (a watch whose peer vanished breaks within minutes), on kinformer's connections and on the
    official client's alike."""
    hub.create(PROFILES, profile("team-a", "member", members["east"]))
    factory, _, _ = start([plugin.provider("token-plugin")])
    assert factory.wait_for_cache_sync(timeout=TIMEOUT)
    made = factory.api_client_for("team-a/member")
    assert made is not None
    assert made.configuration.retries is False
    keepalive = (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    assert keepalive in pool.pool_manager(made.configuration).connection_pool_kw["socket_options"]
    assert keepalive in made.rest_client.pool_manager.connection_pool_kw["socket_options"]


def test_the_first_known_provider_is_used_and_cluster_info_only_when_asked(
    hub: FakeAPIServer, members: dict[str, FakeAPIServer], plugin: Plugin, start: Any,
) -> None:
    offered = profile("team-a", "member", members["east"], "unknown-first")
    offered["status"]["accessProviders"].append(
        {"name": "quiet-plugin", "cluster": offered["status"]["accessProviders"][0]["cluster"]})
    hub.create(PROFILES, offered)
    _factory, _configmaps, recorder = start(
        [plugin.provider("token-plugin"), plugin.provider("quiet-plugin", provide_cluster_info=False)])
    assert recorder.next() == ("add", "team-a/member", "app")
    assert plugin.runs("token-plugin") == []
    assert [run["info"]["spec"] for run in plugin.runs("quiet-plugin")] == [{"interactive": False}]


def test_the_profiles_tls_server_name_is_the_name_checked(
    hub: FakeAPIServer, members: dict[str, FakeAPIServer], plugin: Plugin, start: Any,
) -> None:
    offered = profile("team-a", "member", members["east"])
    offered["status"]["accessProviders"][0]["cluster"]["tls-server-name"] = "elsewhere.example"
    hub.create(PROFILES, offered)
    factory, configmaps, _recorder = start([plugin.provider("token-plugin")])
    assert wait_for(lambda: factory.clusters() == ["team-a/member"], timeout=TIMEOUT)
    assert wait_for(lambda: configmaps.cluster_status()["team-a/member"].last_error is not None,
                    timeout=TIMEOUT)
    assert "elsewhere.example" in str(configmaps.cluster_status()["team-a/member"].last_error)
    assert not configmaps.has_synced()


PROFILE_SOURCED = (
    {"name": "clusterprofiles.multicluster.x-k8s.io/exec/additional-args", "extension": ["--region", "eu"]},
    {"name": "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs",
     "extension": {"EXTRA": "from-profile", "GREETING": "profile", "PLUGIN_MODE": "exit"}},
)


@pytest.mark.parametrize(("policies", "args", "env"), [
    ({}, ["ignoring"], {"EXTRA": None, "GREETING": "consumer"}),
    ({"profileSourcedCLIArgsPolicy": "Append", "profileSourcedEnvVarsPolicy": "AppendIfNotExists"},
     ["ignoring", "--region", "eu"], {"EXTRA": "from-profile", "GREETING": "consumer"}),
])
def test_a_profile_adds_plugin_arguments_and_environment_only_as_the_consumer_allows(
    hub: FakeAPIServer, members: dict[str, FakeAPIServer], plugin: Plugin, start: Any,
    policies: dict[str, str], args: list[str], env: dict[str, Any],
) -> None:
    hub.create(PROFILES, profile("team-a", "member", members["east"], "ignoring", extensions=PROFILE_SOURCED))
    _factory, _configmaps, recorder = start([plugin.provider("ignoring", **policies)])
    assert recorder.next() == ("add", "team-a/member", "app")  # PLUGIN_MODE=exit was not let in
    [run] = plugin.runs("ignoring")
    assert (run["args"], run["env"]) == (args, env)


def test_replace_lets_the_profiles_environment_win(
    hub: FakeAPIServer, members: dict[str, FakeAPIServer], plugin: Plugin, start: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    hub.create(PROFILES, profile("team-a", "member", members["east"], "replacing",
                                 extensions=PROFILE_SOURCED[1:]))
    hub.create(PROFILES, profile("team-b", "member", members["west"], "token-plugin"))
    _factory, _configmaps, recorder = start([
        plugin.provider("replacing", profileSourcedEnvVarsPolicy="Replace"), plugin.provider("token-plugin")])
    assert recorder.next() == ("add", "team-b/member", "app")
    [run] = plugin.runs("replacing")
    assert run["env"] == {"EXTRA": "from-profile", "GREETING": "profile"}
    assert "ClusterProfile team-a/member skipped: access provider replacing: exec plugin" in caplog.text


def test_a_profile_whose_control_plane_is_unhealthy_disengages_and_comes_back(
    hub: FakeAPIServer, members: dict[str, FakeAPIServer], plugin: Plugin, start: Any,
) -> None:
    hub.create(PROFILES, profile("team-a", "member", members["east"], healthy="True"))
    hub.create(PROFILES, profile("team-b", "member", members["west"], healthy="False"))
    factory, configmaps, recorder = start([plugin.provider("token-plugin")])
    assert recorder.next() == ("add", "team-a/member", "app")
    assert factory.wait_for_cache_sync(timeout=TIMEOUT)
    assert factory.clusters() == ["team-a/member"]

    set_health(hub, "team-a", "member", "False")
    assert recorder.next() == ("disengaged", "team-a/member")
    assert factory.clusters() == []
    assert configmaps.lister().list() == []
    set_health(hub, "team-b", "member", "Unknown")  # not False: engages
    assert recorder.next() == ("add", "team-b/member", "app")
    set_health(hub, "team-a", "member", "True")
    assert recorder.next() == ("add", "team-a/member", "app")
    assert factory.clusters() == ["team-a/member", "team-b/member"]
    assert recorder.drained() == []


def test_a_deleted_profile_disengages_its_member_without_deletes(
    hub: FakeAPIServer, members: dict[str, FakeAPIServer], plugin: Plugin, start: Any,
) -> None:
    hub.create(PROFILES, profile("team-a", "member", members["east"]))
    hub.create(PROFILES, profile("team-b", "member", members["west"]))
    factory, configmaps, recorder = start([plugin.provider("token-plugin")])
    assert len(recorder.take(2)) == 2
    hub.delete(PROFILES, "team-a", "member")
    assert recorder.next() == ("disengaged", "team-a/member")
    assert factory.clusters() == ["team-b/member"]
    assert [o["metadata"]["name"] for o in configmaps.lister().cluster("team-a/member").list()] == []
    assert len(configmaps.lister().list()) == 1
    assert members["east"].get(CONFIGMAPS, "default", "app")
    assert recorder.drained() == []


def test_changed_access_details_reengage_and_other_changes_do_not(
    hub: FakeAPIServer, members: dict[str, FakeAPIServer], plugin: Plugin, start: Any,
) -> None:
    hub.create(PROFILES, profile("team-a", "member", members["east"]))
    _factory, configmaps, recorder = start([plugin.provider("token-plugin")])
    assert recorder.next() == ("add", "team-a/member", "app")

    found = hub.get(PROFILES, "team-a", "member")  # a heartbeat: properties and version change
    found["status"]["properties"] = [{"name": "clusterset.k8s.io/cluster-id", "value": "abc"}]
    found["status"]["version"] = {"kubernetes": "1.36.3"}
    hub.update(PROFILES, found)
    found = hub.get(PROFILES, "team-a", "member")  # then the member moves to another server
    found["status"]["accessProviders"] = profile("team-a", "member", members["west"])["status"][
        "accessProviders"]
    hub.update(PROFILES, found)
    assert recorder.take(2) == [("disengaged", "team-a/member"), ("add", "team-a/member", "app")]
    assert configmaps.lister().cluster("team-a/member").by_namespace("default").get("app")[
        "data"] == {"member": "west"}
    assert len(plugin.runs("token-plugin")) == 2  # the heartbeat ran nothing
    assert recorder.drained() == []


def test_a_profile_no_known_provider_reaches_is_logged_once_and_skipped(
    hub: FakeAPIServer, members: dict[str, FakeAPIServer], plugin: Plugin, start: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="kinformer")
    hub.create(PROFILES, profile("team-a", "stranger", members["east"], "someone-elses-plugin"))
    factory, _configmaps, recorder = start([plugin.provider("token-plugin")])
    assert factory.wait_for_cache_sync(timeout=TIMEOUT)
    for status in ("True", "Unknown"):  # updates that leave it unreachable log nothing more
        set_health(hub, "team-a", "stranger", status)
    # delivered in order: once the next profile engages, the updates were handled
    hub.create(PROFILES, profile("team-b", "member", members["west"]))
    assert recorder.next() == ("add", "team-b/member", "app")
    assert factory.clusters() == ["team-b/member"]
    naming = [r for r in caplog.records if "team-a/stranger" in r.getMessage()]
    assert [(r.levelno >= logging.INFO, r.getMessage()) for r in naming] == [
        (True, "ClusterProfile team-a/stranger skipped: no access provider this consumer knows "
               "(it offers: someone-elses-plugin; known: token-plugin)")]
    assert plugin.runs("token-plugin") and all(
        r["info"]["spec"]["cluster"]["server"] == members["west"].url for r in plugin.runs("token-plugin"))


@pytest.mark.parametrize(("mode", "says"), [
    ("exit", "exec plugin python.* exited with code 3: plugin: the identity service said no"),
    ("garbage", "exec plugin python.* printed no JSON ExecCredential"),
    ("hang", r"exec plugin python.* gave no credential within 0.5 s"),
    ("echo-exit", r"exec plugin python.* exited with code 4: plugin: the identity service refused "
                  r"\[redacted\] for now"),
    ("jwt-exit", r"exec plugin python.* exited with code 4: plugin: the identity service refused "
                 r"\[redacted\] for now"),
])
def test_a_failing_plugin_is_logged_once_and_its_profile_skipped(
    hub: FakeAPIServer, members: dict[str, FakeAPIServer], plugin: Plugin, start: Any,
    caplog: pytest.LogCaptureFixture, mode: str, says: str,
) -> None:
    caplog.set_level(logging.INFO, logger="kinformer")
    hub.create(PROFILES, profile("team-a", "member", members["east"], "broken"))
    # half a second to give up on a hung plugin; the others, a Python child started on a busy
    # machine, are given the time they may take to say what they say
    factory, _configmaps, recorder = start([plugin.provider("broken", mode), plugin.provider("token-plugin")],
                                           plugin_timeout=0.5 if mode == "hang" else TIMEOUT)
    assert factory.wait_for_cache_sync(timeout=TIMEOUT)
    set_health(hub, "team-a", "member", "True")  # a heartbeat runs no plugin before the backoff
    hub.create(PROFILES, profile("team-b", "member", members["west"]))
    assert recorder.next() == ("add", "team-b/member", "app")
    assert factory.clusters() == ["team-b/member"]
    assert len(plugin.runs("broken")) == 1
    naming = [r for r in caplog.records if "team-a/member" in r.getMessage()]
    assert len(naming) == 1 and naming[0].levelno == logging.ERROR
    assert re.search(f"ClusterProfile team-a/member skipped: access provider broken: {says}",
                     naming[0].getMessage())
    assert TOKEN not in caplog.text and JWT not in caplog.text


def test_a_profile_whose_plugin_failed_is_retried_and_engages_once_it_works(
    hub: FakeAPIServer, members: dict[str, FakeAPIServer], plugin: Plugin, start: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="kinformer")
    hub.create(PROFILES, profile("team-a", "member", members["east"], "flaky"))
    _factory, _configmaps, recorder = start([plugin.provider("flaky", "fail-first")], retry_period=1.0)
    assert recorder.next() == ("add", "team-a/member", "app")  # on a resync, with no change
    assert len(plugin.runs("flaky")) == 2
    assert "ClusterProfile team-a/member: engaging through access provider flaky" in caplog.text


def test_a_plugin_failing_on_every_retry_is_logged_once(
    hub: FakeAPIServer, members: dict[str, FakeAPIServer], plugin: Plugin, start: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="kinformer")
    hub.create(PROFILES, profile("team-a", "member", members["east"], "broken"))
    factory, _configmaps, _recorder = start([plugin.provider("broken", "exit")], retry_period=1.0)
    assert wait_for(lambda: len(plugin.runs("broken")) >= 2, timeout=TIMEOUT)
    assert factory.clusters() == []
    assert len([r for r in caplog.records if "team-a/member" in r.getMessage()]) == 1


def test_an_expired_credential_runs_the_plugin_again_when_the_member_is_asked(
    hub: FakeAPIServer, members: dict[str, FakeAPIServer], plugin: Plugin, start: Any,
) -> None:
    hub.create(PROFILES, profile("team-a", "member", members["east"], "expiring"))
    factory, _configmaps, recorder = start([plugin.provider("expiring", "expired-first")])
    assert recorder.next() == ("add", "team-a/member", "app")
    # the first credential had expired when the first list was sent: the plugin ran again
    assert len(plugin.runs("expiring")) == 2
    # the second has no expiry: more requests to the member run nothing
    secrets = factory.for_resource(SECRETS)
    assert wait_for(secrets.has_synced, timeout=TIMEOUT)
    assert len(plugin.runs("expiring")) == 2


@pytest.mark.parametrize(("mode", "says"), [
    ("expire-then-fail", "plugin: the identity service said no"),
    ("expire-then-echo", "plugin: the identity service refused [redacted]"),  # its last token
])
def test_a_failed_refresh_is_logged_once_and_the_provider_goes_on(
    hub: FakeAPIServer, members: dict[str, FakeAPIServer], plugin: Plugin, start: Any,
    caplog: pytest.LogCaptureFixture, mode: str, says: str,
) -> None:
    caplog.set_level(logging.INFO, logger="kinformer")
    hub.create(PROFILES, profile("team-a", "member", members["east"], "expiring"))
    _factory, _configmaps, recorder = start(
        [plugin.provider("expiring", mode), plugin.provider("token-plugin")])
    # the refresh failed: the last credential was sent (this server still takes it)
    assert recorder.next() == ("add", "team-a/member", "app")
    hub.create(PROFILES, profile("team-b", "member", members["west"]))
    assert recorder.next() == ("add", "team-b/member", "app")
    refused = [r for r in caplog.records if "team-a/member" in r.getMessage() and r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in refused] == [
        f"ClusterProfile team-a/member: credential not refreshed: exec plugin "
        f"{os.path.basename(sys.executable)} exited with code 3: {says}; retrying in 1 s"]
    assert TOKEN not in caplog.text


def test_v1alpha1_credential_providers_are_read_as_access_providers(
    hub: FakeAPIServer, members: dict[str, FakeAPIServer], plugin: Plugin, start: Any,
) -> None:
    hub.create(PROFILES, profile("team-a", "member", members["east"], field="credentialProviders"))
    factory, _configmaps, recorder = start([plugin.provider("token-plugin")])
    assert recorder.next() == ("add", "team-a/member", "app")
    assert factory.clusters() == ["team-a/member"]


def test_v1alpha2_and_one_namespace(
    hub: FakeAPIServer, members: dict[str, FakeAPIServer], plugin: Plugin, start: Any,
) -> None:
    hub.create(PROFILES_V1ALPHA2, profile("team-a", "member", members["east"], version="v1alpha2"))
    hub.create(PROFILES_V1ALPHA2, profile("team-b", "member", members["west"], version="v1alpha2"))
    factory, _configmaps, recorder = start([plugin.provider("token-plugin")], version="v1alpha2",
                                           namespace="team-b")
    assert recorder.next() == ("add", "team-b/member", "app")
    assert factory.wait_for_cache_sync(timeout=TIMEOUT)
    assert factory.clusters() == ["team-b/member"]


def test_a_client_certificate_is_handed_over_in_private_files_removed_at_the_end(
    hub: FakeAPIServer, api_client: Any, plugin: Plugin,
) -> None:
    plain = FakeAPIServer().start()  # over HTTP: the certificate goes unused, the client is what counts
    try:
        hub.create(PROFILES, profile("team-a", "member", plain, "cert-plugin"))
        engaged: list[tuple[str, Any]] = []
        provider = ClusterProfileProvider(api_client, "team-a",
                                          access_providers=[plugin.provider("cert-plugin", "certificate")])
        assert not provider.has_synced()
        with running(lambda stop: provider.run(stop, lambda n, c: engaged.append((n, c)), lambda n: None)):
            assert wait_for(provider.has_synced, timeout=TIMEOUT)
            [(name, member_client)] = engaged
            configuration = member_client.configuration
            assert name == "team-a/member" and configuration.host == plain.url
            assert Path(configuration.cert_file).read_text() == "CERT PEM"
            assert Path(configuration.key_file).read_text() == "KEY PEM"
            assert os.stat(configuration.key_file).st_mode & 0o077 == 0
            assert "authorization" not in configuration.api_key
        assert not Path(configuration.cert_file).exists()
    finally:
        plain.stop()


def test_credentials_never_show_in_a_repr_and_bad_output_is_refused_without_quoting() -> None:
    credential = parse_exec_credential(json.dumps(
        {"apiVersion": EXEC_API, "kind": "ExecCredential",
         "status": {"token": TOKEN, "expirationTimestamp": "2026-12-04T16:00:00.5Z"}}))
    assert credential.token == TOKEN
    assert repr(credential) == "<ExecCredential token, expires 2026-12-04T16:00:00+00:00>"
    assert TOKEN not in repr(ExecCredential(client_certificate_data=TOKEN, client_key_data=TOKEN))
    for output in (f"token: {TOKEN}",
                   json.dumps({"apiVersion": EXEC_API, "kind": "ExecCredential", "status": {}}),
                   json.dumps({"apiVersion": "v1", "kind": "ExecCredential", "status": {"token": TOKEN}}),
                   json.dumps({"apiVersion": EXEC_API, "kind": "ExecCredential",
                               "status": {"token": TOKEN, "expirationTimestamp": "tomorrow"}})):
        with pytest.raises(ExecPluginError) as raised:
            parse_exec_credential(output)
        assert TOKEN not in str(raised.value)


def test_bad_settings_are_refused(api_client: Any, plugin: Plugin) -> None:
    good = [plugin.provider("token-plugin")]
    assert "PLUGIN_TOKEN" not in repr(ExecConfig.from_dict(good[0]["execConfig"]))
    flagged = ExecConfig.from_dict({"command": "get-token", "args": ["--token=arg-t0ken-never-shown"]})
    assert repr(flagged) == ("ExecConfig(command='get-token', api_version='client.authentication.k8s.io/v1', "
                             "provide_cluster_info=False)")
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "access_providers is required"),
        ({"access_providers": []}, "access_providers is empty"),
        ({"access_providers": good + good}, "names 'token-plugin' twice"),
        ({"access_providers": [{"name": "x", "execConfig": {"command": ""}}]}, "command must be"),
        ({"access_providers": [{"name": "x", "execConfig": {"command": "p", "interactiveMode": "Always"}}]},
         "without a terminal"),
        ({"access_providers": [{"name": "x", "execConfig": {
            "command": "p", "apiVersion": "client.authentication.k8s.io/v1alpha1"}}]}, "apiVersion"),
        ({"access_providers": good, "namespace": ""}, "namespace must be None"),
        ({"access_providers": good, "version": "v1"}, "version must be one of"),
        ({"access_providers": [dict(good[0], profileSourcedCLIArgsPolicy="Prepend")]},
         "profileSourcedCLIArgsPolicy must be one of Ignore, Append"),
    ]
    for options, says in cases:
        with pytest.raises(ConfigurationError, match=says):
            ClusterProfileProvider(api_client, **options)
    # KEP-5339's provider file reads as well; the provider is a ClusterProvider, and says no token
    provider = ClusterProfileProvider(api_client, access_providers={"providers": good})
    assert [p.name for p in provider.access_providers] == ["token-plugin"]
    assert isinstance(provider, ClusterProvider)
    assert repr(provider) == "<ClusterProfileProvider v1alpha1 all namespaces providers=token-plugin>"

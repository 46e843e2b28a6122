"""Cluster providers over real servers: kubeconfig Secrets on a hub (multicluster-runtime's
label and key) coming, changing and going, and the contexts of a kubeconfig file."""

from __future__ import annotations

import base64
import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _fleet import (
    HUB_NAMESPACE,
    KUBECONFIG_LABEL,
    NAMESPACES,
    SECRETS,
    ClusterRecorder,
    kubeconfig_secret,
    lists_served,
)
from helpers import CONFIGMAPS, TIMEOUT, cm

from kinformer import (
    ConfigurationError,
    KubeconfigContextsProvider,
    KubeconfigSecretProvider,
    MultiClusterInformer,
    MultiClusterInformerFactory,
)
from kinformer.clusters.kubeconfig import DEFAULT_SECRET_KEY, DEFAULT_SECRET_LABEL, client_from_kubeconfig
from kinformer.testing import FakeAPIServer, wait_for

Fleet = dict[str, FakeAPIServer]
TOKEN = "s3cr3t-token-never-logged"


@pytest.fixture
def hub(apiserver: FakeAPIServer, kube_fleet: Fleet) -> FakeAPIServer:
    """The hub: a namespace of kubeconfig Secrets, one per member of the fleet, which each hold
    ``default/app`` with data naming the member."""
    apiserver.create(NAMESPACES, {"metadata": {"name": HUB_NAMESPACE}})
    for name, server in kube_fleet.items():
        server.create(CONFIGMAPS, cm("app", None, "default", data={"cluster": name}))
    return apiserver


@pytest.fixture
def fleet_factory(hub: FakeAPIServer, api_client: Any) -> Iterator[tuple[MultiClusterInformerFactory,
                                                                          MultiClusterInformer,
                                                                          ClusterRecorder]]:
    factory = MultiClusterInformerFactory(KubeconfigSecretProvider(api_client, HUB_NAMESPACE))
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = ClusterRecorder(probe=lambda cluster: configmaps.lister().cluster(cluster).list())
    configmaps.add_event_handler(recorder)
    factory.start(threading.Event())
    yield factory, configmaps, recorder
    factory.shutdown()


def test_multicluster_runtimes_label_and_key() -> None:
    assert DEFAULT_SECRET_LABEL == KUBECONFIG_LABEL == "sigs.k8s.io/multicluster-runtime-kubeconfig"
    assert DEFAULT_SECRET_KEY == "kubeconfig"


def test_secrets_engage_reengage_and_disengage_their_clusters(
    hub: FakeAPIServer, kube_fleet: Fleet, fleet_factory: Any,
) -> None:
    factory, configmaps, recorder = fleet_factory
    for name in ("member-1", "member-2"):
        hub.create(SECRETS, kubeconfig_secret(name, kube_fleet[name].kubeconfig()))
    assert sorted(recorder.take(2)) == [("add", "member-1", "app"), ("add", "member-2", "app")]
    assert factory.wait_for_cache_sync(timeout=TIMEOUT)
    assert factory.clusters() == ["member-1", "member-2"]

    hub.create(SECRETS, kubeconfig_secret("member-3", kube_fleet["member-3"].kubeconfig()))
    assert recorder.next() == ("add", "member-3", "app")

    # a changed kubeconfig re-engages that cluster and touches no other
    other = configmaps.informer_for("member-1")
    lists = lists_served(kube_fleet["member-1"])
    secret = hub.get(SECRETS, HUB_NAMESPACE, "member-2")
    changed = kube_fleet["member-2"].kubeconfig()
    changed["contexts"][0]["context"]["namespace"] = "elsewhere"
    secret["data"] = kubeconfig_secret("member-2", changed)["data"]
    hub.update(SECRETS, secret)
    assert recorder.take(2) == [("disengaged", "member-2"), ("add", "member-2", "app")]
    assert configmaps.informer_for("member-1") is other
    assert lists_served(kube_fleet["member-1"]) == lists

    # a change that leaves the kubeconfig alone changes nothing
    secret = hub.get(SECRETS, HUB_NAMESPACE, "member-2")
    secret["metadata"]["annotations"] = {"touched": "yes"}
    hub.update(SECRETS, secret)

    # a deleted Secret disengages its cluster: objects gone at once, no deletes
    hub.delete(SECRETS, HUB_NAMESPACE, "member-1")
    assert recorder.next() == ("disengaged", "member-1")
    assert recorder.probed[-1] == []
    assert factory.clusters() == ["member-2", "member-3"]
    assert sorted(o["data"]["cluster"] for o in configmaps.lister().list()) == ["member-2", "member-3"]
    assert kube_fleet["member-1"].get(CONFIGMAPS, "default", "app")

    # a Secret without the key disengages; one that lost the label leaves the watch: disengages
    secret = hub.get(SECRETS, HUB_NAMESPACE, "member-2")
    secret["data"] = {}
    hub.update(SECRETS, secret)
    assert recorder.next() == ("disengaged", "member-2")
    secret = hub.get(SECRETS, HUB_NAMESPACE, "member-3")
    secret["metadata"]["labels"] = {KUBECONFIG_LABEL: "false"}
    hub.update(SECRETS, secret)
    assert recorder.next() == ("disengaged", "member-3")
    assert factory.clusters() == []
    assert recorder.drained() == []


def test_secrets_listed_first_sync_the_provider(
    hub: FakeAPIServer, kube_fleet: Fleet, api_client: Any,
) -> None:
    for name, server in kube_fleet.items():
        hub.create(SECRETS, kubeconfig_secret(name, server.kubeconfig()))
    hub.create(SECRETS, kubeconfig_secret("unlabelled", kube_fleet["member-1"].kubeconfig(), other="x"))
    provider = KubeconfigSecretProvider(api_client, HUB_NAMESPACE)
    factory = MultiClusterInformerFactory(provider)
    configmaps = factory.for_resource(CONFIGMAPS)
    assert not provider.has_synced()
    factory.start(threading.Event())
    try:
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert provider.has_synced()
        assert factory.clusters() == ["member-1", "member-2", "member-3"]
        assert len(configmaps.lister().list()) == 3
    finally:
        factory.shutdown()
    with pytest.raises(ConfigurationError, match="namespace must be a non-empty string"):
        KubeconfigSecretProvider(api_client, "")


def test_a_kubeconfig_that_does_not_parse_is_logged_without_its_content_and_skipped(
    hub: FakeAPIServer, kube_fleet: Fleet, fleet_factory: Any, caplog: pytest.LogCaptureFixture,
) -> None:
    factory, _configmaps, recorder = fleet_factory
    caplog.set_level(logging.INFO, logger="kinformer")
    hub.create(SECRETS, kubeconfig_secret("broken", f"users:\n- token: {TOKEN}\n  x: [\n".encode()))
    hub.create(SECRETS, kubeconfig_secret("listed", b"- just\n- a list\n"))
    hub.create(SECRETS, kubeconfig_secret("member-1", kube_fleet["member-1"].kubeconfig()))
    assert recorder.next() == ("add", "member-1", "app")
    assert factory.clusters() == ["member-1"]
    # a working cluster whose kubeconfig is broken by an update keeps its client
    secret = hub.get(SECRETS, HUB_NAMESPACE, "member-1")
    secret["data"]["kubeconfig"] = base64.b64encode(f"token: {TOKEN}: [".encode()).decode()
    hub.update(SECRETS, secret)
    assert wait_for(lambda: "keeps its previous kubeconfig" in caplog.text)
    assert factory.clusters() == ["member-1"]
    kube_fleet["member-1"].create(CONFIGMAPS, cm("later", None, "default"))
    assert recorder.next() == ("add", "member-1", "later")
    assert "kubeconfig Secret fleet-system/broken: not a kubeconfig:" in caplog.text
    assert "kubeconfig Secret fleet-system/listed: not a kubeconfig: a list, not a mapping" in caplog.text
    assert TOKEN not in caplog.text
    assert recorder.drained() == []


def test_client_from_kubeconfig_reaches_the_server(kube_fleet: Fleet) -> None:
    server = kube_fleet["member-1"]
    api_client = client_from_kubeconfig(json.dumps(server.kubeconfig()))
    try:
        assert api_client.configuration.host == server.url
    finally:
        api_client.close()
    with pytest.raises(ConfigurationError, match="not a usable kubeconfig"):
        client_from_kubeconfig("apiVersion: v1\nkind: Config\n")


# -- the contexts of a kubeconfig file ------------------------------------------------------------


def fleet_kubeconfig(kube_fleet: Fleet, path: Path) -> str:
    """One kubeconfig file with a context, cluster and user per member, named after it."""
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [],
                              "contexts": [], "current-context": "member-1"}
    for name, server in kube_fleet.items():
        one = server.kubeconfig()
        merged["clusters"].append({"name": name, "cluster": one["clusters"][0]["cluster"]})
        merged["users"].append({"name": name, "user": one["users"][0]["user"]})
        merged["contexts"].append({"name": name, "context": {"cluster": name, "user": name}})
    path.write_text(json.dumps(merged))
    return str(path)


def test_one_cluster_per_context_or_only_those_named(kube_fleet: Fleet, tmp_path: Path) -> None:
    for name, server in kube_fleet.items():
        server.create(CONFIGMAPS, cm("app", None, "default", data={"cluster": name}))
    path = fleet_kubeconfig(kube_fleet, tmp_path / "kubeconfig")
    assert KubeconfigContextsProvider(path).contexts == ["member-1", "member-2", "member-3"]
    factory = MultiClusterInformerFactory(KubeconfigContextsProvider(path, contexts=["member-3", "member-1"]))
    configmaps = factory.for_resource(CONFIGMAPS)
    factory.start(threading.Event())
    try:
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert factory.clusters() == ["member-1", "member-3"]
        for name in ("member-1", "member-3"):
            assert configmaps.lister().cluster(name).by_namespace("default").get("app")["data"] == {
                "cluster": name}
    finally:
        factory.shutdown()


def test_the_default_kubeconfig_is_kubeconfig_env(
    kube_fleet: Fleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KUBECONFIG", fleet_kubeconfig(kube_fleet, tmp_path / "kubeconfig"))
    assert KubeconfigContextsProvider().contexts == ["member-1", "member-2", "member-3"]


def test_a_missing_file_or_context_is_refused(kube_fleet: Fleet, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read kubeconfig"):
        KubeconfigContextsProvider(tmp_path / "nothing-here")
    path = fleet_kubeconfig(kube_fleet, tmp_path / "kubeconfig")
    with pytest.raises(ConfigurationError, match="has no context 'member-9'; it has: member-1, member-2"):
        KubeconfigContextsProvider(path, contexts=["member-1", "member-9"])
    (tmp_path / "bad").write_text(f"token: {TOKEN}: [")
    with pytest.raises(ConfigurationError, match="cannot read kubeconfig") as raised:
        KubeconfigContextsProvider(tmp_path / "bad")
    assert TOKEN not in str(raised.value)


def plugin_script(tmp_path: Path, name: str, body: str) -> str:
    """An executable shell script ``name`` in ``tmp_path`` running ``body``: a credential plugin."""
    script = tmp_path / name
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return str(script)


def test_a_context_whose_credential_plugin_hangs_or_fails_holds_no_other_back(
    kube_fleet: Fleet, tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    """Contexts were loaded one after another by the official loader, which waits on a
    credential plugin without a timeout: one that hung kept every later context from engaging
    and the provider from stopping, and one that failed engaged its member without credentials."""
    for name, server in kube_fleet.items():
        server.create(CONFIGMAPS, cm("app", None, "default", data={"cluster": name}))
    document = json.loads(Path(fleet_kubeconfig(kube_fleet, tmp_path / "kubeconfig")).read_text())
    pid_file = tmp_path / "plugin.pid"
    hangs = plugin_script(tmp_path, "hang", f"echo $$ > {pid_file}.part && mv {pid_file}.part {pid_file}\n"
                                            "exec sleep 600")
    fails = plugin_script(tmp_path, "fail", "echo 'no login session' >&2; exit 1")
    exec_of = {"member-1": hangs, "member-2": fails}
    for user in document["users"]:
        if user["name"] in exec_of:
            user["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                     "command": exec_of[user["name"]]}}
    path = tmp_path / "with-plugins"
    path.write_text(json.dumps(document))
    provider = KubeconfigContextsProvider(path)
    factory = MultiClusterInformerFactory(provider)
    configmaps = factory.for_resource(CONFIGMAPS)
    factory.start(threading.Event())
    try:
        assert wait_for(lambda: factory.clusters() == ["member-3"], TIMEOUT)  # not behind member-1
        assert wait_for(lambda: configmaps.lister().cluster("member-3").list() != [], TIMEOUT)
        assert wait_for(pid_file.exists, TIMEOUT)  # member-1's plugin still runs
        assert not provider.has_synced()
        assert wait_for(lambda: "credential plugin" in caplog.text and "member-2" in caplog.text, TIMEOUT)
        assert factory.clusters() == ["member-3"]  # member-2 not engaged without credentials
    finally:
        factory.shutdown()
    pid = int(pid_file.read_text())
    assert wait_for(lambda: not Path(f"/proc/{pid}").exists(), TIMEOUT), "the plugin outlived the stop"
    failed = [r for r in caplog.records if "member-2" in r.getMessage() and r.levelname == "ERROR"]
    assert len(failed) == 1 and "exit status 1: no login session" in failed[0].getMessage()


def test_a_refresh_whose_plugin_fails_quoting_its_token_logs_it_redacted(
    kube_fleet: Fleet, tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    """The official loader, refreshing an expired credential, logged a failed plugin's whole
    stderr on the root logger: a plugin that quoted its token there put it into the log."""
    caplog.set_level(logging.DEBUG)  # every logger, the official client's too
    server = kube_fleet["member-1"]
    server.create(CONFIGMAPS, cm("app", None, "default", data={"cluster": "member-1"}))
    document = json.loads(Path(fleet_kubeconfig(kube_fleet, tmp_path / "kubeconfig")).read_text())
    credential = json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                             "status": {"token": TOKEN, "expirationTimestamp": "2000-01-01T00:00:00Z"}})
    runs = tmp_path / "runs"  # the first run gives a credential expired already; later runs fail
    refreshes = plugin_script(tmp_path, "refresh",
                              f"echo run >> {runs}\n"
                              f"[ \"$(wc -l < {runs})\" -gt 1 ] && "
                              f"{{ echo 'refused {TOKEN}' >&2; exit 4; }}\n"
                              f"echo '{credential}'")
    document["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                             "command": refreshes}}
    path = tmp_path / "with-plugin"
    path.write_text(json.dumps(document))
    factory = MultiClusterInformerFactory(KubeconfigContextsProvider(path, contexts=["member-1"]))
    configmaps = factory.for_resource(CONFIGMAPS)
    factory.start(threading.Event())
    try:  # each request refreshes, fails, and goes on with the last token (this server takes any)
        assert wait_for(lambda: configmaps.lister().cluster("member-1").list() != [], TIMEOUT)
    finally:
        factory.shutdown()
    assert len(runs.read_text().splitlines()) > 1
    assert TOKEN not in caplog.text
    failed = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert failed and all(m == f"credential plugin {refreshes} of user member-1 failed with exit "
                               "status 4: refused [redacted]; the last credential is kept" for m in failed)


def test_a_credential_plugin_past_its_time_is_killed_and_its_context_skipped(
    kube_fleet: Fleet, tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    document = json.loads(Path(fleet_kubeconfig(kube_fleet, tmp_path / "kubeconfig")).read_text())
    hangs = plugin_script(tmp_path, "hang", "exec sleep 600")
    document["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                             "command": hangs}}
    path = tmp_path / "with-plugin"
    path.write_text(json.dumps(document))
    provider = KubeconfigContextsProvider(path, credential_timeout=0.5)
    factory = MultiClusterInformerFactory(provider)
    factory.for_resource(CONFIGMAPS)
    factory.start(threading.Event())
    try:
        assert wait_for(provider.has_synced, TIMEOUT)
        assert factory.clusters() == ["member-2", "member-3"]
    finally:
        factory.shutdown()
    said = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(said) == 1 and "context member-1 skipped" in said[0]
    assert "did not finish within 0.5s" in said[0]


def test_a_secrets_kubeconfig_whose_credential_plugin_fails_or_hangs_is_refused(
    kube_fleet: Fleet, tmp_path: Path,
) -> None:
    """The official loader logged a failing plugin and made a client without credentials, and
    waited on a hanging one for good, on the Secret informer's handler thread."""
    document = kube_fleet["member-1"].kubeconfig()
    document["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                             "command": plugin_script(tmp_path, "fail", "exit 3")}}
    with pytest.raises(ConfigurationError, match=r"credential plugin .* failed with exit status 3"):
        client_from_kubeconfig(json.dumps(document))
    document["users"][0]["user"]["exec"]["command"] = plugin_script(tmp_path, "hang", "exec sleep 600")
    with pytest.raises(ConfigurationError, match=r"did not finish within 0\.3s"):
        client_from_kubeconfig(json.dumps(document), credential_timeout=0.3)


def test_a_secret_whose_credential_plugin_hangs_holds_no_other_secret_back(
    hub: FakeAPIServer, kube_fleet: Fleet, api_client: Any, tmp_path: Path,
) -> None:
    """The Secrets' kubeconfigs were loaded one at a time on the Secret informer's thread: one
    whose credential plugin hung (a minute at most) held back every other member's engage,
    re-engage and disengage, and the factory's stop, which left the plugin running."""
    pid_file = tmp_path / "plugin.pid"
    hangs = plugin_script(tmp_path, "hang", f"echo $$ > {pid_file}.part && mv {pid_file}.part {pid_file}\n"
                                            "exec sleep 600")
    sick = kube_fleet["member-1"].kubeconfig()
    sick["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                         "command": hangs}}
    hub.create(SECRETS, kubeconfig_secret("member-1", sick))  # listed first, before the others
    hub.create(SECRETS, kubeconfig_secret("member-2", kube_fleet["member-2"].kubeconfig()))
    provider = KubeconfigSecretProvider(api_client, HUB_NAMESPACE)
    factory = MultiClusterInformerFactory(provider)
    configmaps = factory.for_resource(CONFIGMAPS)
    factory.start(threading.Event())
    try:
        assert wait_for(lambda: factory.clusters() == ["member-2"], TIMEOUT)  # listed with member-1
        assert wait_for(pid_file.exists, TIMEOUT)  # member-1's plugin still runs
        assert not provider.has_synced()  # member-1 is neither engaged nor skipped yet
        assert not factory.has_synced()
        hub.create(SECRETS, kubeconfig_secret("member-3", kube_fleet["member-3"].kubeconfig()))
        assert wait_for(lambda: factory.clusters() == ["member-2", "member-3"], TIMEOUT)
        assert wait_for(lambda: configmaps.lister().cluster("member-3").list() != [], TIMEOUT)
        hub.delete(SECRETS, HUB_NAMESPACE, "member-2")
        assert wait_for(lambda: factory.clusters() == ["member-3"], TIMEOUT)
    finally:
        factory.shutdown(timeout=TIMEOUT)
    pid = int(pid_file.read_text())
    assert wait_for(lambda: not Path(f"/proc/{pid}").exists(), TIMEOUT), "the plugin outlived the stop"
    assert not [t.name for t in threading.enumerate()
                if t.name.startswith(("kinformer-kubeconfig", "kinformer-clusters"))]


def test_a_secret_changed_or_deleted_while_its_kubeconfig_loads_engages_only_its_last_kubeconfig(
    hub: FakeAPIServer, kube_fleet: Fleet, api_client: Any, tmp_path: Path,
) -> None:
    """A Secret whose slow credential plugin is still running when the Secret changes again, or
    goes: the load that was overtaken engages nothing."""
    release = tmp_path / "release"
    slow = plugin_script(tmp_path, "slow", f"while [ ! -e {release} ]; do sleep 0.05; done\n"
                                           "echo '{\"apiVersion\": \"client.authentication.k8s.io/v1beta1\","
                                           " \"kind\": \"ExecCredential\", \"status\": {\"token\": \"t\"}}'")
    slow_member_1 = kube_fleet["member-1"].kubeconfig()
    slow_member_1["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                                  "command": slow}}
    factory = MultiClusterInformerFactory(KubeconfigSecretProvider(api_client, HUB_NAMESPACE))
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = ClusterRecorder()
    configmaps.add_event_handler(recorder)
    factory.start(threading.Event())
    try:
        hub.create(SECRETS, kubeconfig_secret("moving", slow_member_1))
        hub.create(SECRETS, kubeconfig_secret("going", slow_member_1))
        secret = hub.get(SECRETS, HUB_NAMESPACE, "moving")  # changed while its first load runs
        secret["data"] = kubeconfig_secret("moving", kube_fleet["member-2"].kubeconfig())["data"]
        hub.update(SECRETS, secret)
        hub.delete(SECRETS, HUB_NAMESPACE, "going")  # deleted while its load runs
        assert recorder.next() == ("add", "moving", "app")
        assert configmaps.lister().cluster("moving").by_namespace("default").get("app")["data"] == {
            "cluster": "member-2"}
        release.write_text("")  # the overtaken loads finish now
        assert wait_for(lambda: not [t for t in threading.enumerate()
                                     if t.name.startswith("kinformer-kubeconfig-secret-")], TIMEOUT)
        hub.create(SECRETS, kubeconfig_secret("member-3", kube_fleet["member-3"].kubeconfig()))
        assert recorder.next() == ("add", "member-3", "app")  # a later engage, and nothing before it
        assert factory.clusters() == ["member-3", "moving"]
        assert configmaps.lister().cluster("moving").by_namespace("default").get("app")["data"] == {
            "cluster": "member-2"}
    finally:
        factory.shutdown()

"""The kinformer command in subprocesses: demo, watch against embedded and started servers, errors."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CONFIGMAPS, KINFORMER, ChildProcess, SilentServer, cm

import kinformer as kinformer_package
from kinformer import cli
from kinformer.cli.watch import exits, resolve
from kinformer.cli.watch import kubeconfig as watch_kubeconfig
from kinformer.gvr import GroupVersionResource
from kinformer.testing import FakeAPIServer, wait_for

TIMEOUT = 30.0  # seconds any one command may take before the test fails
INTERRUPT_BOUND = 15.0  # seconds a Ctrl-C may take to end a command on a loaded machine


def kinformer(*args: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kinformer", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture
def kubeconfig(apiserver: FakeAPIServer, tmp_path: Path) -> str:
    return apiserver.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def silent(tmp_path: Path) -> Iterator[tuple[SilentServer, str]]:
    """A server that accepts and never answers, and a kubeconfig pointing at it."""
    server = SilentServer()
    try:
        yield server, FakeAPIServer(port=server.port).write_kubeconfig(tmp_path / "silent-kubeconfig")
    finally:
        server.close()


@pytest.fixture
def watching(kubeconfig: str) -> Iterator[ChildProcess]:
    with ChildProcess([*KINFORMER, "watch", "configmaps", "--kubeconfig", kubeconfig], stderr=True,
                      timeout=10.0, line_timeout=10.0) as watch:
        yield watch


def demo(*args: str) -> ChildProcess:
    """``kinformer demo --duration 0 ARGS`` (it runs until stopped), its stdout read."""
    return ChildProcess([*KINFORMER, "demo", "--duration", "0", *args], line_timeout=10.0)


def test_demo_runs_for_its_duration_and_ends_with_a_consistent_summary() -> None:
    result = kinformer("demo", "--duration", "3", "--objects", "200", "--rate", "50")
    assert result.returncode == 0, result.stderr
    summary = result.stdout[result.stdout.index("kinformer demo summary"):]
    assert "200 ConfigMaps in 4 namespaces" in summary
    assert "every cache matches the server" in summary
    assert "threads        all stopped" in summary
    # the controllers' work queues, from the metrics they report
    assert re.search(r"work queues +configmap-audit \d+ retr", summary)


def test_demo_whose_duration_ends_before_its_first_lists_exits_1_saying_nothing_was_checked() -> None:
    """It exited 0, with no consistency line, although no ConfigMap was ever cached."""
    result = kinformer("demo", "--duration", "0.1", "--objects", "20000", "--no-faults")
    summary = result.stdout[result.stdout.index("kinformer demo summary"):]
    assert "initial sync   not reached" in summary
    assert "not checked: the first lists did not complete" in summary
    assert result.returncode == 1, result.stderr


def test_demo_stops_cleanly_on_ctrl_c_with_its_summary() -> None:
    with demo("--objects", "100") as running:
        running.out.next_matching("phase=running", timeout=TIMEOUT)
        assert running.stop(signal.SIGINT, TIMEOUT) == 0
        assert "interrupted after" in running.out.next_matching("kinformer demo summary")
        # Ctrl-C means now: the caches are not waited for nor compared
        assert "not checked: interrupted" in running.out.next_matching("consistency")
        assert running.out.next_matching("threads").split() == ["threads", "all", "stopped"]


def test_demo_stops_on_ctrl_c_while_its_first_lists_load() -> None:
    # 100,000 ConfigMaps take a few seconds to list, decode and cache; Ctrl-C must not wait for
    # them (how soon it ends is measured by benchmarks/bench_demo_stop.py, not asserted here)
    with demo("--objects", "100000", "--no-faults") as running:
        running.out.next_matching("phase=listing", timeout=TIMEOUT)
        assert running.stop(signal.SIGINT, INTERRUPT_BOUND) == 0
        assert "interrupted after" in running.out.next_matching("kinformer demo summary")
        assert running.out.next_matching("threads").split() == ["threads", "all", "stopped"]


def test_demo_stops_on_ctrl_c_while_it_loads_its_workload() -> None:
    # two million ConfigMaps take minutes to load; Ctrl-C must not wait for them
    with demo("--objects", "2000000") as running:
        running.out.next_matching("phase=loading the workload", timeout=TIMEOUT)
        assert running.stop(signal.SIGINT, INTERRUPT_BOUND) == 0
        assert "interrupted after" in running.out.next_matching("kinformer demo summary")
        assert running.out.next_matching("threads").split() == ["threads", "all", "stopped"]


def test_watch_once_on_the_embedded_server_prints_the_seeded_table() -> None:
    result = kinformer("watch", "cm", "--embedded", "--once")
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()]
    assert rows[0] == ["NAME", "RESOURCEVERSION", "AGE"]
    assert [row[0] for row in rows[1:]] == ["app-config", "feature-flags", "routing"]


def test_watch_once_across_namespaces_adds_a_namespace_column(
    apiserver: FakeAPIServer, kubeconfig: str,
) -> None:
    apiserver.create(CONFIGMAPS, cm("a", None, "kube-system"))
    made = apiserver.create(CONFIGMAPS, cm("b", None, "default"))
    result = kinformer("watch", "configmap", "-A", "--once", "--kubeconfig", kubeconfig)
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()]
    assert rows[0] == ["NAMESPACE", "NAME", "RESOURCEVERSION", "AGE"]
    assert rows[1][:2] == ["default", "b"] and rows[1][2] == made["metadata"]["resourceVersion"]
    assert rows[2][:2] == ["kube-system", "a"]


def test_watch_prints_a_line_for_each_change_made_while_it_runs(
    apiserver: FakeAPIServer, watching: ChildProcess,
) -> None:
    apiserver.create(CONFIGMAPS, cm("before", None, "default"))
    lines = watching.out
    assert apiserver.wait_for_watchers(CONFIGMAPS, 1, timeout=15.0)
    made = apiserver.create(CONFIGMAPS, cm("during", None, "default", data={"k": "v"}))
    changed = apiserver.update(CONFIGMAPS, cm("during", None, "default", data={"k": "w"}))
    apiserver.delete(CONFIGMAPS, "default", "during")
    assert lines.next_matching("default/during").split() == [
        "ADDED", "default/during", made["metadata"]["resourceVersion"]]
    assert lines.next_matching("default/during").split()[::2] == [
        "MODIFIED", changed["metadata"]["resourceVersion"]]
    assert lines.next_matching("default/during").split()[0] == "DELETED"
    assert watching.stop(signal.SIGINT) == 0  # a clean stop


def test_a_watch_that_becomes_forbidden_ends_with_exit_6(
    apiserver: FakeAPIServer, watching: ChildProcess,
) -> None:
    assert apiserver.wait_for_watchers(CONFIGMAPS, 1, timeout=15.0)
    apiserver.forbid("configmaps")
    apiserver.drop_watches()  # the reflector asks again, and is refused
    assert watching.wait(15) == 6
    assert "Forbidden (403)" in watching.err.rest()


def test_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    result = kinformer("watch", "cm", "-n", "a", "-A")
    assert result.returncode == 2
    assert "not allowed with argument" in result.stderr
    with pytest.raises(SystemExit) as exited:
        cli.main(["watch"])
    assert exited.value.code == 2
    capsys.readouterr()
    assert cli.main(["watch", "cm", "-l", "app in (web"]) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_an_unknown_resource_exits_3_naming_it(kubeconfig: str) -> None:
    result = kinformer("watch", "gizmos", "--kubeconfig", kubeconfig, "--once")
    assert result.returncode == 3
    assert result.stderr.strip() == 'error: the server doesn\'t have a resource type "gizmos"'


def test_resources_resolve_like_kubectl_by_plural_singular_short_name_kind_and_group(
    api_client: Any,
) -> None:
    deployments = GroupVersionResource("apps", "v1", "deployments")
    for name in ("deployments", "deployment", "deploy", "Deployment", "deployments.apps",
                 "deploy.v1.apps"):
        assert resolve.resolve_resource(api_client, name).gvr == deployments, name
    namespaces = resolve.resolve_resource(api_client, "ns")
    assert namespaces.gvr.resource == "namespaces" and not namespaces.namespaced
    with pytest.raises(exits.CommandError) as failed:
        resolve.resolve_resource(api_client, "deployments.example.com")
    assert failed.value.code == exits.EXIT_UNKNOWN_RESOURCE


def test_a_refused_connection_exits_4(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on once the socket closes
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = FakeAPIServer(port=port)
    path = server.write_kubeconfig(tmp_path / "kubeconfig")
    result = kinformer("watch", "cm", "--kubeconfig", path, "--once")
    assert result.returncode == 4
    assert result.stderr.startswith(f"error: unable to connect to the server at http://127.0.0.1:{port}")


def test_a_tls_failure_exits_4_with_the_whole_reason(tmp_path: Path) -> None:
    with FakeAPIServer(token="right") as server:
        kubeconfig = server.kubeconfig()
        del kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"]  # trust the system's CAs
        path = tmp_path / "kubeconfig"
        path.write_text(json.dumps(kubeconfig))
        result = kinformer("watch", "cm", "--kubeconfig", os.fspath(path), "--once")
    assert result.returncode == 4
    assert result.stderr.startswith(
        f"error: unable to connect to the server at {server.url}: discovery /api: TLS failure: "
        "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer "
        "certificate")
    assert len(result.stderr.splitlines()) == 1


def test_a_cluster_whose_certificate_is_not_checked_prints_no_warning_per_request(tmp_path: Path) -> None:
    """insecure-skip-tls-verify printed urllib3's InsecureRequestWarning, four lines a request,
    fourteen times for one --once; kubectl prints none. -v still shows them."""
    with FakeAPIServer(token="right") as server:
        kubeconfig = server.kubeconfig()
        cluster = kubeconfig["clusters"][0]["cluster"]
        del cluster["certificate-authority-data"]
        cluster["insecure-skip-tls-verify"] = True
        path = tmp_path / "kubeconfig"
        path.write_text(json.dumps(kubeconfig))
        quiet = kinformer("watch", "cm", "--kubeconfig", os.fspath(path), "--once")
        verbose = kinformer("-v", "watch", "cm", "--kubeconfig", os.fspath(path), "--once")
    assert quiet.returncode == 0, quiet.stderr
    assert "InsecureRequestWarning" not in quiet.stderr
    assert verbose.returncode == 0
    assert "InsecureRequestWarning" in verbose.stderr


def test_a_wrong_token_exits_5(tmp_path: Path) -> None:
    with FakeAPIServer(token="right") as server:
        path = tmp_path / "kubeconfig"
        server.write_kubeconfig(path)
        path.write_text(path.read_text().replace('"right"', '"wrong"'))
        result = kinformer("watch", "cm", "--kubeconfig", os.fspath(path), "--once")
    assert result.returncode == 5
    assert "Unauthorized (401)" in result.stderr


def test_a_forbidden_list_exits_6(
    apiserver: FakeAPIServer, kubeconfig: str, capsys: pytest.CaptureFixture[str],
) -> None:
    apiserver.forbid("configmaps", "list")
    assert cli.main(["watch", "cm", "--kubeconfig", kubeconfig, "--once"]) == 6
    assert "Forbidden (403)" in capsys.readouterr().err


def test_a_missing_kubeconfig_or_context_exits_7(
    kubeconfig: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["watch", "cm", "--kubeconfig", os.fspath(tmp_path / "none")]) == 7
    capsys.readouterr()
    assert cli.main(["watch", "cm", "--kubeconfig", kubeconfig, "--context", "nope"]) == 7
    assert capsys.readouterr().err == (
        f'error: kubeconfig {kubeconfig} has no context "nope"; it has: kinformer\n')


@pytest.mark.parametrize(("text", "says"), [
    ("clusters: [unclosed\n", "while parsing"),
    ("- a list\n- not a mapping\n", "it holds list, not a mapping with clusters, contexts and users"),
    ("hello\n", "it holds str, not a mapping with clusters, contexts and users"),
], ids=["not-yaml", "a-list", "a-word"])
def test_a_kubeconfig_that_is_not_one_exits_7_with_one_error_line(
        tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    result = kinformer("watch", "cm", "--kubeconfig", os.fspath(path))
    assert result.returncode == 7
    assert result.stderr.startswith(f"error: kubeconfig {path} is not a valid kubeconfig: ")
    assert says in result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr


def test_a_url_that_is_not_an_api_server_says_so(apiserver: FakeAPIServer, tmp_path: Path) -> None:
    # the server's OpenAPI path answers, but it is no API server's root: /api is not found there
    kubeconfig = FakeAPIServer(port=apiserver.port).kubeconfig()
    kubeconfig["clusters"][0]["cluster"]["server"] = f"{apiserver.url}/openapi/v2"
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(kubeconfig))
    result = kinformer("watch", "cm", "--kubeconfig", os.fspath(path), "--once")
    assert result.returncode == 4
    assert result.stderr == (f"error: {apiserver.url}/openapi/v2 is not a Kubernetes API server "
                             "(GET /api answered 404)\n")


def serve(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``kinformer serve`` with its temporary directories under ``tmp_path``."""
    return subprocess.run([sys.executable, "-m", "kinformer", "serve", *args], capture_output=True,
                          text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
                          env={**os.environ, "TMPDIR": os.fspath(tmp_path)})


@pytest.mark.parametrize(("args", "code", "message"), [
    (["--port", "99999"], 2, "argument --port: invalid port 99999: must be 0 to 65535"),
    (["--history-size", "0"], 2, "argument --history-size: invalid value '0': must be at least 1"),
    (["--kubeconfig", "/nonexistent/dir/kc"], 1,
     "cannot write the kubeconfig /nonexistent/dir/kc: the directory /nonexistent/dir does not exist"),
], ids=["port", "history-size", "kubeconfig-dir"])
def test_a_failed_serve_start_prints_one_error_line_and_leaves_nothing_behind(
    tmp_path: Path, args: list[str], code: int, message: str,
) -> None:
    result = serve(tmp_path, *args)
    assert result.returncode == code
    assert result.stderr.splitlines()[-1].endswith(f"error: {message}")
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_empty_serve_token_is_a_usage_error_and_an_empty_environment_token_means_none(
    tmp_path: Path,
) -> None:
    result = serve(tmp_path, "--token", "")
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].endswith("error: argument --token: invalid token '': must not "
                                                   "be empty (leave --token out to serve without one)")
    path = tmp_path / "kubeconfig"
    with ChildProcess([*KINFORMER, "serve", "--kubeconfig", os.fspath(path)], timeout=TIMEOUT,
                      line_timeout=TIMEOUT, env={**os.environ, "KINFORMER_SERVE_TOKEN": ""}) as serving:
        assert serving.out.next_matching("kubeconfig=").startswith("kinformer serve: http://")
        assert json.loads(path.read_text())["users"][0]["user"] == {}
        assert kinformer("watch", "cm", "--once", "--kubeconfig", os.fspath(path)).returncode == 0
        assert serving.stop() == 0


def test_serve_overwrites_only_a_kubeconfig_a_serve_wrote(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    precious = work / "config"
    precious.write_text("apiVersion: v1\nkind: Config\ncurrent-context: prod\n")
    result = serve(tmp_path / "work", "--kubeconfig", os.fspath(precious))
    assert result.returncode == 1
    assert result.stderr == (f"error: will not overwrite {precious}: it exists and is no kubeconfig "
                             "kinformer serve wrote; remove it or name another file\n")
    assert precious.read_text() == "apiVersion: v1\nkind: Config\ncurrent-context: prod\n"
    assert sorted(path.name for path in work.iterdir()) == ["config"]
    path = work / "kubeconfig"
    for _ in range(2):  # the second serve writes over the first one's
        with ChildProcess([*KINFORMER, "serve", "--kubeconfig", os.fspath(path)], stderr=True,
                          timeout=TIMEOUT, line_timeout=TIMEOUT) as serving:
            url = serving.out.next_matching("kubeconfig=").split()[2]
            assert json.loads(path.read_text())["clusters"][0]["cluster"]["server"] == url
            assert serving.stop() == 0


def test_serve_on_a_port_in_use_exits_1_and_leaves_nothing_behind(
    apiserver: FakeAPIServer, tmp_path: Path,
) -> None:
    result = serve(tmp_path, "--port", str(apiserver.port))
    assert result.returncode == 1
    assert result.stderr == f"error: cannot listen on 127.0.0.1:{apiserver.port}: Address already in use\n"
    assert list(tmp_path.iterdir()) == []


def test_serve_removes_its_temporary_kubeconfig_when_stopped(tmp_path: Path) -> None:
    with ChildProcess([*KINFORMER, "serve"], timeout=TIMEOUT, line_timeout=10.0,
                      env={**os.environ, "TMPDIR": os.fspath(tmp_path)}) as serving:
        kubeconfig = Path(serving.out.next_matching("kubeconfig=", timeout=TIMEOUT).split("kubeconfig=")[1])
        assert kubeconfig.parent.parent == tmp_path and kubeconfig.exists()
        assert serving.stop(signal.SIGTERM) == 0
        assert list(tmp_path.iterdir()) == []


def test_serve_with_logical_clusters_serves_each_cluster_and_a_context_across_them(
    tmp_path: Path,
) -> None:
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    from kinformer.cli.serve import ALL_CLUSTERS_CONTEXT

    path = tmp_path / "kubeconfig"
    clients = []
    with ChildProcess([*KINFORMER, "serve", "--logical-clusters", "--kubeconfig", os.fspath(path)],
                      timeout=TIMEOUT, line_timeout=10.0) as serving:
        try:
            url = serving.out.next_matching("kubeconfig=", timeout=TIMEOUT).split()[2]
            for context in ("kinformer", ALL_CLUSTERS_CONTEXT):
                clients.append(k8s_config.new_client_from_config(os.fspath(path), context=context))
            root, across = (k8s.CoreV1Api(c) for c in clients)
            clients.append(in_b := k8s.ApiClient(k8s.Configuration(host=f"{url}/clusters/b")))
            k8s.CoreV1Api(in_b).create_namespaced_config_map(
                "default", {"metadata": {"name": "made-in-b"}})
            seen = across.list_config_map_for_all_namespaces().items
            assert [(c.metadata.name, c.metadata.annotations) for c in seen] == [
                ("made-in-b", {"kcp.io/cluster": "b"})]
            assert root.list_config_map_for_all_namespaces().items == []
            assert serving.stop(signal.SIGTERM) == 0
        finally:
            for api_client in clients:
                api_client.close()


@pytest.fixture
def in_a_pod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A pod's environment without a kubeconfig: service host and port set, no ~/.kube/config.

    The service account directory (token, CA, namespace) is a temporary one the test fills.
    """
    account = tmp_path / "serviceaccount"
    account.mkdir()
    monkeypatch.setattr(watch_kubeconfig, "SERVICE_ACCOUNT_DIR", os.fspath(account))
    monkeypatch.setenv("HOME", os.fspath(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    return account


def test_in_a_pod_without_a_kubeconfig_watch_uses_the_service_account(
    in_a_pod: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    with FakeAPIServer(token="pod-token") as server:
        assert server.ca_file is not None
        (in_a_pod / "token").write_text("pod-token")
        (in_a_pod / "ca.crt").write_bytes(Path(server.ca_file).read_bytes())
        (in_a_pod / "namespace").write_text("team-a\n")
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(server.port))
        server.create(GroupVersionResource("", "v1", "namespaces"), {"metadata": {"name": "team-a"}})
        server.create(CONFIGMAPS, cm("mine", None, "team-a"))
        server.create(CONFIGMAPS, cm("elsewhere", None, "default"))
        assert cli.main(["watch", "cm", "--once"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert [row[0] for row in rows[1:]] == ["mine"]  # the pod's namespace by default


def test_in_a_pod_without_its_token_file_watch_exits_7(
    in_a_pod: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    assert cli.main(["watch", "cm", "--once"]) == 7
    assert "service account" in capsys.readouterr().err


@pytest.mark.parametrize("gate", [True, False], ids=["server-side", "client-side"])
def test_watch_once_with_a_shard_prints_only_that_shards_objects(tmp_path: Path, gate: bool) -> None:
    from kinformer import ShardSelector

    with FakeAPIServer(feature_gates={"ShardedListAndWatch": gate}) as server:
        made = [server.create(CONFIGMAPS, cm(f"cm-{i}", None, "default")) for i in range(8)]
        path = server.write_kubeconfig(tmp_path / "kubeconfig")
        result = kinformer("watch", "cm", "--shard", "1/2", "--once", "--kubeconfig", path)
    assert result.returncode == 0, result.stderr
    printed = {line.split()[0] for line in result.stdout.splitlines()[1:] if line.strip()}
    second = ShardSelector.for_shard(1, 2)
    assert printed == {o["metadata"]["name"] for o in made if second.matches(o)}


@pytest.mark.parametrize("shard", ["2/2", "1", "a/3", "-1/4"])
def test_a_bad_shard_exits_2_saying_what_a_shard_is(shard: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["watch", "cm", "--embedded", "--once", "--shard", shard])  # "-1/4" too
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"kinformer watch: error: argument --shard: invalid value {shard!r}: "
        "must be I/N with 0 <= I < N, e.g. 0/3")


def test_an_unknown_option_of_a_subcommand_prints_that_subcommands_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["watch", "cm", "--bogus"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: kinformer watch ")
    assert err.splitlines()[-1] == "kinformer watch: error: unrecognized arguments: --bogus"


def test_serve_says_its_url_once(tmp_path: Path) -> None:
    with ChildProcess([*KINFORMER, "serve"], stderr=True, timeout=TIMEOUT, line_timeout=TIMEOUT,
                      env={**os.environ, "TMPDIR": os.fspath(tmp_path)}) as serving:
        first = serving.out.next()  # "kinformer serve: <url> kubeconfig=<path>"
        url = first.split()[2]
        assert serving.stop(signal.SIGTERM) == 0
        said = "\n".join([first, serving.out.rest(), serving.err.rest()])
        assert said.count(url) == 1, said


def test_serve_refuses_an_unknown_feature_gate_with_exit_2() -> None:
    result = kinformer("serve", "--feature-gates", "NoSuchGate=true")
    assert result.returncode == 2
    assert "unrecognized feature gate: NoSuchGate" in result.stderr
    result = kinformer("serve", "--feature-gates", "ShardedListAndWatch=yes")
    assert result.returncode == 2


def test_watch_gives_up_at_its_timeout_on_a_server_that_never_answers(
    silent: tuple[SilentServer, str],
) -> None:
    _server, path = silent
    result = kinformer("watch", "cm", "--once", "--timeout", "1", "--kubeconfig", path)
    assert result.returncode == 4
    assert result.stderr.strip() == (
        f"error: the server at http://127.0.0.1:{_server.port} did not answer discovery within 1s")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_ends_a_watch_waiting_on_a_server_that_never_answers(
    silent: tuple[SilentServer, str], sig: signal.Signals,
) -> None:
    server, path = silent
    with ChildProcess([*KINFORMER, "watch", "cm", "--timeout", "600", "--kubeconfig", path],
                      stderr=True, timeout=10) as watch:
        assert server.accepted.wait(TIMEOUT)  # discovery is waiting for its answer
        code = watch.stop(sig)
        err = watch.err.rest()
        assert code == 0, err
        assert err == ""


def test_ctrl_c_ends_a_watch_waiting_for_its_first_list(
    apiserver: FakeAPIServer, kubeconfig: str,
) -> None:
    apiserver.set_delay(600, verb="list")
    try:
        with ChildProcess([*KINFORMER, "watch", "cm", "--timeout", "600", "--kubeconfig", kubeconfig],
                          stderr=True, timeout=10) as watch:
            # discovery read the core group's document: the (delayed) first list comes next
            assert wait_for(lambda: any(path == "/api/v1" for _, path, _, _ in apiserver.requests), TIMEOUT)
            assert watch.stop(signal.SIGINT) == 0, watch.err.rest()
    finally:
        apiserver.set_delay(0)


def test_a_slow_first_list_prints_no_warning_while_the_watch_waits_for_it(
    apiserver: FakeAPIServer, kubeconfig: str,
) -> None:
    apiserver.create(CONFIGMAPS, cm("app", None, "default"))
    apiserver.set_delay(1.5, verb="list")  # several of the command's looks at the informer
    try:
        result = kinformer("watch", "cm", "--once", "--timeout", "20", "--kubeconfig", kubeconfig)
    finally:
        apiserver.set_delay(0, verb="list")
    assert result.returncode == 0, result.stderr
    assert [row.split()[0] for row in result.stdout.splitlines()] == ["NAME", "app"]
    assert result.stderr == ""


def test_version_prints_the_package_version() -> None:
    result = kinformer("--version")
    assert result.returncode == 0
    assert result.stdout == f"kinformer {kinformer_package.__version__}\n"


NUMERIC_OPTIONS = [  # (subcommand and its arguments, option, a bad value, what the message says)
    (["serve"], "--history-size", "0", "must be at least 1"),
    (["serve"], "--history-size", "1.5", "not a whole number"),
    (["serve"], "--bookmark-interval", "nan", "must be a finite number"),
    (["serve"], "--bookmark-interval", "inf", "must be a finite number"),
    (["serve"], "--bookmark-interval", "0", "must be positive"),
    (["serve"], "--bookmark-interval", "1e300", "must be at most"),
    (["demo"], "--duration", "nan", "must be a finite number"),
    (["demo"], "--duration", "-inf", "must be a finite number"),
    (["demo"], "--duration", "-1", "must not be negative"),
    (["demo"], "--objects", "-1", "must not be negative"),
    (["demo"], "--rate", "nan", "must be a finite number"),
    (["demo"], "--rate", "1e12", "must be at most 1e+06"),
    (["demo"], "--replicas", "1", "must be at least 2"),
    (["demo"], "--replicas", "0", "must be at least 2"),
    (["demo"], "--handover-every", "inf", "must be a finite number"),
    (["demo"], "--handover-every", "0", "must be positive"),
    (["watch", "cm", "--embedded"], "--timeout", "nan", "must be a finite number"),
    (["watch", "cm", "--embedded"], "--timeout", "inf", "must be a finite number"),
    (["watch", "cm", "--embedded"], "--timeout", "0", "must be positive"),
    (["watch", "cm", "--embedded"], "--timeout", "x", "not a number"),
]


@pytest.mark.parametrize(("command", "option", "value", "message"), NUMERIC_OPTIONS,
                         ids=[f"{c[0]}{o}={v}" for c, o, v, _ in NUMERIC_OPTIONS])
def test_every_numeric_option_must_be_finite_and_in_range_else_exit_2(
    command: list[str], option: str, value: str, message: str, capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main([*command, f"{option}={value}"])
    assert exited.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.startswith(f"kinformer {command[0]}: error: argument {option}: invalid value {value!r}: ")
    assert message in error

"""``kinformer watch`` reading kubeconfigs as kubectl reads them, in subprocesses against
FakeAPIServers: which context ``$KUBECONFIG=a:b`` makes current, and kubeconfigs that are
broken in one place (a credential plugin that hangs or fails, a user or server missing, a
current context that cannot be used) failing loudly, in that place alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CONFIGMAPS, KINFORMER, ChildProcess, cm

from kinformer.gvr import GroupVersionResource
from kinformer.testing import FakeAPIServer, wait_for

NAMESPACES = GroupVersionResource("", "v1", "namespaces")
TIMEOUT = 30.0  # seconds any one command may take before the test fails


def kinformer(*args: str, env: dict[str, str] | None = None,
              timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kinformer", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


def named(server: FakeAPIServer, name: str, namespace: str = "default",
          current: str | None = None) -> dict[str, Any]:
    """``server``'s kubeconfig with its cluster, user and context called ``name``."""
    document = server.kubeconfig()
    return {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": name, "cluster": document["clusters"][0]["cluster"]}],
        "users": [{"name": name, "user": document["users"][0]["user"]}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}],
        "current-context": name if current is None else current,
    }


def write(path: Path, document: dict[str, Any]) -> str:
    path.write_text(json.dumps(document))
    return os.fspath(path)


@pytest.fixture
def pair() -> Iterator[tuple[FakeAPIServer, FakeAPIServer]]:
    """Two started servers, each with a ConfigMap naming it in its own namespace."""
    first, second = FakeAPIServer().start(), FakeAPIServer().start()
    try:
        for server, name in ((first, "first"), (second, "second")):
            server.create(NAMESPACES, {"metadata": {"name": f"{name}-ns"}})
            server.create(CONFIGMAPS, cm(f"in-{name}", None, f"{name}-ns"))
        yield first, second
    finally:
        first.stop()
        second.stop()


def test_with_several_kubeconfig_files_the_first_current_context_wins_as_in_kubectl(
    pair: tuple[FakeAPIServer, FakeAPIServer], tmp_path: Path,
) -> None:
    first, second = pair
    files = [
        write(tmp_path / "none", {**named(first, "spare", "first-ns"), "current-context": ""}),
        write(tmp_path / "a", named(first, "a", "first-ns")),
        write(tmp_path / "b", named(second, "b", "second-ns")),
    ]
    env = {"KUBECONFIG": os.pathsep.join(["", *files])}
    result = kinformer("watch", "cm", "--once", env=env)
    assert result.returncode == 0, result.stderr
    assert [row.split()[0] for row in result.stdout.splitlines()[1:]] == ["in-first"]
    # --all-contexts: every context, in the namespace of that same current context
    result = kinformer("watch", "cm", "--once", "--all-contexts", env=env)
    assert result.returncode == 0, result.stderr
    assert [row.split()[:2] for row in result.stdout.splitlines()[1:]] == [
        ["spare", "in-first"], ["a", "in-first"]]


def plugin(tmp_path: Path, name: str, body: str) -> str:
    """An executable shell script ``name`` in ``tmp_path`` running ``body``: a credential plugin."""
    script = tmp_path / name
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return os.fspath(script)


def with_plugin(document: dict[str, Any], command: str) -> dict[str, Any]:
    """``document`` whose user gets its credentials from the exec plugin ``command``."""
    user = document["users"][0]
    user["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": command}}
    return document


def merged(*documents: dict[str, Any], current: str) -> dict[str, Any]:
    """One kubeconfig holding every entry of ``documents``."""
    return {"apiVersion": "v1", "kind": "Config", "current-context": current,
            "clusters": [c for d in documents for c in d["clusters"]],
            "users": [u for d in documents for u in d["users"]],
            "contexts": [c for d in documents for c in d["contexts"]]}


@pytest.fixture
def hanging(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A credential plugin that writes its pid to a file and never finishes; killed at teardown
    if it still runs."""
    pid_file = tmp_path / "plugin.pid"
    command = plugin(tmp_path, "hang", f"echo $$ > {pid_file}.part && mv {pid_file}.part {pid_file}\n"
                                       "exec sleep 600")
    yield command, pid_file
    if pid_file.exists() and alive(int(pid_file.read_text())):
        os.kill(int(pid_file.read_text()), 9)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_hanging_credential_plugin_is_killed_at_the_timeout_with_exit_7(
    pair: tuple[FakeAPIServer, FakeAPIServer], hanging: tuple[str, Path], tmp_path: Path,
) -> None:
    command, pid_file = hanging
    path = write(tmp_path / "kubeconfig", with_plugin(named(pair[0], "hung"), command))
    result = kinformer("watch", "cm", "--once", "--timeout", "1", "--kubeconfig", path)
    assert result.returncode == 7, result.stderr
    assert result.stderr == f"error: credential plugin {command} of user hung did not finish within 1s\n"
    assert not alive(int(pid_file.read_text()))


def test_sigterm_ends_a_watch_whose_credential_plugin_hangs(
    pair: tuple[FakeAPIServer, FakeAPIServer], hanging: tuple[str, Path], tmp_path: Path,
) -> None:
    command, pid_file = hanging
    path = write(tmp_path / "kubeconfig", with_plugin(named(pair[0], "hung"), command))
    with ChildProcess([*KINFORMER, "watch", "cm", "--timeout", "600", "--kubeconfig", path],
                      stderr=True, timeout=10) as watch:
        assert wait_for(pid_file.exists, TIMEOUT)  # the plugin runs
        code = watch.stop()
        err = watch.err.rest()
        assert code == 0, err
        assert err == ""
        assert not alive(int(pid_file.read_text()))


def test_all_contexts_lists_the_healthy_contexts_while_one_credential_plugin_hangs(
    pair: tuple[FakeAPIServer, FakeAPIServer], hanging: tuple[str, Path], tmp_path: Path,
) -> None:
    command, pid_file = hanging
    first, second = pair
    path = write(tmp_path / "kubeconfig", merged(
        named(first, "a-ok", "first-ns"), with_plugin(named(second, "b-hung", "first-ns"), command),
        current="a-ok"))
    result = kinformer("watch", "cm", "--all-contexts", "--once", "--timeout", "2", "--kubeconfig", path)
    assert result.returncode == 8, result.stderr
    assert [row.split()[:2] for row in result.stdout.splitlines()] == [["CLUSTER", "NAME"],
                                                                        ["a-ok", "in-first"]]
    assert result.stderr == (f"error: cluster b-hung: credential plugin {command} of user b-hung "
                             "did not finish within 2s\n")
    assert not alive(int(pid_file.read_text()))


@pytest.mark.parametrize("current", ["broken", None], ids=["current-context-broken", "no-current-context"])
def test_all_contexts_goes_on_without_a_usable_current_context(
    pair: tuple[FakeAPIServer, FakeAPIServer], tmp_path: Path, current: str | None,
) -> None:
    first, second = pair
    broken = named(second, "broken", "first-ns")
    broken["users"][0]["user"] = {"tokenFile": os.fspath(tmp_path / "no-such-token")}
    document = merged(broken, named(first, "ok", "first-ns"), current=current or "")
    if current is None:
        del document["current-context"]
    path = write(tmp_path / "kubeconfig", document)
    result = kinformer("watch", "cm", "--all-contexts", "--once", "-A", "--kubeconfig", path)
    assert result.returncode == 8, result.stderr  # some contexts listed, not all
    assert [row.split()[:3] for row in result.stdout.splitlines()[1:]] == [["ok", "first-ns", "in-first"]]
    error, = result.stderr.splitlines()
    assert error.startswith("error: cluster broken: cannot use context broken: ")
    assert "no-such-token" in error


@pytest.mark.parametrize("cluster", [{}, "oops", {"server": "127.0.0.1:6443"}],
                         ids=["no-server", "cluster-a-word", "no-scheme"])
def test_a_cluster_without_a_server_url_is_a_config_error_naming_it(
    pair: tuple[FakeAPIServer, FakeAPIServer], tmp_path: Path, cluster: Any,
) -> None:
    serverless = named(pair[0], "k")
    serverless["clusters"][0]["cluster"] = cluster
    path = write(tmp_path / "kubeconfig", serverless)
    says = ('cluster "k" has no server' if cluster in ({}, "oops") else
            'cluster "k" has no server URL: "127.0.0.1:6443" is not http:// or https://HOST')
    result = kinformer("watch", "cm", "--once", "--kubeconfig", path)
    assert (result.returncode, result.stderr) == (7, f"error: kubeconfig {path}: {says}\n")
    # --all-contexts: one line for that context, the others list
    path = write(tmp_path / "fleet", merged(serverless, named(pair[0], "ok", "first-ns"), current="ok"))
    result = kinformer("watch", "cm", "--all-contexts", "--once", "--kubeconfig", path)
    assert result.returncode == 8, result.stderr
    assert [row.split()[:2] for row in result.stdout.splitlines()[1:]] == [["ok", "in-first"]]
    assert result.stderr == f"error: cluster k: cannot use context k: {says}\n"


def test_a_server_url_with_a_password_never_shows_it_in_an_error_line(
    guarded: FakeAPIServer, pair: tuple[FakeAPIServer, FakeAPIServer], tmp_path: Path,
) -> None:
    password = "url-passw0rd-42"
    refused = named(guarded, "k")  # the server refuses its token: the 401 line names the server
    refused["clusters"][0]["cluster"]["server"] = guarded.url.replace("://", f"://ann:{password}@")
    refused["users"][0]["user"]["token"] = "not-the-token"
    shown = guarded.url.replace("://", "://[redacted]@")
    path = write(tmp_path / "kubeconfig", refused)
    result = kinformer("watch", "cm", "--once", "--kubeconfig", path)
    assert (result.returncode, result.stderr) == (5, f"error: discovery: Unauthorized (401) "
                                                     f"from {shown}: check the credentials in the "
                                                     "kubeconfig\n")
    schemeless = named(pair[0], "f")
    schemeless["clusters"][0]["cluster"]["server"] = f"ftp://ann:{password}@127.0.0.1:21"
    path = write(tmp_path / "fleet", merged(refused, schemeless, named(pair[0], "ok", "first-ns"),
                                            current="ok"))
    result = kinformer("watch", "cm", "--all-contexts", "--once", "--kubeconfig", path)
    assert result.returncode == 8, result.stderr
    assert [row.split()[:2] for row in result.stdout.splitlines()[1:]] == [["ok", "in-first"]]
    assert password not in result.stderr + result.stdout
    assert sorted(result.stderr.splitlines()) == [
        'error: cluster f: cannot use context f: cluster "f" has no server URL: '
        '"ftp://[redacted]@127.0.0.1:21" is not http:// or https://HOST',
        f"error: cluster k: discovery: Unauthorized (401) from {shown}: check the "
        "credentials in the kubeconfig"]


JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJjbGktdXNlciJ9.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"


def exec_credential(token: str) -> str:
    """What a credential plugin prints: an ExecCredential carrying ``token``."""
    return json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                       "status": {"token": token}})


@pytest.fixture
def guarded() -> Iterator[FakeAPIServer]:
    """A started server requiring the token ``the-token``, with one ConfigMap in default."""
    with FakeAPIServer(token="the-token") as server:
        server.create(CONFIGMAPS, cm("guarded", None, "default"))
        yield server


def test_a_credential_plugin_gives_the_token_and_one_that_fails_is_a_config_error(
    guarded: FakeAPIServer, tmp_path: Path,
) -> None:
    good = plugin(tmp_path, "good", f"echo '{exec_credential('the-token')}'")
    path = write(tmp_path / "good-kubeconfig", with_plugin(named(guarded, "k"), good))
    result = kinformer("watch", "cm", "--once", "--kubeconfig", path)
    assert result.returncode == 0, result.stderr
    assert [row.split()[0] for row in result.stdout.splitlines()] == ["NAME", "guarded"]
    cases = {  # plugin body -> what the error says after naming it
        "echo 'not logged in' >&2; exit 1": "failed with exit status 1: not logged in",
        f"echo '{exec_credential('the-token')}'; exit 3": "failed with exit status 3",
        "echo '{\"apiVersion\": \"client.authentication.k8s.io/v1beta1\", \"kind\": \"ExecCredential\", "
        "\"status\": {}}'": "gave neither a token nor a client certificate and key",
        "echo the-token": "answered no ExecCredential of client.authentication.k8s.io/v1beta1",
        # a failing plugin quoting its token: the one it printed, a bearer token, a JWT
        f"echo '{exec_credential('the-token')}'; echo 'the-token: expired' >&2; exit 4":
            "failed with exit status 4: [redacted]: expired",
        "echo 'sent Authorization: Bearer the-token-of-the-plugin' >&2; exit 5":
            "failed with exit status 5: sent Authorization: [redacted]",
        f"echo 'token {JWT} expired' >&2; exit 6": "failed with exit status 6: token [redacted] expired",
    }
    for i, (body, says) in enumerate(cases.items()):
        command = plugin(tmp_path, f"bad-{i}", body)
        path = write(tmp_path / f"kubeconfig-{i}", with_plugin(named(guarded, "k"), command))
        result = kinformer("watch", "cm", "--once", "--kubeconfig", path)
        assert (result.returncode, result.stderr) == (
            7, f"error: kubeconfig {path}: credential plugin {command} of user k {says}\n")
        assert "the-token" not in result.stderr and JWT not in result.stderr


def test_a_context_naming_a_user_the_kubeconfig_lacks_is_a_config_error(
    guarded: FakeAPIServer, pair: tuple[FakeAPIServer, FakeAPIServer], tmp_path: Path,
) -> None:
    lacking = named(guarded, "k")
    lacking["contexts"][0]["context"]["user"] = "nobody"
    path = write(tmp_path / "kubeconfig", lacking)
    result = kinformer("watch", "cm", "--once", "--kubeconfig", path)
    assert (result.returncode, result.stderr) == (
        7, f'error: kubeconfig {path}: context "k" names user "nobody", which the kubeconfig does not have\n')
    # --all-contexts: that context's line, and a failing plugin's, while the others list
    failing = with_plugin(named(guarded, "f"), plugin(tmp_path, "fail", "exit 1"))
    path = write(tmp_path / "fleet", merged(lacking, failing, named(pair[0], "ok", "first-ns"), current="ok"))
    result = kinformer("watch", "cm", "--all-contexts", "--once", "--kubeconfig", path)
    assert result.returncode == 8, result.stderr
    assert [row.split()[:2] for row in result.stdout.splitlines()[1:]] == [["ok", "in-first"]]
    assert sorted(result.stderr.splitlines()) == [
        f"error: cluster f: cannot use context f: credential plugin {tmp_path / 'fail'} of user f "
        "failed with exit status 1",
        'error: cluster k: cannot use context k: context "k" names user "nobody", which the '
        "kubeconfig does not have",
    ]

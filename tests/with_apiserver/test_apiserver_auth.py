"""FakeAPIServer with a bearer token over HTTPS, its kubeconfig, and ``kinformer serve``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import CONFIGMAPS, KINFORMER, ChildProcess, client_with_token
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from kinformer import cli
from kinformer.testing import FakeAPIServer, wait_for

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def secure() -> Iterator[FakeAPIServer]:
    server = FakeAPIServer(token=TOKEN)
    yield server
    server.stop()


@pytest.fixture
def started(secure: FakeAPIServer) -> Iterator[FakeAPIServer]:
    secure.start()
    yield secure
    secure.stop()


def test_the_right_token_over_https_is_served(started: FakeAPIServer) -> None:
    assert started.url.startswith("https://127.0.0.1:")
    with started.api_client() as api_client:
        names = [n.metadata.name for n in k8s.CoreV1Api(api_client).list_namespace().items]
    assert "default" in names


@pytest.mark.parametrize("token", [None, "wrong"])
def test_a_missing_or_wrong_token_is_401_on_every_path(
    started: FakeAPIServer, token: str | None,
) -> None:
    with client_with_token(started, token) as api_client:
        for call in (k8s.VersionApi(api_client).get_code,
                     k8s.CoreV1Api(api_client).list_namespace,
                     k8s.CoreV1Api(api_client).get_api_resources):
            with pytest.raises(k8s.ApiException) as info:
                call()
            assert info.value.status == 401
            assert json.loads(info.value.body)["reason"] == "Unauthorized"


def test_the_token_never_shows_in_repr_or_the_request_log(started: FakeAPIServer) -> None:
    with started.api_client() as api_client:
        k8s.CoreV1Api(api_client).list_namespace()
    assert TOKEN not in repr(started)
    assert TOKEN not in repr(started.requests)


def test_a_written_kubeconfig_loads_with_the_official_loader(
    started: FakeAPIServer, tmp_path: Path,
) -> None:
    path = started.write_kubeconfig(tmp_path / "kubeconfig")
    assert os.stat(path).st_mode & 0o077 == 0
    configuration = k8s.Configuration()
    k8s_config.load_kube_config(config_file=path, client_configuration=configuration)
    with k8s.ApiClient(configuration) as api_client:
        made = k8s.CoreV1Api(api_client).create_namespaced_config_map(
            "default", {"metadata": {"name": "via-kubeconfig"}})
    assert made.metadata.uid


def test_kinformer_serve_writes_a_kubeconfig_and_exits_zero_on_sigterm(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    with ChildProcess([*KINFORMER, "serve", "--kubeconfig", str(kubeconfig)], stderr=True,
                      timeout=10, line_timeout=30) as serving:
        assert "kubeconfig=" in serving.out.next()
        assert wait_for(kubeconfig.exists, timeout=10)
        configuration = k8s.Configuration()
        k8s_config.load_kube_config(config_file=str(kubeconfig),
                                    client_configuration=configuration)
        with k8s.ApiClient(configuration) as api_client:
            version = k8s.VersionApi(api_client).get_code()
        assert version.major == "1"
        assert serving.stop(signal.SIGTERM) == 0


def test_kinformer_without_a_subcommand_prints_help_and_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main([]) == 2
    assert "serve" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_creates_and_reads_with_the_written_kubeconfig(
    started: FakeAPIServer, tmp_path: Path,
) -> None:
    env = dict(os.environ, KUBECONFIG=started.write_kubeconfig(tmp_path / "kubeconfig"))

    def kubectl(*args: str) -> str:
        result = subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True,
                                timeout=30)
        assert result.returncode == 0, result.stderr
        return result.stdout

    kubectl("create", "configmap", "from-kubectl", "--from-literal=a=b")  # a protobuf body
    made = json.loads(kubectl("get", "configmap", "from-kubectl", "-o", "json"))
    assert made["data"] == {"a": "b"}
    assert started.get(CONFIGMAPS, "default", "from-kubectl")["metadata"]["uid"] == \
        made["metadata"]["uid"]
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n"
                        "data:\n  a: '1'\n")
    kubectl("apply", "-f", str(manifest))  # fetches /openapi/v3, then creates
    manifest.write_text(manifest.read_text().replace("a: '1'", "a: '2'"))
    kubectl("apply", "-f", str(manifest))  # a strategic merge patch
    assert started.get(CONFIGMAPS, "default", "applied")["data"] == {"a": "2"}

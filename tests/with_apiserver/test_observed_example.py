"""docs/examples/observed_controller.py end to end over FakeAPIServer: ConfigMaps get their
checksum, and the probes and metrics the documentation promises are served over HTTP."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from typing import Any

from helpers import TIMEOUT, client_threads, cm_manifest, load_example, running
from kubernetes import client as k8s

from kinformer import ProbeServer
from kinformer.errors import LifecycleError
from kinformer.testing import wait_for

example = load_example("observed_controller")
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy


def get(url: str) -> tuple[int, str]:
    try:
        with _opener.open(url, timeout=TIMEOUT) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        with err:
            return err.code, err.read().decode()


def annotation(core: k8s.CoreV1Api, name: str) -> str | None:
    annotations = core.read_namespaced_config_map(name, "default").metadata.annotations or {}
    value: str | None = annotations.get(example.CHECKSUM)
    return value


def listening(probes: ProbeServer) -> bool:
    try:
        return probes.port > 0
    except LifecycleError:
        return False


def test_the_controller_stamps_checksums_and_serves_probes_and_metrics(
    prometheus: Any, api_client: Any
) -> None:
    core = k8s.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", cm_manifest("early", {"a": "1"}))
    probes = ProbeServer()
    run = lambda stop: example.run_checksums(api_client, "default", probes, stop)  # noqa: E731
    with running(run, threading.Event()):
        assert wait_for(lambda: listening(probes), TIMEOUT)
        assert wait_for(lambda: get(probes.url + "/readyz") == (200, "ok"), TIMEOUT)
        assert get(probes.url + "/readyz?verbose") == (200, "[+]informers ok\nreadyz check passed\n")
        assert get(probes.url + "/healthz") == (200, "ok")
        assert wait_for(lambda: annotation(core, "early") is not None, TIMEOUT)

        core.create_namespaced_config_map("default", cm_manifest("late", {"b": "2"}))
        assert wait_for(lambda: annotation(core, "late") is not None, TIMEOUT)
        late = core.read_namespaced_config_map("late", "default")
        assert annotation(core, "late") == example.checksum({"data": late.data})

        status, text = get(probes.url + "/metrics")
        assert status == 200
        lines = text.splitlines()
        assert 'kinformer_informer_synced{resource="v1/configmaps"} 1.0' in lines
        assert 'kinformer_informer_objects{resource="v1/configmaps"} 2.0' in lines
        assert 'kinformer_reflector_lists_total{resource="v1/configmaps"} 1.0' in lines
        adds = [line for line in lines if line.startswith('workqueue_adds_total{name="configmap-checksums"}')]
        assert adds and float(adds[0].split()[-1]) >= 2
    assert client_threads() == []

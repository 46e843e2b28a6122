"""docs/managers.md's InformerManager loop, run as written over FakeAPIServer: a discovery pass
that cannot read the group lists is logged and skipped, and the informers keep running."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import crd, create_cm, name_of
from kubernetes import client as k8s

from kinformer.gvr import GroupVersionResource
from kinformer.handlers import FilteringResourceEventHandler
from kinformer.testing import FakeAPIServer, Recorder, wait_for

MANAGERS = Path(__file__).resolve().parents[2] / "docs" / "managers.md"
PERIOD = "stop.wait(30)"
TIMEOUT = 5.0


def loop_example() -> str:
    section = MANAGERS.read_text(encoding="utf-8").split("## InformerManager (fleet)", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None
    code = match.group(1)
    assert PERIOD in code
    return code.replace(PERIOD, "stop.wait(0.05)")  # the period shortened, nothing else changed


def failed_passes(caplog: pytest.LogCaptureFixture) -> int:
    return sum("discovery failed, trying again next period" in r.getMessage() for r in caplog.records)


def test_the_loop_example_survives_a_discovery_pass_that_fails(
    apiserver: FakeAPIServer,
    api_client: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    apiserver.fail_discovery(1, 503, path="/apis")  # the first pass cannot read the group list
    create_cm(api_client, "before")
    recorder, stop = Recorder(name_of), threading.Event()
    # the example watches every type served; the test follows its two ConfigMaps
    handler = FilteringResourceEventHandler(lambda o: name_of(o) in ("before", "after"), recorder)
    raised: list[BaseException] = []

    def run() -> None:
        try:
            exec(compile(loop_example(), str(MANAGERS), "exec"),
                 {"__name__": "example", "api_client": api_client, "stop": stop, "handler": handler})
        except BaseException as exc:  # what left the with-block, for the test to see
            raised.append(exc)

    example = threading.Thread(target=run, name="test-managers-example")
    example.start()
    try:
        # the first pass failed; the second found configmaps and started their informer
        assert recorder.next() == ("add", "before", True)
        apiserver.fail_discovery(1, 503, path="/apis")  # a later pass fails too
        assert wait_for(lambda: failed_passes(caplog) == 2, TIMEOUT)
        create_cm(api_client, "after")  # the same informer, still watching
        assert recorder.next() == ("add", "after", False)
    finally:
        stop.set()
        example.join(30)
    assert not example.is_alive()
    assert raised == []
    assert "discovery failed, trying again next period" in caplog.text


def test_the_loop_example_stops_a_type_that_left_while_metrics_discovery_fails(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    """metrics-server down, its group version answering 503 at every pass: the loop passed
    ``found.complete`` (False), so a CRD deleted meanwhile kept its informer relisting 404s."""
    widgets = GroupVersionResource("example.com", "v1", "widgets")
    extensions = k8s.ApiextensionsV1Api(api_client)
    pod_metrics = GroupVersionResource("metrics.k8s.io", "v1beta1", "pods")
    extensions.create_custom_resource_definition(crd(pod_metrics))
    apiserver.fail_discovery(10**6, 503, path="/apis/metrics.k8s.io/v1beta1")
    extensions.create_custom_resource_definition(crd(widgets))
    stop = threading.Event()
    scope: dict[str, Any] = {"__name__": "example", "api_client": api_client, "stop": stop,
                             "handler": FilteringResourceEventHandler(lambda o: False, Recorder(name_of))}
    code = compile(loop_example(), str(MANAGERS), "exec")
    example = threading.Thread(target=exec, args=(code, scope), name="test-managers-example")
    example.start()
    try:
        assert wait_for(lambda: "manager" in scope, TIMEOUT)
        assert wait_for(lambda: widgets in scope["manager"].get_all_resources(), TIMEOUT)
        assert wait_for(lambda: scope["manager"].is_informer_synced(widgets), TIMEOUT)
        extensions.delete_custom_resource_definition(widgets.group_resource)
        assert wait_for(lambda: widgets not in scope["manager"].get_all_resources(), TIMEOUT)
        assert not scope["manager"].is_informer_synced(widgets)  # its informer was stopped
    finally:
        stop.set()
        example.join(30)
    assert not example.is_alive()

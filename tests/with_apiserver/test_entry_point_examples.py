"""The ``::`` examples of kinformer's entry points, run against a FakeAPIServer.

Each example names what it assumes (``api_client``, ``stop``, ``ctx`` ...); the test provides
exactly those, runs the block as it is written in the docstring and checks what it made.
"""

from __future__ import annotations

import inspect
import os
import re
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from helpers import CONFIGMAPS, cm, crd

import kinformer
from kinformer import Context, GroupVersionResource
from kinformer.testing import FakeAPIServer, pytest_plugin


def example(obj: Any) -> str:
    """The code block after the ``::`` in ``obj``'s docstring, dedented."""
    doc = inspect.getdoc(obj)
    assert doc is not None
    match = re.search(r"::\n\n((?:(?: {4}.*)?\n)+)", doc + "\n")
    assert match is not None, f"{obj!r} has no example block"
    return textwrap.dedent(match.group(1))


def run(obj: Any, **names: Any) -> dict[str, Any]:
    """Run ``obj``'s example with every public kinformer name, ``threading``, ``kubernetes`` and
    ``names`` in scope; returns the namespace it ran in."""
    scope: dict[str, Any] = {name: getattr(kinformer, name) for name in kinformer.__all__}
    scope.update(threading=threading, kubernetes=kubernetes, **names)
    exec(compile(example(obj), f"<example of {obj!r}>", "exec"), scope)
    return scope


@pytest.fixture
def seeded(apiserver: FakeAPIServer) -> FakeAPIServer:
    apiserver.create(CONFIGMAPS, cm("web", None, "default", app="web"))
    apiserver.create(CONFIGMAPS, cm("db", None, "default", app="db"))
    return apiserver


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def test_the_informer_example(seeded: FakeAPIServer, api_client: Any) -> None:
    scope = run(kinformer.SharedIndexInformer, client=api_client, gvr=CONFIGMAPS)
    assert not scope["thread"].is_alive()
    assert sorted(scope["informer"].get_indexer().list_keys()) == ["default/db", "default/web"]


def test_the_list_watch_example(
    seeded: FakeAPIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the official client reads $KUBECONFIG when imported; point its default at the server's
    from kubernetes.config import kube_config

    path = seeded.write_kubeconfig(tmp_path / "kubeconfig")
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", path)
    scope = run(kinformer.ListWatch.for_resource)
    try:
        listed = scope["lw"].list(kinformer.ListOptions())
        assert sorted(o["metadata"]["name"] for o in listed.items) == ["db", "web"]
    finally:
        scope["api"].close()


def test_the_factory_example(seeded: FakeAPIServer, api_client: Any, stop: threading.Event) -> None:
    scope = run(kinformer.DynamicSharedInformerFactory, api_client=api_client, stop=stop)
    assert [o["metadata"]["name"] for o in scope["web"]] == ["web"]


def test_the_informer_manager_example(
    seeded: FakeAPIServer, api_client: Any, stop: threading.Event,
) -> None:
    scope = run(kinformer.InformerManager, api_client=api_client, stop=stop,
                handler=kinformer.ResourceEventHandlerFuncs())
    assert [o["metadata"]["name"] for o in scope["web"]] == ["web"]


def test_the_controller_example(seeded: FakeAPIServer, api_client: Any) -> None:
    reconciled = threading.Event()

    class Reconciler:
        def reconcile(self, key: str) -> None:
            if key == "default/web":
                reconciled.set()

    informer = kinformer.SharedIndexInformer(kinformer.ListWatch.for_resource(api_client, CONFIGMAPS))
    ctx = Context("example")
    informer_thread = threading.Thread(target=informer.run, args=(ctx,), name="test-informer")
    informer_thread.start()
    # the example blocks in controller.run(ctx): cancel once a key went through the reconciler
    canceller = threading.Thread(target=lambda: reconciled.wait(10) and ctx.cancel(), name="test-cancel")
    canceller.start()
    try:
        run(kinformer.Controller, informer=informer, reconciler=Reconciler(), ctx=ctx)
        assert reconciled.is_set()
    finally:
        ctx.cancel()
        canceller.join(10)
        informer_thread.join(10)


def test_the_discovering_factory_and_controller_manager_examples(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    apiserver.create(GroupVersionResource("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
                     crd(GroupVersionResource("example.com", "v1", "widgets")))
    started = threading.Event()

    def new_widget_controller(ctx: Context) -> Callable[[Context], None]:
        def run_controller(ctx: Context) -> None:
            started.set()
            ctx.wait()
        return run_controller

    ctx = Context("example")
    canceller = threading.Thread(target=lambda: started.wait(20) and ctx.cancel(), name="test-cancel")
    canceller.start()
    try:
        # the first builds the ddsif and starts a manager of the controllers given; the second
        # starts one for widgets on the ddsif the first made
        controllers = {"noop": kinformer.ManagedController(set(), new_widget_controller)}
        scope = run(kinformer.DiscoveringDynamicSharedInformerFactory, api_client=api_client,
                    ctx=ctx, controllers=controllers)
        assert started.is_set()
        started.clear()
        second = Context("second")
        canceller2 = threading.Thread(target=lambda: started.wait(20) and second.cancel(),
                                      name="test-cancel-2")
        canceller2.start()
        ddsif = kinformer.DiscoveringDynamicSharedInformerFactory(api_client)
        ddsif.start(second)
        try:
            run(kinformer.ControllerManager, ddsif=ddsif, new_widget_controller=new_widget_controller,
                ctx=second)
            assert started.is_set()  # the widgets controller ran once widgets were synced
        finally:
            second.cancel()
            canceller2.join(10)
            ddsif.stop()
        scope["ddsif"].stop()
    finally:
        ctx.cancel()
        canceller.join(10)


def test_the_fake_api_server_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    from kinformer.testing import apiserver as module

    scope = run(module, FakeAPIServer=FakeAPIServer)
    assert os.path.exists(tmp_path / "kubeconfig")
    scope["api"].api_client.close()


def test_the_pytest_plugin_example(apiserver: FakeAPIServer, api_client: Any) -> None:
    scope = run(pytest_plugin)
    scope["test_the_informer_sees_a_configmap"](apiserver, api_client, "default")
    assert [o["metadata"]["name"] for o in apiserver.list_objects(CONFIGMAPS, "default")] == ["a"]


def test_the_multi_cluster_examples(
    kube_fleet: dict[str, FakeAPIServer], tmp_path: Path, stop: threading.Event,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, server in kube_fleet.items():
        server.create(CONFIGMAPS, cm("web", None, "default", app=name))
    east, west = kube_fleet["member-1"].api_client(), kube_fleet["member-2"].api_client()
    try:
        scope = run(kinformer.StaticClusterProvider, east=east, west=west, stop=stop)
        assert scope["web"]["metadata"]["labels"] == {"app": "member-1"}
    finally:
        east.close()
        west.close()
    path = kube_fleet["member-3"].write_kubeconfig(tmp_path / "kubeconfig")
    run(kinformer.MultiClusterInformerFactory, kubeconfig=path, stop=stop)
    printed = capsys.readouterr().out.splitlines()  # the handler's line may come late, or not
    assert printed.count("{'kinformer': 1}") == 1
    assert set(printed) <= {"{'kinformer': 1}", "kinformer web"}

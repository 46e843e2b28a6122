"""The pytest plugin installed with kinformer: a real Kubernetes API server for your tests.

pytest loads it through the ``pytest11`` entry point, so installing kinformer is all a project
needs. Its fixtures:

``kube_apiserver`` (session scope)
    A started :class:`~kinformer.testing.FakeAPIServer` on loopback, shared by the session and
    stopped at its end. It starts when a test first asks for it: a run whose tests use none of
    these fixtures starts nothing.
``kube_client``
    A ``kubernetes.client.ApiClient`` for ``kube_apiserver``, made for each test and closed after
    it.
``kube_namespace``
    The name of a namespace made for this test alone; after the test it is deleted with
    everything in it.
``kube_fleet``
    The member clusters of a fleet: three started servers in a dict, ``{"member-1": server,
    "member-2": server, "member-3": server}``, made for each test and stopped after it. A fleet
    test takes members down, brings them back and turns their fault switches, none of which
    may reach the next test; three empty servers start in milliseconds.

A test of a controller then reads::

    from kinformer import GroupVersionResource, ListWatch, SharedIndexInformer

    def test_the_informer_sees_a_configmap(kube_apiserver, kube_client, kube_namespace):
        configmaps = GroupVersionResource("", "v1", "configmaps")
        kube_apiserver.create(configmaps, {"metadata": {"name": "a", "namespace": kube_namespace}})
        lw = ListWatch.for_resource(kube_client, configmaps, namespace=kube_namespace)
        ...

The server's threads are named ``kinformer-apiserver-*``: a suite that fails tests leaving
``kinformer-*`` threads behind leaves those out, as the session's server outlives the test that
started it.
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kinformer.testing.apiserver import FakeAPIServer

_namespaces = itertools.count(1)
_NAME_MAX = 63  # a namespace name is a DNS label
FLEET_SIZE = 3  # member clusters in kube_fleet: enough for one to fail while two go on


@pytest.fixture(scope="session")
def kube_apiserver() -> Iterator[FakeAPIServer]:
    """A started FakeAPIServer for the whole session, stopped at its end."""
    # imported here: a run that never asks for the server does not pay for importing it
    from kinformer.testing.apiserver import FakeAPIServer

    server = FakeAPIServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def kube_client(kube_apiserver: FakeAPIServer) -> Iterator[Any]:
    """A ``kubernetes.client.ApiClient`` for ``kube_apiserver``, closed after the test."""
    client = kube_apiserver.api_client()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def kube_namespace(kube_apiserver: FakeAPIServer, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for this test, named after it; deleted with its objects afterwards."""
    from kinformer import errors
    from kinformer.gvr import GroupVersionResource

    namespaces = GroupVersionResource("", "v1", "namespaces")
    name = namespace_name(request.node.name, next(_namespaces))
    kube_apiserver.create(namespaces, {"metadata": {"name": name}})
    try:
        yield name
    finally:
        with contextlib.suppress(errors.NotFoundError):  # the test deleted it itself
            kube_apiserver.delete(namespaces, None, name)


@pytest.fixture
def kube_fleet() -> Iterator[dict[str, FakeAPIServer]]:
    """Three started FakeAPIServers by member name, ``member-1`` to ``member-3``; each is
    stopped after the test (every connection closed, every thread joined)."""
    from kinformer.testing.apiserver import FakeAPIServer

    fleet: dict[str, FakeAPIServer] = {}
    try:
        for number in range(1, FLEET_SIZE + 1):
            fleet[f"member-{number}"] = FakeAPIServer().start()
        yield fleet
    finally:
        for server in fleet.values():
            server.stop()


def namespace_name(test_name: str, number: int) -> str:
    """``test-<n>-<the test's name as a DNS label>``, at most 63 characters."""
    prefix = f"test-{number}-"
    slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower().removeprefix("test_")).strip("-")
    return (prefix + slug)[:_NAME_MAX].rstrip("-")

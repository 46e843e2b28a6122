"""Fixtures for tests that talk to a FakeAPIServer through the official client over HTTP."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import helpers
import pytest

from kinformer import Context
from kinformer.testing import FakeAPIServer

BOOKMARK_INTERVAL = 0.2  # seconds; short so bookmark tests finish quickly


@pytest.fixture
def apiserver() -> Iterator[FakeAPIServer]:
    """A started FakeAPIServer with a short bookmark interval, stopped after the test."""
    server = FakeAPIServer(bookmark_interval=BOOKMARK_INTERVAL, future_rv_wait=0.3)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def api_client(apiserver: FakeAPIServer) -> Iterator[Any]:
    """A ``kubernetes.client.ApiClient`` for the ``apiserver`` fixture, closed after the test."""
    client = apiserver.api_client()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def raw(api_client: Any) -> Callable[..., tuple[int, Any]]:
    """``raw(method, path, body=None, content_type=..., query=None) -> (status, decoded body)``
    through the client's own request machinery (:func:`helpers.request`)."""
    return functools.partial(helpers.request, api_client)


@pytest.fixture
def ctx() -> Iterator[Context]:
    """A root Context named ``test``, cancelled after the test."""
    ctx = Context("test")
    yield ctx
    ctx.cancel()


@pytest.fixture
def logical_clusters_server() -> Iterator[FakeAPIServer]:
    """A FakeAPIServer serving logical clusters (``/clusters/<name>``), bookmarks every 0.2 s."""
    with FakeAPIServer(logical_clusters=True, bookmark_interval=0.2) as started:
        yield started


@pytest.fixture
def client_of(logical_clusters_server: FakeAPIServer) -> Iterator[Callable[[str | None], Any]]:
    """``client_of(cluster)``: an official-client ApiClient for one logical cluster of
    ``logical_clusters_server`` (None: the unprefixed URL), closed after the test."""
    made: list[Any] = []

    def make(cluster: str | None) -> Any:
        made.append(logical_clusters_server.api_client(cluster))
        return made[-1]

    yield make
    for api_client in made:
        api_client.close()


@pytest.fixture
def clients(kube_fleet: dict[str, FakeAPIServer]) -> Iterator[dict[str, Any]]:
    """An official ``ApiClient`` for each member of ``kube_fleet``, by name, closed after the test."""
    made = {name: server.api_client() for name, server in kube_fleet.items()}
    yield made
    for api_client in made.values():
        api_client.close()

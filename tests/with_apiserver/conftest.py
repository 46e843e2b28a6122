"""Fixtures for tests that talk to a FakeAPIServer through the official client over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

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
def raw(api_client: Any) -> Any:
    """``raw(method, path, body=None, content_type=...) -> (status, decoded body)`` through the
    client's own request machinery, for requests its typed APIs cannot express."""
    import json

    def request(
        method: str, path: str, body: Any = None, content_type: str = "application/json",
        query: list[tuple[str, str]] | None = None,
    ) -> tuple[int, Any]:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        params = api_client.param_serialize(method, path, query_params=query or [],
                                            header_params=headers, body=body)
        response = api_client.call_api(*params)
        data = response.read()
        try:
            return response.status, json.loads(data)
        except ValueError:
            return response.status, data

    return request

"""docs/examples/asyncio_app.py (docs/asyncio.md) over FakeAPIServer: an asyncio service answers
requests from an informer's lister and follows its events on the loop, then stops cleanly."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from helpers import TIMEOUT, cm, load_example

from kinformer.testing import FakeAPIServer

example = load_example("asyncio_app")


async def eventually(condition: Any) -> None:
    """Wait on the loop until ``condition()`` holds (at most TIMEOUT seconds)."""
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.01)
    await asyncio.wait_for(poll(), TIMEOUT)


def test_the_service_answers_from_the_cache_and_follows_the_changes(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    apiserver.create(example.CONFIGMAPS, cm("web", None, "default", app="web"))

    async def main() -> None:
        service = example.ConfigMapService(api_client)
        stop = asyncio.Event()
        running = asyncio.create_task(service.run(stop))
        endpoint = await asyncio.start_server(service.serve, "127.0.0.1", 0)
        port = endpoint.sockets[0].getsockname()[1]
        try:
            await asyncio.wait_for(service.followed.wait(), TIMEOUT)
            assert await example.get(port, "/configmaps") == ["web"]
            apiserver.create(example.CONFIGMAPS, cm("db", None, "default"))
            apiserver.update(example.CONFIGMAPS, cm("db", None, "default", data={"k": "v"}))
            apiserver.delete(example.CONFIGMAPS, "default", "web")
            await eventually(lambda: service.changes == {"web": 2, "db": 2})
            assert await example.get(port, "/configmaps") == ["db"]
            assert await example.get(port, "/configmaps?app=web") == []
        finally:
            endpoint.close()
            await endpoint.wait_closed()
            stop.set()
            await asyncio.wait_for(running, TIMEOUT)

    asyncio.run(main())
    assert [t.name for t in threading.enumerate() if t.name == "configmap-informer"] == []


def test_the_example_runs_as_a_script() -> None:
    assert asyncio.run(example.main()) == 0

"""An asyncio service with an informer's cache: requests read the lister, a task follows events.

:class:`ConfigMapService` is what a FastAPI or aiohttp application would hold. ``run`` starts a
:class:`~kinformer.SharedIndexInformer` of ConfigMaps on a thread of its own, awaits its first
list with :func:`kinformer.aio.wait_for_sync` (the loop keeps serving meanwhile), and then
consumes :func:`kinformer.aio.events` on the loop, keeping a count of changes per ConfigMap.
A request handler (here a bare HTTP endpoint on ``asyncio.start_server``, ``GET /configmaps``)
reads the lister directly: a read never waits for the network, so it is fine on the loop.

Run it as it is to see it against an embedded FakeAPIServer::

    python docs/examples/asyncio_app.py
"""

from __future__ import annotations

import asyncio
import collections
import json
import sys
import threading
from typing import Any

from kinformer import (Context, GenericLister, GroupVersionResource, ListWatch, SharedIndexInformer,
                       aio)
from kinformer.testing import FakeAPIServer

CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")


class ConfigMapService:
    """The cache of one namespace's ConfigMaps and what the service learned from its events.

    ``changes`` counts the notifications per ConfigMap name; ``synced`` is set once the cache
    holds the first list; ``followed`` once the event task is reading.
    """

    def __init__(self, api_client: Any, namespace: str = "default") -> None:
        self.informer = SharedIndexInformer(ListWatch.for_resource(api_client, CONFIGMAPS, namespace))
        self.lister = GenericLister(self.informer.get_indexer(), CONFIGMAPS)
        self.changes: collections.Counter[str] = collections.Counter()
        self.synced = asyncio.Event()
        self.followed = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        """Run the informer on its thread until ``stop`` is set; return once it has ended."""
        ctx = Context("configmaps")
        thread = threading.Thread(target=self.informer.run, args=(ctx,), name="configmap-informer")
        thread.start()
        try:
            if not await aio.wait_for_sync(self.informer, timeout=30):
                raise RuntimeError(f"cache did not sync: {self.informer.last_error()}")
            self.synced.set()
            async with aio.events(self.informer) as stream:
                follow = asyncio.create_task(self._follow(stream))
                await stop.wait()
            await follow  # leaving the block closed the stream, which ended its iteration
        finally:
            ctx.cancel()
            await asyncio.to_thread(thread.join)  # run() returns once its threads are joined

    async def _follow(self, stream: aio.EventStream) -> None:
        self.followed.set()
        async for event in stream:
            self.changes[event.object["metadata"]["name"]] += 1

    def names(self, selector: str | None = None) -> list[str]:
        """The cached ConfigMaps' names, sorted: a read of the cache, no request."""
        return sorted(cm["metadata"]["name"] for cm in self.lister.list(selector))

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """``GET /configmaps[?labelSelector]`` answered from the cache as a JSON list of names."""
        request_line = (await reader.readline()).decode().split()
        path = request_line[1] if len(request_line) > 1 else "/"
        route, _, selector = path.partition("?")
        status, body = ("200 OK", self.names(selector or None)) if route == "/configmaps" else (
            "404 Not Found", [])
        data = json.dumps(body).encode()
        writer.write(f"HTTP/1.0 {status}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        await writer.drain()
        writer.close()
        await writer.wait_closed()


async def get(port: int, path: str) -> Any:
    """A client for the example: GET ``path`` from the service and decode the JSON body."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.0\r\n\r\n".encode())
    response = await reader.read()
    writer.close()
    await writer.wait_closed()
    return json.loads(response.split(b"\r\n\r\n", 1)[1])


async def main() -> int:
    with FakeAPIServer() as server:
        server.create(CONFIGMAPS, {"metadata": {"name": "web", "namespace": "default",
                                                "labels": {"app": "web"}}})
        api_client = server.api_client()
        service = ConfigMapService(api_client)
        stop = asyncio.Event()
        running = asyncio.create_task(service.run(stop))
        endpoint = await asyncio.start_server(service.serve, "127.0.0.1", 0)
        port = endpoint.sockets[0].getsockname()[1]
        try:
            await service.synced.wait()
            await service.followed.wait()
            server.create(CONFIGMAPS, {"metadata": {"name": "db", "namespace": "default"}})
            while service.changes["db"] == 0:  # the event reaches the loop
                await asyncio.sleep(0.05)
            print("GET /configmaps:", await get(port, "/configmaps"))
            print("GET /configmaps?app=web:", await get(port, "/configmaps?app=web"))
            print("changes seen:", dict(service.changes))
            return 0
        finally:
            endpoint.close()
            await endpoint.wait_closed()
            stop.set()
            await running
            api_client.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

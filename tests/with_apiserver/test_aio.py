"""kinformer.aio over FakeAPIServer: awaiting sync without blocking the loop, and an informer's
notifications as an ordered, bounded async iterator whose back-pressure stalls only its own
handler, ended by aclose. Each test runs its coroutine with asyncio.run (no plugin needed)."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from helpers import CONFIGMAPS, TIMEOUT, cm

from kinformer import ConfigurationError, Context, ListWatch, SharedIndexInformer, aio
from kinformer.testing import FakeAPIServer, Recorder, wait_for


@pytest.fixture
def start_informer(api_client: Any) -> Iterator[Callable[[], SharedIndexInformer]]:
    """Starts an informer of ConfigMaps in ``default`` when called (after the test set the server
    up: a list it must not see begins at once); stopped and joined after the test."""
    started: list[tuple[Context, threading.Thread]] = []

    def start() -> SharedIndexInformer:
        informer = SharedIndexInformer(ListWatch.for_resource(api_client, CONFIGMAPS, "default"))
        ctx = Context("test")
        thread = threading.Thread(target=informer.run, args=(ctx,), name="test-informer")
        thread.start()
        started.append((ctx, thread))
        return informer

    yield start
    for ctx, thread in started:
        ctx.cancel()
        thread.join(TIMEOUT)


@pytest.fixture
def informer(start_informer: Callable[[], SharedIndexInformer]) -> SharedIndexInformer:
    """A running informer of ConfigMaps in ``default``; stopped and joined after the test."""
    return start_informer()


def name(event: aio.Event) -> tuple[str, str]:
    return event.type, event.object["metadata"]["name"]


async def next_events(stream: aio.EventStream, count: int) -> list[aio.Event]:
    return [await asyncio.wait_for(stream.__anext__(), TIMEOUT) for _ in range(count)]


def test_wait_for_sync_lets_the_loop_run_while_the_first_list_loads(
    apiserver: FakeAPIServer, start_informer: Callable[[], SharedIndexInformer],
) -> None:
    apiserver.set_delay(0.5, verb="list")
    informer = start_informer()

    async def main() -> tuple[bool, int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticker = asyncio.create_task(tick())
        synced = await aio.wait_for_sync(informer, timeout=TIMEOUT)
        ticker.cancel()
        return synced, ticks

    synced, ticks = asyncio.run(main())
    assert synced
    assert ticks > 5  # the loop kept running other tasks during the half-second list


def test_wait_for_sync_gives_up_at_its_timeout(
    apiserver: FakeAPIServer, start_informer: Callable[[], SharedIndexInformer],
) -> None:
    apiserver.forbid("configmaps", "list")
    informer = start_informer()
    assert asyncio.run(aio.wait_for_sync(informer, timeout=0.3)) is False
    with pytest.raises(ConfigurationError):
        asyncio.run(aio.wait_for_sync(informer, timeout=float("nan")))


def test_events_arrive_in_order_with_their_type_and_object(
    apiserver: FakeAPIServer, informer: SharedIndexInformer,
) -> None:
    apiserver.create(CONFIGMAPS, cm("before", None, "default"))

    async def main() -> list[tuple[str, str]]:
        assert await aio.wait_for_sync(informer, timeout=TIMEOUT)
        async with aio.events(informer) as stream:
            seen = await next_events(stream, 1)  # the cache, replayed to a late handler
            apiserver.create(CONFIGMAPS, cm("a", None, "default"))
            apiserver.update(CONFIGMAPS, cm("a", None, "default", data={"k": "v"}))
            apiserver.create(CONFIGMAPS, cm("b", None, "default"))
            apiserver.delete(CONFIGMAPS, "default", "a")
            seen += await next_events(stream, 4)
            assert seen[2].object["data"] == {"k": "v"}
            return [name(e) for e in seen]

    assert asyncio.run(main()) == [("ADDED", "before"), ("ADDED", "a"), ("MODIFIED", "a"),
                                   ("ADDED", "b"), ("DELETED", "a")]


def test_a_slow_consumer_holds_back_only_its_own_handler(
    apiserver: FakeAPIServer, informer: SharedIndexInformer,
) -> None:
    other = Recorder()
    informer.add_event_handler(other)

    async def main() -> list[tuple[str, str]]:
        assert await aio.wait_for_sync(informer, timeout=TIMEOUT)
        async with aio.events(informer, maxsize=2) as stream:
            for i in range(10):
                apiserver.create(CONFIGMAPS, cm(f"cm-{i}", None, "default"))
            # the other handler and the cache go on while nobody reads the stream
            assert [event[0] for event in other.take(10)] == ["add"] * 10
            assert len(informer.get_indexer().list()) == 10
            assert stream._queue.qsize() <= 2  # bounded: the stream's handler waits for room
            return [name(e) for e in await next_events(stream, 10)]

    assert asyncio.run(main()) == [("ADDED", f"cm-{i}") for i in range(10)]


def test_aclose_ends_the_iteration_and_unregisters_a_handler_waiting_for_room(
    apiserver: FakeAPIServer, informer: SharedIndexInformer,
) -> None:
    async def main() -> list[aio.Event]:
        assert await aio.wait_for_sync(informer, timeout=TIMEOUT)
        before = {t.name for t in threading.enumerate()}
        stream = aio.events(informer, maxsize=1)
        for i in range(3):  # one waits in the stream, the handler's thread waits with the next
            apiserver.create(CONFIGMAPS, cm(f"cm-{i}", None, "default"))
        await next_events(stream, 1)
        delivery = [t for t in threading.enumerate() if t.name not in before]
        assert [t.name.split("-")[1] for t in delivery] == ["handler"]
        consumer = asyncio.create_task(stream.__anext__())
        await stream.aclose()
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(consumer, TIMEOUT)
        delivery[0].join(TIMEOUT)
        assert not delivery[0].is_alive()  # the handler's thread left with its registration
        await stream.aclose()  # idempotent
        return [event async for event in stream]

    assert asyncio.run(main()) == []


def test_an_informer_stops_at_once_with_a_full_stream_nobody_reads(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    informer = SharedIndexInformer(ListWatch.for_resource(api_client, CONFIGMAPS, "default"))
    ctx = Context("test")
    runner = threading.Thread(target=informer.run, args=(ctx,), name="test-informer")
    runner.start()

    async def main() -> aio.EventStream:
        assert await aio.wait_for_sync(informer, timeout=TIMEOUT)
        stream = aio.events(informer, maxsize=1)
        for i in range(3):  # one waits in the stream, the handler's thread waits with the next
            apiserver.create(CONFIGMAPS, cm(f"cm-{i}", None, "default"))
        assert await asyncio.to_thread(wait_for, waiting_for_room, TIMEOUT)
        return stream  # never read, never closed: the loop ends with it

    def waiting_for_room() -> bool:
        """Whether a handler's delivery thread waits for room in a stream (its stack says so)."""
        frames = sys._current_frames()
        for thread in threading.enumerate():
            frame = frames.get(thread.ident or -1) if thread.name.startswith("kinformer-handler") else None
            while frame is not None:
                if frame.f_code.co_name == "_offer":
                    return True
                frame = frame.f_back
        return False

    asyncio.run(main())
    ctx.cancel()
    runner.join(1.0)  # far below the 5 s a stuck handler would be waited for
    assert not runner.is_alive()
    assert not [t.name for t in threading.enumerate() if t.name.startswith("kinformer-handler")]


def test_an_event_handed_over_as_the_stream_closes_is_never_read_after_the_end(
    apiserver: FakeAPIServer, informer: SharedIndexInformer,
) -> None:
    async def main() -> list[list[aio.Event]]:
        assert await aio.wait_for_sync(informer, timeout=TIMEOUT)
        stream = aio.events(informer)
        apiserver.create(CONFIGMAPS, cm("cm-0", None, "default"))
        # the loop is held here: the handler's thread hands the event over, and it waits to be
        # queued on the loop until after the stream closed
        assert wait_for(lambda: stream._waiting == 1, TIMEOUT)
        await stream.aclose()
        await asyncio.sleep(0)  # the loop runs what the handler's thread handed it
        return [[event async for event in stream], [event async for event in stream]]

    assert asyncio.run(main()) == [[], []]

"""A ControllerManager over the discovering factory, run as two replicas under LeaderElectors as
docs/managers.md shows it: only the leader's controller runs, and when the leader stops its
controller is stopped and joined before the other replica's starts."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from helpers import CONFIGMAPS, TIMEOUT, client_threads

from kinformer import (
    Context,
    ControllerManager,
    DiscoveringDynamicSharedInformerFactory,
    LeaderElectionConfig,
    LeaderElector,
    LeaseLock,
    ManagedController,
)
from kinformer.testing import FakeAPIServer, wait_for


def test_only_the_leaders_controller_manager_runs_its_controllers(apiserver: FakeAPIServer) -> None:
    events: queue.Queue[tuple[str, str]] = queue.Queue()  # (replica, "started" or "stopped")

    def replica(name: str, api_client: Any) -> Callable[[Context], None]:
        def create(ctx: Context) -> Callable[[Context], None]:
            def start(run_ctx: Context) -> None:
                events.put((name, "started"))
                run_ctx.wait()
                events.put((name, "stopped"))
            return start

        def lead(ctx: Context) -> None:
            ddsif = DiscoveringDynamicSharedInformerFactory(api_client, lambda gvr: gvr == CONFIGMAPS)
            ddsif.start(ctx)
            try:
                ControllerManager(name, ddsif.informer_source(),
                                  {"audit": ManagedController({CONFIGMAPS}, create)}).start(ctx)
            finally:
                ddsif.stop()

        elector = LeaderElector(LeaderElectionConfig(
            LeaseLock(api_client, "default", "managers", name), on_started_leading=lead,
            lease_duration=2.0, renew_deadline=1.0, retry_period=0.2, release_on_cancel=True))
        return elector.run

    clients = {name: apiserver.api_client() for name in ("a", "b")}
    stops = {name: Context(name) for name in clients}
    threads = {name: threading.Thread(target=replica(name, clients[name]), args=(stops[name],),
                                      name=f"test-replica-{name}") for name in clients}
    for thread in threads.values():
        thread.start()
    try:
        first, what = events.get(timeout=TIMEOUT)
        assert what == "started"
        second = "b" if first == "a" else "a"
        stops[first].cancel()
        assert events.get(timeout=TIMEOUT) == (first, "stopped")
        assert events.get(timeout=TIMEOUT) == (second, "started")
        threads[first].join(TIMEOUT)
        assert not threads[first].is_alive()
    finally:
        for name in clients:
            stops[name].cancel()
            threads[name].join(TIMEOUT)
            clients[name].close()
    assert events.get(timeout=TIMEOUT) == (second, "stopped")
    assert wait_for(lambda: client_threads() == [], TIMEOUT)

"""docs/examples/fleet_controller.py end to end: a hub's ConfigMap copied into every member of
kube_fleet (found through the hub's kubeconfig Secrets), drift repaired, a new member served on
engage, the hub's changes and deletion propagated, a member that left untouched; in-process, as
its own demo, and as a process started with --kubeconfig/--hub-context."""

from __future__ import annotations

import functools
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _fleet import HUB_NAMESPACE, NAMESPACES, SECRETS
from helpers import CONFIGMAPS, EXAMPLES, TIMEOUT, ChildProcess, load_example, running

from kinformer.testing import FakeAPIServer, wait_for

fleet_controller = load_example("fleet_controller")
SOURCE = "fleet-settings"


@pytest.fixture
def hub() -> Iterator[FakeAPIServer]:
    """A hub holding the source ConfigMap in fleet-system, with no member Secret yet."""
    server = FakeAPIServer().start()
    server.create(NAMESPACES, {"metadata": {"name": HUB_NAMESPACE}})
    server.create(CONFIGMAPS, {"metadata": {"name": SOURCE, "namespace": HUB_NAMESPACE},
                               "data": {"logLevel": "info"}})
    try:
        yield server
    finally:
        server.stop()


def join(hub: FakeAPIServer, name: str, member: FakeAPIServer) -> None:
    hub.create(SECRETS, fleet_controller.kubeconfig_secret(name, member.kubeconfig()))


def copies(members: dict[str, FakeAPIServer]) -> dict[str, Any]:
    return {name: fleet_controller.copy_in(server) for name, server in members.items()}


def set_source(hub: FakeAPIServer, data: dict[str, str]) -> None:
    source = hub.get(CONFIGMAPS, HUB_NAMESPACE, SOURCE)
    source["data"] = data
    hub.update(CONFIGMAPS, source)


def test_copies_follow_the_hub_drift_is_repaired_and_a_new_member_gets_its_copy(
    hub: FakeAPIServer, kube_fleet: dict[str, FakeAPIServer], caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="fleet")
    members = dict(kube_fleet)
    for name in ("member-1", "member-2"):
        join(hub, name, members[name])
    hub_client = hub.api_client()
    info = {"logLevel": "info"}
    try:
        with running(functools.partial(fleet_controller.run_fleet_controller, hub_client)):
            assert wait_for(lambda: copies(members) == {"member-1": info, "member-2": info,
                                                         "member-3": None}, TIMEOUT)
            copy = members["member-1"].get(CONFIGMAPS, "default", SOURCE)
            assert copy["metadata"]["labels"] == {"kinformer.io/copied-from-hub": "true"}
            copy["data"] = {"logLevel": "debug"}  # drift: edited by hand
            members["member-1"].update(CONFIGMAPS, copy)
            members["member-2"].delete(CONFIGMAPS, "default", SOURCE)  # drift: deleted by hand
            assert wait_for(lambda: copies(members)["member-1"] == info
                            and copies(members)["member-2"] == info, TIMEOUT)

            join(hub, "member-3", members["member-3"])  # a new member, without a copy
            assert wait_for(lambda: copies(members)["member-3"] == info, TIMEOUT)

            set_source(hub, {"logLevel": "warn"})
            assert wait_for(lambda: set(map(str, copies(members).values())) == {"{'logLevel': 'warn'}"},
                            TIMEOUT)

            hub.delete(SECRETS, HUB_NAMESPACE, "member-3")  # member-3 leaves: no longer kept
            # its handler heard it was disengaged (its client was forgotten before)
            assert wait_for(lambda: "member member-3 left the fleet; its copy is no longer kept"
                            in caplog.messages, TIMEOUT)
            set_source(hub, {"logLevel": "error"})
            assert wait_for(lambda: copies(members)["member-1"] == {"logLevel": "error"}
                            and copies(members)["member-2"] == {"logLevel": "error"}, TIMEOUT)
            assert copies(members)["member-3"] == {"logLevel": "warn"}

            hub.delete(CONFIGMAPS, HUB_NAMESPACE, SOURCE)  # the source goes: so do the copies kept
            assert wait_for(lambda: copies(members)["member-1"] is None
                            and copies(members)["member-2"] is None, TIMEOUT)
            assert copies(members)["member-3"] == {"logLevel": "warn"}
    finally:
        hub_client.close()


def test_a_configmap_that_is_not_a_copy_is_left_alone(
    hub: FakeAPIServer, kube_fleet: dict[str, FakeAPIServer],
) -> None:
    theirs = kube_fleet["member-1"].create(CONFIGMAPS, {
        "metadata": {"name": SOURCE, "namespace": "default"}, "data": {"owner": "someone else"}})
    join(hub, "member-1", kube_fleet["member-1"])
    join(hub, "member-2", kube_fleet["member-2"])
    hub_client = hub.api_client()
    try:
        with running(functools.partial(fleet_controller.run_fleet_controller, hub_client)):
            assert wait_for(lambda: fleet_controller.copy_in(kube_fleet["member-2"]) is not None, TIMEOUT)
            set_source(hub, {"logLevel": "warn"})
            assert wait_for(lambda: fleet_controller.copy_in(kube_fleet["member-2"]) == {"logLevel": "warn"},
                            TIMEOUT)
            assert kube_fleet["member-1"].get(CONFIGMAPS, "default", SOURCE) == theirs
    finally:
        hub_client.close()


def test_the_example_runs_to_its_end() -> None:
    assert fleet_controller.main() == 0


def test_as_a_process_against_a_hub_context(
    hub: FakeAPIServer, kube_fleet: dict[str, FakeAPIServer], tmp_path: Path,
) -> None:
    for name, member in kube_fleet.items():
        join(hub, name, member)
    document = hub.kubeconfig()
    document["contexts"][0]["name"] = "hub"
    document["current-context"] = "somewhere-else"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps(document))
    log = tmp_path / "log"
    with ChildProcess([sys.executable, str(EXAMPLES / "fleet_controller.py"), "--kubeconfig", str(kubeconfig),
                       "--hub-context", "hub"], log=log, timeout=TIMEOUT * 2) as controller:
        assert wait_for(lambda: set(map(str, copies(kube_fleet).values())) == {"{'logLevel': 'info'}"},
                        TIMEOUT * 4), log.read_text()
        assert controller.stop() == 0, log.read_text()


def test_a_member_that_goes_down_and_returns_is_said_once_each_way_without_tracebacks(
    hub: FakeAPIServer, kube_fleet: dict[str, FakeAPIServer], caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue: one member down flooded the example's log with urllib3 retries and tracebacks, and
    its return was never said. Now: at most two WARNING-or-above records name it, none with a
    traceback, none from urllib3, and one INFO says it recovered."""
    caplog.set_level(logging.DEBUG)
    members = {name: kube_fleet[name] for name in ("member-1", "member-2")}
    for name, member in members.items():
        join(hub, name, member)
    hub_client = hub.api_client()
    try:
        with running(functools.partial(fleet_controller.run_fleet_controller, hub_client)):
            info = {"logLevel": "info"}
            assert wait_for(lambda: copies(members) == {"member-1": info, "member-2": info}, TIMEOUT)
            members["member-2"].stop()
            set_source(hub, {"logLevel": "warn"})  # every member is reconciled: member-2 fails
            assert wait_for(lambda: copies({"member-1": members["member-1"]})["member-1"]
                            == {"logLevel": "warn"}, TIMEOUT)
            # the member's own health says it is down: its informer tried while it was (a watch
            # that ended just before the outage may wait a backoff first, spanning a short one)
            assert wait_for(lambda: any("member-2" in r.getMessage() and r.levelno >= logging.WARNING
                                        and r.name == "kinformer.clusters.health"
                                        for r in caplog.records), TIMEOUT)
            failed = len(caplog.records)
            assert wait_for(lambda: len(caplog.records) > failed + 5, TIMEOUT)  # retries go on
            members["member-2"].start()  # on the port it had
            assert wait_for(lambda: copies(members)["member-2"] == {"logLevel": "warn"}, TIMEOUT * 2)
            assert wait_for(lambda: any("member-2" in r.getMessage() and "recovered" in r.getMessage()
                                        and r.levelno == logging.INFO for r in caplog.records), TIMEOUT)
    finally:
        hub_client.close()
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    naming = [r for r in loud if "member-2" in r.getMessage()]
    assert len(naming) <= 2, [r.getMessage() for r in naming]
    assert [r.getMessage() for r in loud if r.exc_info] == []
    assert [r.getMessage() for r in caplog.records if r.name.startswith("urllib3")
            and r.levelno >= logging.WARNING] == []

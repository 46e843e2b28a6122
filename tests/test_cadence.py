"""BookmarkCadence: when a watch's read timeout tightens to the server's bookmark cadence, and
when the proof is dropped again; on a stepped clock, no threads."""

from __future__ import annotations

from typing import Any

import pytest

from kinformer import ConfigurationError
from kinformer.client.cadence import BookmarkCadence

TIGHT = 90.0
PATIENT = 630.0  # a 10-minute watch plus its margin


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def step(self, seconds: float) -> None:
        self.now += seconds


def bookmark(rv: str = "10", initial_end: bool = False) -> tuple[list[str], list[Any]]:
    metadata: dict[str, Any] = {"resourceVersion": rv}
    if initial_end:
        metadata["annotations"] = {"k8s.io/initial-events-end": "true"}
    return ["BOOKMARK"], [{"kind": "ConfigMap", "apiVersion": "v1", "metadata": metadata}]


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_a_bookmark_within_the_cadence_tightens_the_watch_and_every_later_one(clock: Clock) -> None:
    cadence = BookmarkCadence(TIGHT, "configmaps", clock)
    first = cadence.watch(PATIENT)
    assert first.read_timeout == PATIENT and not first.tight and not cadence.proven
    clock.step(61)
    assert first.heard(*bookmark()) == TIGHT
    assert first.tight and cadence.proven
    clock.step(60)
    assert first.heard(*bookmark()) is None  # tight already
    later = cadence.watch(PATIENT)
    assert later.read_timeout == TIGHT and later.tight


def test_changes_alone_prove_nothing(clock: Clock) -> None:
    cadence = BookmarkCadence(TIGHT, "configmaps", clock)
    watch = cadence.watch(PATIENT)
    clock.step(10)
    assert watch.heard(["ADDED", "MODIFIED"], [{}, {}]) is None
    assert not cadence.proven and watch.read_timeout == PATIENT


def test_a_bookmark_after_a_longer_silence_proves_nothing_until_the_next_keeps_the_cadence(
    clock: Clock,
) -> None:
    """A server whose bookmarks come rarely (etcd's progress notifications, the one before a
    watch's end) is not taken for one that keeps kube-apiserver's minute."""
    cadence = BookmarkCadence(TIGHT, "configmaps", clock)
    watch = cadence.watch(PATIENT)
    clock.step(TIGHT + 1)
    assert watch.heard(*bookmark()) is None and not cadence.proven
    clock.step(TIGHT)
    assert watch.heard(*bookmark()) == TIGHT and cadence.proven


def test_the_bookmark_ending_initial_events_proves_nothing(clock: Clock) -> None:
    cadence = BookmarkCadence(TIGHT, "configmaps", clock)
    watch = cadence.watch(PATIENT)
    clock.step(1)
    assert watch.heard(*bookmark(initial_end=True)) is None and not cadence.proven
    types, objects = bookmark(initial_end=True)
    periodic_types, periodic_objects = bookmark("11")
    clock.step(59)
    assert watch.heard(["ADDED", *types, *periodic_types], [{}, *objects, *periodic_objects]) == TIGHT


def test_a_tight_watch_that_heard_nothing_drops_the_proof(clock: Clock) -> None:
    cadence = BookmarkCadence(TIGHT, "configmaps", clock)
    watch = cadence.watch(PATIENT)
    clock.step(60)
    watch.heard(*bookmark())
    watch.silent()
    assert not cadence.proven
    after = cadence.watch(PATIENT)
    assert after.read_timeout == PATIENT and not after.tight


def test_a_patient_watch_that_heard_nothing_leaves_the_proof_alone(clock: Clock) -> None:
    cadence = BookmarkCadence(TIGHT, "configmaps", clock)
    proving = cadence.watch(PATIENT)
    clock.step(60)
    proving.heard(*bookmark())
    short = cadence.watch(30.0)  # waits less than TIGHT anyway: never tightened
    assert short.read_timeout == 30.0 and not short.tight
    clock.step(20)
    assert short.heard(*bookmark()) is None
    short.silent()
    assert cadence.proven


def test_the_tight_timeout_must_be_positive_seconds() -> None:
    for bad in (0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ConfigurationError):
            BookmarkCadence(bad)

"""Suite-wide fixtures: no test may leave a ``kinformer-*`` thread running; a Prometheus registry.

Loading this file puts ``tests/`` on ``sys.path`` (pytest's default "prepend" import mode), so
every test file, here or in ``with_apiserver/``, can ``import helpers``.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Iterator
from typing import Any

import pytest

from kinformer import _threads

pytest.register_assert_rewrite("helpers")  # before any test file imports it

LEAK_GRACE = 3.0  # seconds a stopped component may take to let its threads finish


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    before = set(_threads.kinformer_threads())
    yield
    deadline = time.monotonic() + LEAK_GRACE
    leaked = [t for t in _threads.kinformer_threads() if t not in before]
    for thread in leaked:
        thread.join(max(0.0, deadline - time.monotonic()))
    alive = [t for t in leaked if t.is_alive()]
    assert not alive, f"test leaked kinformer threads: {[t.name for t in alive]}\n{_stacks(alive)}"


def _stacks(threads: list[threading.Thread]) -> str:
    """Where each thread is now: what a leak report needs to be fixed from a CI log alone."""
    frames = sys._current_frames()
    return "\n".join(
        f"--- {t.name}\n" + "".join(traceback.format_stack(frames[t.ident]))
        for t in threads
        if t.ident in frames
    )


@pytest.fixture
def prometheus() -> Iterator[Any]:
    """A fresh ``prometheus_client`` registry filled by a PrometheusMetricsProvider set for the test.

    Skips without the ``prometheus`` extra (CI installs it); the no-op default is back afterwards.
    """
    client = pytest.importorskip("prometheus_client")
    from kinformer import metrics

    registry = client.CollectorRegistry()
    metrics.set_provider(metrics.PrometheusMetricsProvider(registry))
    try:
        yield registry
    finally:
        metrics.set_provider(None)


def _kept(as_json: bool) -> Iterator[bool]:
    from kinformer.cache import packed

    chosen = packed.kept_as_json
    packed._keep_as_json(as_json)
    try:
        yield as_json
    finally:
        packed._keep_as_json(chosen)


@pytest.fixture(params=[True, False], ids=["kept-json", "kept-marshal"])
def kept_as(request: pytest.FixtureRequest) -> Iterator[bool]:
    """Each form a compact cache keeps its bytes in (``kinformer.cache.packed``), in turn, whichever
    this installation chose: True while it keeps JSON, False while it keeps marshal's form."""
    yield from _kept(request.param)


@pytest.fixture
def kept_as_json() -> Iterator[bool]:
    """A compact cache keeping JSON, as it does with orjson installed, whatever this installation chose."""
    yield from _kept(True)

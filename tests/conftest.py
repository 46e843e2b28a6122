"""Suite-wide fixtures: no test may leave a ``kinformer-*`` thread running.

Loading this file puts ``tests/`` on ``sys.path`` (pytest's default "prepend" import mode), so
every test file, here or in ``with_apiserver/``, can ``import helpers``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

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
    alive = [t.name for t in leaked if t.is_alive()]
    assert not alive, f"test leaked kinformer threads: {alive}"

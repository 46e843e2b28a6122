"""How ``kinformer watch --all-contexts`` tells of each cluster's trouble: once per outage.

An outage begins with a cluster's first error, which prints one ``error: cluster NAME: ...``
line on stderr; the errors that follow while it lasts (every retry's, whatever they say) print
nothing more; it ends when the cluster lists again, which prints ``cluster NAME: recovered after
12.3s``. :mod:`~kinformer.cli.watch.contexts` reports to :class:`Outages` what its discovery and
the informer's ``cluster_status()`` show.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO


class Outages:
    """Each cluster's current outage, and the lines that begin and end it on ``err``.

    Not thread-safe: the command's main thread is the one reporter.
    """

    def __init__(self, err: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self._err = err
        self._clock = clock
        self._began: dict[str, float] = {}  # cluster -> when its current outage began

    def failed(self, cluster: str, message: str) -> None:
        """``cluster`` failed with ``message``: one error line if that begins an outage."""
        if cluster in self._began:
            return
        self._began[cluster] = self._clock()
        print(f"error: cluster {cluster}: {message}", file=self._err, flush=True)

    def listed(self, cluster: str) -> None:
        """``cluster`` lists (synced, no error): one recovered line if that ends an outage."""
        began = self._began.pop(cluster, None)
        if began is not None:
            print(f"cluster {cluster}: recovered after {self._clock() - began:.1f}s", file=self._err,
                  flush=True)

    def down(self, cluster: str) -> bool:
        """Whether ``cluster`` is in an outage."""
        return cluster in self._began

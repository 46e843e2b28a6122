"""A reflector's shard: the selector its requests carry, and what a change of it does to a round.

KEP-5866's ``shardSelector`` (:mod:`kinformer.sharding`) as a
:class:`~kinformer.Reflector` carries it. :class:`ShardState` holds the selector of the current
and the coming rounds (the one its ListerWatcher brought, the one to go back to, or one set at
run time), ends the open round when it changes so the reflector relists at once, and says
whether the server sharded the last list or the reflector must filter on the client with the
same hash: :meth:`ShardState.in_shard` for a list, :meth:`ShardState.client_filter` for a watch.
:meth:`ShardSelector.empty() <kinformer.ShardSelector.empty>` owns nothing: the reflector then
sends no request at all (see its ``list_and_watch``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kinformer import sharding
from kinformer.client import listerwatcher

log = logging.getLogger(__name__)


class ShardState:
    """The shard a reflector lists and watches; thread-safe.

    ``base`` is the ListerWatcher's own shard (None: everything), the one :meth:`set` goes
    back to on None. The reflector's run thread opens each round with :meth:`open_round` and
    closes it with :meth:`close_round`; a change of shard from any thread calls the open
    round's ``end_round`` and makes :meth:`take_reshard` true once.
    """

    __slots__ = ("_base", "_end_round", "_lock", "_reshard", "_said_client_side", "_server_side",
                 "_shard", "name")

    def __init__(self, name: str, base: sharding.ShardSelector | None,
                 initial: sharding.ShardSelector | None) -> None:
        self.name = name
        self._base = base
        self._lock = threading.Lock()  # guards the fields below
        self._shard = initial if initial is not None else base
        self._reshard = False  # the shard changed: relist at once with the new one
        self._end_round: Callable[[], object] | None = None  # ends the open round, on a reshard
        self._server_side: bool | None = None  # what the last list said
        self._said_client_side = False

    def selector(self) -> sharding.ShardSelector | None:
        """The shard the reflector lists and watches, or None for everything."""
        with self._lock:
            return self._shard

    def server_side_sharding(self) -> bool | None:
        """Whether the server sharded the last list (True) or the reflector filters (False);
        None before the first list or without a shard selector."""
        with self._lock:
            return self._server_side if self._shard is not None else None

    def set(self, selector: sharding.ShardSelector | None) -> None:
        """Take ``selector`` (None: the base one) from the next round on; a change ends the
        open round, so the reflector relists at once without a backoff step."""
        with self._lock:
            new = selector if selector is not None else self._base
            if new == self._shard:
                return
            self._shard = new
            self._server_side = None
            self._reshard = True
            end_round = self._end_round
        if sharding.is_empty(new):
            log.info("reflector %s: shard is now empty; dropping every object", self.name)
        else:
            log.info("reflector %s: shard is now %s; relisting", self.name, new or "everything")
        if end_round is not None:
            end_round()

    def take_reshard(self) -> bool:
        """Whether the shard changed since the last call (and forget it)."""
        with self._lock:
            reshard, self._reshard = self._reshard, False
            return reshard

    def open_round(self, end_round: Callable[[], object]) -> None:
        """A round begins that ``end_round()`` ends; called at once when the shard changed
        since :meth:`take_reshard` last looked."""
        with self._lock:
            self._end_round = end_round
            pending = self._reshard
        if pending:
            end_round()

    def close_round(self) -> None:
        """The open round is over: a change of shard now only waits for the next one."""
        with self._lock:
            self._end_round = None

    def text(self) -> str:
        """The selector as every request of this round sends it; "" for everything."""
        shard = self.selector()
        return "" if shard is None else str(shard)

    def client_filter(self) -> Callable[[Any], bool] | None:
        """``ShardSelector.matches`` when events must be filtered here, else None."""
        with self._lock:
            shard, server_side = self._shard, self._server_side
        return None if shard is None or server_side else shard.matches

    def in_shard(self, result: listerwatcher.ListResult) -> listerwatcher.ListResult:
        """``result`` with the listed items of the shard only; filtered here when the server did
        not (then without keys).

        A server that shards echoes the selector as the list's ``shardInfo``; one without the
        feature ignores the selector and sends everything, which is then filtered with the
        same hash (said once, at INFO).
        """
        with self._lock:
            shard = self._shard
            if shard is None:
                self._server_side = None
                return result
            server_side = result.shard_info is not None
            self._server_side = server_side
            tell = not server_side and not self._said_client_side
            if tell:
                self._said_client_side = True
        if server_side:
            return result
        if tell:
            log.info(
                "reflector %s: the server does not shard lists (no shardInfo); "
                "filtering %s on the client", self.name, shard)
        matches = shard.matches
        return result.unkeyed([obj for obj in result.items if matches(obj)])

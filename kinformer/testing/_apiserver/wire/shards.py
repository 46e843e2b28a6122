"""Sharded list and watch (feature gate ``ShardedListAndWatch``): the ``shardSelector`` parameter.

With the gate on, a list or watch's ``shardSelector`` is parsed as the API server does; a bad
one (also one of only blanks) answers HTTP 500 with ``invalid shard selector: <reason>``, and an
empty one counts as absent. A list then holds only the
matching objects and carries ``metadata.shardInfo``; a watch sends only their events. With the
gate off the parameter is ignored, even a malformed one, as on a real server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kinformer import errors, sharding
from kinformer.testing._apiserver import status

GATE = "ShardedListAndWatch"
KNOWN_GATES = frozenset({GATE})


def check_gates(gates: Mapping[str, bool]) -> dict[str, bool]:
    """A copy of ``gates``; an unknown name raises ValueError, as the server refuses to start."""
    unknown = sorted(set(gates) - KNOWN_GATES)
    if unknown:
        raise errors.ConfigurationError(
            f"unrecognized feature gate: {', '.join(unknown)} (known: {', '.join(sorted(KNOWN_GATES))})")
    return {name: bool(on) for name, on in gates.items()}


def selector(query: Mapping[str, str], gates: Mapping[str, bool]) -> sharding.ShardSelector | None:
    """The request's shard selector; None when the gate is off or the parameter absent or empty.

    An empty value counts as absent, as on the real server; one of only blanks is parsed, and so
    refused (HTTP 500, "empty shard selector is not allowed").
    """
    if not gates.get(GATE):
        return None
    text = query.get("shardSelector", "")
    if not text:
        return None
    try:
        return sharding.ShardSelector.parse(text)
    except errors.ShardSelectorError as err:
        raise status.StatusError(500, "InternalError", f"invalid shard selector: {err}") from None


def combine(
    match: Callable[[dict[str, Any]], bool] | None, shard: sharding.ShardSelector | None
) -> Callable[[dict[str, Any]], bool] | None:
    """``match`` narrowed to ``shard``'s objects."""
    if shard is None:
        return match
    in_shard = shard.matches
    if match is None:
        return in_shard
    return lambda obj: match(obj) and in_shard(obj)

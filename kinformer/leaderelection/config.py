"""LeaderElectionConfig: the lock, the three durations and the callbacks of one leader election.

client-go's ``leaderelection.LeaderElectionConfig``, checked when it is made: a bad one raises
:class:`~kinformer.ConfigurationError` at once (never exits the process, unlike the official
Python client's port). The elector that runs it is :mod:`kinformer.leaderelection.elector`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kinformer import _checks, context, errors
from kinformer.leaderelection.lease_lock import ResourceLock

JITTER_FACTOR = 1.2  # client-go's: a retry waits between 1x and 2.2x retry_period


@dataclass(frozen=True)
class LeaderElectionConfig:
    """How to elect a leader: through ``lock``, with these durations (seconds) and callbacks.

    ``lease_duration`` is how long candidates wait, from when they last saw the lock change,
    before taking it over; ``renew_deadline`` how long the leader keeps trying to renew before
    it gives up leading; ``retry_period`` the pause between attempts. They must satisfy
    ``lease_duration > renew_deadline > 1.2 * retry_period > 0`` (client-go's components use
    15, 10 and 2). Every replica of one election should use the same durations.

    ``on_started_leading(ctx)`` runs on its own thread once leadership is acquired; ``ctx`` is
    cancelled when it ends. ``on_stopped_leading()`` is called once after that, only if this
    elector ever led. ``on_new_leader(identity)`` hears of each new holder, this elector
    included. Every callback is optional. With ``release_on_cancel`` a leader that is stopped
    gives the lock up, so a successor takes over at once instead of after ``lease_duration``.
    ``name`` names the election in logs and thread names (default: the lock's ``describe()``).
    """

    lock: ResourceLock
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    on_started_leading: Callable[[context.Context], object] | None = None
    on_stopped_leading: Callable[[], object] | None = None
    on_new_leader: Callable[[str], object] | None = None
    release_on_cancel: bool = False
    name: str = ""

    def __post_init__(self) -> None:
        if self.lock is None:
            raise errors.ConfigurationError("leader election needs a lock, got None")
        for method in ("get", "create", "update", "describe"):
            if not callable(getattr(self.lock, method, None)):
                raise errors.ConfigurationError(
                    f"leader election lock {self.lock!r} has no {method}() method")
        identity = getattr(self.lock, "identity", "")
        if not isinstance(identity, str) or not identity:
            raise errors.ConfigurationError("leader election lock needs a non-empty identity")
        durations = (("lease_duration", self.lease_duration),
                     ("renew_deadline", self.renew_deadline),
                     ("retry_period", self.retry_period))
        for field, value in durations:
            _checks.seconds(field, value, positive=True)
        if self.lease_duration <= self.renew_deadline:
            raise errors.ConfigurationError(
                f"lease_duration ({self.lease_duration}) must be greater than renew_deadline "
                f"({self.renew_deadline})")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise errors.ConfigurationError(
                f"renew_deadline ({self.renew_deadline}) must be greater than "
                f"{JITTER_FACTOR} * retry_period ({self.retry_period})")
        for field, callback in (("on_started_leading", self.on_started_leading),
                                ("on_stopped_leading", self.on_stopped_leading),
                                ("on_new_leader", self.on_new_leader)):
            if callback is not None and not callable(callback):
                raise errors.ConfigurationError(f"{field} must be callable or None, got {callback!r}")
        if not isinstance(self.name, str):
            raise errors.ConfigurationError(f"name must be a string, got {self.name!r}")

    @property
    def election_name(self) -> str:
        """``name``, or the lock's ``describe()`` when no name was given."""
        return self.name or self.lock.describe()

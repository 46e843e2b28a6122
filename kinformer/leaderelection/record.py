"""LeaderElectionRecord: who holds a leader election lock, since when, and how many times it moved.

client-go's ``resourcelock.LeaderElectionRecord``, as a frozen value. It is read from and written
to the ``spec`` of a ``coordination.k8s.io/v1`` Lease (:mod:`kinformer.leaderelection.lease_lock`),
whose times are ``MicroTime``s: RFC 3339 in UTC with exactly six fraction digits
(``2026-12-03T08:15:02.123456Z``). The API server refuses any other number of digits, so the
times are printed here, never by the official client's models (which drop the fraction of a time
whose microsecond is 0). The elector (:mod:`kinformer.leaderelection.elector`) compares records
by value to notice that the holder renewed; it never judges expiry from the times in a record.
"""

from __future__ import annotations

import datetime
import math
import re
from dataclasses import dataclass
from typing import Any

from kinformer import errors

_MICRO_TIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})\Z"
)


def format_micro_time(moment: datetime.datetime) -> str:
    """``moment`` as a Lease ``MicroTime``: UTC, six fraction digits, ``Z``.

    A naive datetime is taken to be UTC.
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_micro_time(text: str) -> datetime.datetime:
    """An aware UTC datetime from an RFC 3339 time (any fraction, ``Z`` or an offset).

    Digits past the microsecond are dropped. Raises :class:`~kinformer.DecodeError` for
    anything else.
    """
    found = _MICRO_TIME.match(text) if isinstance(text, str) else None
    if found is None:
        raise errors.DecodeError(f"not an RFC 3339 time: {text!r}")
    year, month, day, hour, minute, second, fraction, zone = found.groups()
    if zone in ("Z", "z"):
        tz = datetime.timezone.utc
    else:
        sign = -1 if zone[0] == "-" else 1
        offset = datetime.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
        tz = datetime.timezone(sign * offset)
    micro = int((fraction or "0").ljust(6, "0")[:6])
    try:
        moment = datetime.datetime(int(year), int(month), int(day), int(hour), int(minute),
                                   int(second), micro, tzinfo=tz)
    except ValueError as exc:
        raise errors.DecodeError(f"not an RFC 3339 time: {text!r}: {exc}") from None
    return moment.astimezone(datetime.timezone.utc)


def lease_seconds(lease_duration: float) -> int:
    """Whole seconds to write for a lease of ``lease_duration`` seconds: rounded up, at least 1,
    so a reader that trusts the record never expires it early."""
    return max(1, math.ceil(lease_duration))


@dataclass(frozen=True, slots=True)
class LeaderElectionRecord:
    """The state of a leader election lock, as the Lease's spec holds it.

    ``holder_identity`` is empty when nobody holds the lock (it was released). Times are aware
    datetimes (the Lease's MicroTimes), or None when the Lease has none. Hashable and
    equal by value.
    """

    holder_identity: str
    lease_duration_seconds: int
    acquire_time: datetime.datetime | None
    renew_time: datetime.datetime | None
    leader_transitions: int

    @classmethod
    def from_lease_spec(cls, spec: Any) -> LeaderElectionRecord:
        """The record in a Lease's ``spec`` (absent fields read as empty, 0 or None).

        Raises :class:`~kinformer.DecodeError` for a spec of the wrong shape.
        """
        if spec is None:
            spec = {}
        if not isinstance(spec, dict):
            raise errors.DecodeError(f"Lease spec is not an object: {type(spec).__name__}")
        holder = spec.get("holderIdentity") or ""
        duration = spec.get("leaseDurationSeconds") or 0
        transitions = spec.get("leaseTransitions") or 0
        if not isinstance(holder, str):
            raise errors.DecodeError(f"Lease spec.holderIdentity is not a string: {holder!r}")
        for field, value in (("leaseDurationSeconds", duration), ("leaseTransitions", transitions)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise errors.DecodeError(f"Lease spec.{field} is not an integer: {value!r}")
        return cls(holder, duration, _time_field(spec, "acquireTime"),
                   _time_field(spec, "renewTime"), transitions)

    def to_lease_spec(self) -> dict[str, Any]:
        """The Lease ``spec`` fields of this record, times printed as MicroTimes."""
        spec: dict[str, Any] = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.leader_transitions,
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = format_micro_time(self.acquire_time)
        if self.renew_time is not None:
            spec["renewTime"] = format_micro_time(self.renew_time)
        return spec


def _time_field(spec: dict[str, Any], field: str) -> datetime.datetime | None:
    value = spec.get(field)
    if value is None or value == "":
        return None
    try:
        return parse_micro_time(value)
    except errors.DecodeError as err:
        raise errors.DecodeError(f"Lease spec.{field}: {err}") from None

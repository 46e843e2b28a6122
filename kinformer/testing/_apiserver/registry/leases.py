"""How the fake API server decodes a Lease body, as kube-apiserver's typed decoder does.

A Lease's ``spec.acquireTime`` and ``spec.renewTime`` are ``MicroTime``s: the server parses them
with the layout ``2006-01-02T15:04:05.000000Z07:00``, so exactly six fraction digits are needed
and anything else is 400 BadRequest; an offset is accepted and the time is printed back in UTC
with ``Z``. The integer and string fields of the spec are checked the same way. Called by
:mod:`.strategy` for each create and update of a Lease, before the object is stored.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from kinformer.testing._apiserver import status
from kinformer.testing._apiserver.resources import ResourceType

LEASES_GROUP_RESOURCE = "leases.coordination.k8s.io"
LAYOUT = "2006-01-02T15:04:05.000000Z07:00"
_MICRO_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{6})(Z|[+-]\d{2}:\d{2})\Z")
_TIME_FIELDS = ("acquireTime", "renewTime")
_INT32_FIELDS = ("leaseDurationSeconds", "leaseTransitions")
_STRING_FIELDS = ("holderIdentity",)


def is_lease(rt: ResourceType) -> bool:
    return rt.group_resource == LEASES_GROUP_RESOURCE


def decode(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Check a Lease body's spec (400 as the server answers) and normalize its times in place."""
    spec = obj.get("spec")
    if spec is None:
        return
    if not isinstance(spec, dict):
        raise _cannot_handle(rt, "json: cannot unmarshal into Go struct field Lease.spec "
                                 "of type v1.LeaseSpec")
    for field in _STRING_FIELDS:
        value = spec.get(field)
        if value is not None and not isinstance(value, str):
            raise _cannot_handle(rt, _unmarshal(value, field, "string"))
    for field in _INT32_FIELDS:
        value = spec.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not -2**31 <= value < 2**31:
            raise _cannot_handle(rt, _unmarshal(value, field, "int32"))
    for field in _TIME_FIELDS:
        value = spec.get(field)
        if value is None:
            spec.pop(field, None)
            continue
        if not isinstance(value, str):
            raise _cannot_handle(rt, _unmarshal(value, field, "string"))
        spec[field] = _normalize(rt, value)


def _normalize(rt: ResourceType, text: str) -> str:
    found = _MICRO_TIME.match(text)
    if found is None:
        raise _cannot_handle(rt, f'parsing time "{text}" as "{LAYOUT}": {_parse_error(text)}')
    year, month, day, hour, minute, second, micro, zone = found.groups()
    if zone == "Z":
        tz = datetime.timezone.utc
    else:
        sign = -1 if zone[0] == "-" else 1
        tz = datetime.timezone(sign * datetime.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    try:
        moment = datetime.datetime(int(year), int(month), int(day), int(hour), int(minute),
                                   int(second), int(micro), tzinfo=tz)
    except ValueError:
        raise _cannot_handle(rt, f'parsing time "{text}": day out of range') from None
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_error(text: str) -> str:
    """Go's ``time.Parse`` complaint about ``text``, naming where it stopped matching."""
    head = re.match(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}", text)
    if head is None:
        return f'cannot parse "{text}" as "2006-01-02T15:04:05"'
    rest = text[head.end():]
    fraction = re.match(r"\.\d+", rest)
    if fraction is not None and len(fraction.group()) >= 7:  # six digits read; the zone must follow
        return f'cannot parse "{rest[7:]}" as "Z07:00"'
    return f'cannot parse "{rest}" as ".000000"'


def _unmarshal(value: Any, field: str, go_type: str) -> str:
    kind = {bool: "bool", str: "string", list: "array", dict: "object"}.get(type(value), "number")
    return f"json: cannot unmarshal {kind} into Go struct field LeaseSpec.spec.{field} of type {go_type}"


def _cannot_handle(rt: ResourceType, why: str) -> status.StatusError:
    return status.bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a '
                              f'{rt.kind}: {why}')

"""Resolving ``kinformer watch``'s RESOURCE as kubectl does, from the server's discovery documents.

:func:`resolve_resource` accepts a plural, singular, short name or kind, alone or qualified as
``resource.group`` or ``resource.version.group``, and answers a :class:`Resolved` (where to list
it, whether it is namespaced). Failures raise :class:`~kinformer.cli.watch.exits.CommandError`:
an unknown name, a server that cannot be reached or is not a Kubernetes API server, 401 or 403.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kinformer import context, errors
from kinformer.cli.watch.exits import (
    EXIT_UNKNOWN_RESOURCE,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    CommandError,
    command_error,
)
from kinformer.client import discovery
from kinformer.gvr import GroupVersionResource, split_group_version

REQUEST_TIMEOUT = (5.0, 30.0)  # (connect, read) seconds for one discovery GET


@dataclass(frozen=True)
class Resolved:
    """A resource type found in discovery: where to list it and how it is addressed."""

    gvr: GroupVersionResource
    kind: str
    namespaced: bool


def resolve_resource(api: Any, name: str, where: str = "", ctx: context.Context | None = None) -> Resolved:
    """Resolve ``name`` as kubectl does, reading discovery through ``api`` (an ApiClient).

    Accepts a plural, singular, short name or kind (any case), alone or as ``resource.group`` or
    ``resource.version.group``. The core group wins over the others, then groups in the server's
    order, each at its preferred version first. Raises :class:`CommandError` (unknown resource,
    unreachable server or not an API server, 401, 403). Cancelling ``ctx`` breaks off the
    discovery request in flight.
    """
    wanted = name.strip().lower()
    if not wanted:
        raise CommandError(EXIT_USAGE, "RESOURCE must not be empty")
    entries = _discover(api, where or "the server", ctx)
    for candidate_name, group, version in _interpretations(wanted):
        for entry in entries:
            gvr = entry.group_version_resource
            if group is not None and gvr.group != group:
                continue
            if version is not None and gvr.version != version:
                continue
            kind = entry.group_version_kind.kind
            names = {gvr.resource, entry.singular_name, kind.lower(), *entry.short_names}
            if candidate_name in names:
                if not entry.listable:
                    raise CommandError(EXIT_UNKNOWN_RESOURCE,
                                       f"resource {gvr.group_resource} cannot be listed and watched")
                return Resolved(gvr, kind, entry.namespaced)
    raise CommandError(EXIT_UNKNOWN_RESOURCE, f'the server doesn\'t have a resource type "{name}"')


def _interpretations(wanted: str) -> list[tuple[str, str | None, str | None]]:
    """``(resource, group or None, version or None)`` readings of ``wanted``, most specific first."""
    if "." not in wanted:
        return [(wanted, None, None)]
    readings: list[tuple[str, str | None, str | None]] = []
    parts = wanted.split(".")
    if len(parts) >= 3:
        readings.append((parts[0], ".".join(parts[2:]), parts[1]))  # resource.version.group
    readings.append((parts[0], ".".join(parts[1:]), None))  # resource.group
    return readings


def _discover(api: Any, where: str, ctx: context.Context | None = None) -> list[discovery.APIResource]:
    """Every resource type the server serves, core first, each group's preferred version first.

    A group version whose document fails is left out, as kubectl leaves it, unless the failure
    is one every document would share (401, an unreachable server). A server whose group lists
    are missing (404) or not discovery documents is not a Kubernetes API server.
    """
    reader = discovery.CachedDiscoveryClient(api, request_timeout=REQUEST_TIMEOUT, ctx=ctx)
    try:
        group_versions, preferred = reader.server_group_versions()
    except (errors.NotFoundError, errors.MethodNotAllowedError, errors.DecodeError) as err:
        raise _not_an_api_server(where, err) from None
    except (errors.APIError, errors.TransportError) as err:
        raise command_error(err, where, "discovery") from None
    if not group_versions:
        raise _not_an_api_server(where, "GET /api and /apis list no API versions")
    groups: dict[str, int] = {}  # group -> its place in the server's order
    for gv in group_versions:
        groups.setdefault(split_group_version(gv)[0], len(groups))
    group_versions.sort(key=lambda gv: (groups[split_group_version(gv)[0]], gv not in preferred))
    entries: list[discovery.APIResource] = []
    for gv in group_versions:
        try:
            entries += reader.api_resources(gv)
        except (errors.UnauthorizedError, errors.TransportError) as err:
            raise command_error(err, where, "discovery") from None
        except (errors.APIError, errors.DecodeError):
            continue
    return entries


def _not_an_api_server(where: str, why: object) -> CommandError:
    if isinstance(why, errors.APIError):
        why = f"GET /api answered {why.status}"
    return CommandError(EXIT_UNREACHABLE, f"{where} is not a Kubernetes API server ({why})")

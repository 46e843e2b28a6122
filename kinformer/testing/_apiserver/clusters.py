"""Logical clusters of the fake API server, as kcp serves them: names, the path prefix, the
annotation and the verbs the wildcard refuses.

With logical clusters on, a request path may start ``/clusters/<name>`` (kcp's grammar: words
of lowercase letters, digits and ``-``, joined by ``:``, e.g. ``root:org:team``) to address one
logical cluster, or ``/clusters/*`` to list and watch all of them; an unprefixed path addresses
:data:`ROOT`. Pure functions; what is wrong raises the
:class:`~kinformer.testing._apiserver.status.StatusError` kcp answers with (400 for a name
outside the grammar, 405 for a verb other than list and watch across clusters).
:class:`~kinformer.testing._apiserver.storage.keyspace.Keyspace` holds each cluster's objects.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from kinformer.testing._apiserver import status
from kinformer.testing._apiserver.resources import ResourceType

ROOT = "root"  # the logical cluster of unprefixed paths
WILDCARD = "*"  # every logical cluster: list and watch only
ANNOTATION = "kcp.io/cluster"  # where each object names its logical cluster
PREFIX = "clusters"  # the first path segment of a logical cluster's paths
READ_ACROSS = frozenset({"list", "watch"})  # the verbs /clusters/* serves

_WORD = "[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_NAME = re.compile(f"^{_WORD}(:{_WORD})*$")  # kcp's logicalcluster.Path grammar


def check_name(name: str) -> str:
    """``name`` when it is a logical cluster's name or the wildcard; 400 otherwise."""
    if name == WILDCARD or _NAME.match(name):
        return name
    raise status.bad_request(f'invalid cluster: "{name}" does not match the regex')


def split_path(parts: list[str]) -> tuple[str, list[str]]:
    """``(cluster, the rest of the path)`` of a path's segments that start with ``clusters``.

    ``/clusters/<name>/api/v1/...`` gives ``(name, ["api", "v1", ...])``, the name unquoted
    (kubectl sends ``*`` as ``%2A``); 404 when no name follows, 400 when it is outside the
    grammar.
    """
    if len(parts) < 2:
        raise status.path_not_found()
    return check_name(unquote(parts[1])), parts[2:]


def refuse_across(verb: str, rt: ResourceType) -> status.StatusError:
    """The 405 kcp answers to a verb other than list and watch on ``/clusters/*``."""
    details: dict[str, Any] = {}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.resource
    return status.StatusError(
        405, "MethodNotAllowed",
        f'{verb} is not supported on resources of kind "{rt.group_resource}" in the `*` '
        f"logical cluster", details)


def annotate(meta: dict[str, Any], cluster: str) -> None:
    """Set ``metadata.annotations["kcp.io/cluster"]`` of a checked object's ``meta``."""
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        if annotations.get(ANNOTATION) != cluster:
            annotations[ANNOTATION] = cluster
    else:
        meta["annotations"] = {ANNOTATION: cluster}


def annotate_body(obj: Any, cluster: str) -> None:
    """:func:`annotate` a request body before it is checked; a malformed body is left for the
    checks to reject."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if isinstance(meta, dict) and (meta.get("annotations") is None
                                   or isinstance(meta["annotations"], dict)):
        annotate(meta, cluster)

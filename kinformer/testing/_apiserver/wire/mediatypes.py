"""Content negotiation of the fake API server: what form an answer takes, from ``Accept``.

kubectl asks ``application/json;as=Table;v=v1;g=meta.k8s.io, ...;v=v1beta1..., application/json``;
metadata-only clients ask ``as=PartialObjectMetadata`` (or ``...List``); client-go's typed
clients ask protobuf first and JSON next. The first clause (highest ``q`` first, then in order)
the server can write wins: JSON, a Table or a PartialObjectMetadata of ``meta.k8s.io`` v1 or
v1beta1. The fake writes no protobuf: a clause asking only for it is passed over, and an
``Accept`` that names nothing else but protobuf still gets JSON (Go clients decode by the
response's Content-Type); one naming nothing the server speaks at all is 406, as on a real server.
"""

from __future__ import annotations

from dataclasses import dataclass

from kinformer.testing._apiserver import status

JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
TRANSFORMS = ("Table", "PartialObjectMetadata", "PartialObjectMetadataList")
_META_VERSIONS = ("v1", "v1beta1")


@dataclass(frozen=True)
class Target:
    """The form of an answer: the object itself (``kind`` empty), or one of :data:`TRANSFORMS`
    in ``meta.k8s.io/<version>``."""

    kind: str = ""
    version: str = "v1"


PLAIN = Target()


def _clauses(accept: str) -> list[tuple[str, dict[str, str]]]:
    parsed = []
    for position, clause in enumerate(accept.split(",")):
        media, *params = (p.strip() for p in clause.split(";"))
        if not media:
            continue
        options = {}
        for param in params:
            key, _, value = param.partition("=")
            options[key.strip().lower()] = value.strip().strip('"')
        try:
            weight = float(options.get("q", "1"))
        except ValueError:
            weight = 1.0
        parsed.append((-weight, position, media.lower(), options))
    parsed.sort()
    return [(media, options) for negated, _, media, options in parsed if negated < 0]


def negotiate(accept: str) -> Target:
    """The form to answer in; 406 when ``accept`` names nothing the server can write."""
    if not accept.strip():
        return PLAIN
    protobuf_only = False
    for media, options in _clauses(accept):
        kind = options.get("as", "")
        if media == PROTOBUF:
            protobuf_only = protobuf_only or not kind
            continue
        if media not in (JSON, "application/*", "*/*"):
            continue
        if not kind:
            return PLAIN
        if kind in TRANSFORMS and options.get("g") == "meta.k8s.io" \
                and options.get("v") in _META_VERSIONS:
            return Target(kind, options["v"])
    if protobuf_only:
        return PLAIN
    raise status.StatusError(
        406, "NotAcceptable",
        "only the following media types are accepted: application/json, application/yaml, "
        "application/vnd.kubernetes.protobuf")

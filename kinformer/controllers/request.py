"""Request: what a built controller asks its reconciler to look at, naming the cluster too.

controller-runtime's ``reconcile.Request`` with multicluster-runtime's cluster: one object by
name, namespace and cluster. Its :attr:`Request.key` is the cluster-aware key of
``cache/cluster.py`` (``<cluster>|<namespace>/<name>``; the plain ``namespace/name`` when the
request names no cluster), the key a built controller queues, so two clusters' ``default/app``
are two requests. The builder (``builder.py``) makes them; reconcilers receive them.

>>> Request("app", "default", "root:org").key
'root:org|default/app'
>>> Request.from_key("root:org|default/app")
Request(name='app', namespace='default', cluster='root:org')
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass

from kinformer import errors
from kinformer.cache import cluster as _cluster

_SPECIALS = "%|/"  # what a name or namespace has percent-encoded in a key ("%" first)
_CLUSTER_SPECIALS = "%|"  # and a cluster: a '/' before the '|' splits nothing


def _escape(part: str, specials: str) -> str:
    if not any(c in part for c in specials):
        return part
    for c in specials:
        part = part.replace(c, f"%{ord(c):02X}")
    return part


def _unescape(part: str) -> str:
    return urllib.parse.unquote(part) if "%" in part else part


@dataclass(frozen=True, slots=True)
class Request:
    """One object to reconcile: ``name``, ``namespace`` ("" when cluster-scoped) and ``cluster``
    ("" for a single-cluster source). Frozen and hashable: equal requests are one queue item.

    An empty ``name``, or a part that is not a string, raises
    :class:`~kinformer.ConfigurationError`.
    """

    name: str
    namespace: str = ""
    cluster: str = ""

    def __post_init__(self) -> None:
        for field in ("name", "namespace", "cluster"):
            if not isinstance(getattr(self, field), str):
                raise errors.ConfigurationError(f"Request {field} must be a string: {getattr(self, field)!r}")
        if not self.name:
            raise errors.ConfigurationError("Request needs a name")

    @property
    def key(self) -> str:
        """The cluster-aware key (``<cluster>|<namespace>/<name>``, parts left out when empty).

        A part holding a separator of the key (a ``|``, as an RBAC object's name may:
        ``ClusterRole "ops|admin"``; a ``/`` in a name or namespace) has it, and any ``%``,
        percent-encoded, so :meth:`from_key` reads back this request and no other; every other
        key is the plain cluster-aware key.
        """
        return _cluster.to_cluster_aware_key(
            _escape(self.cluster, _CLUSTER_SPECIALS), _escape(self.namespace, _SPECIALS),
            _escape(self.name, _SPECIALS))

    @classmethod
    def from_key(cls, key: str) -> Request:
        """The request whose :attr:`key` is ``key``; :class:`~kinformer.InvalidKeyError` for a key
        that is not ``[cluster|][namespace/]name``."""
        cluster, namespace, name = _cluster.split_cluster_aware_key(key)
        if not name:
            raise errors.InvalidKeyError(f'unexpected key format: "{key}"')
        return cls(_unescape(name), _unescape(namespace), _unescape(cluster))

    def __str__(self) -> str:
        return self.key

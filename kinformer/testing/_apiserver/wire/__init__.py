"""The fake API server on the wire, as kube-apiserver's endpoints: from bytes in to bytes out.

:mod:`.serving` accepts connections and gives each a :class:`~.handler.Handler`, which routes a
path to discovery (:mod:`.discovery`, :mod:`.openapi`) or to a resource request: parsed and
checked by :mod:`.request` (bodies in protobuf by :mod:`.protobuf`, patch documents applied by
:mod:`.patch`, the shard selector by :mod:`.shards`), answered in the form ``Accept`` asks
(:mod:`.mediatypes`) with the bodies of :mod:`.responses` and :mod:`.tables`, or streamed as a
watch by :mod:`.watchstream`. Below it, the requests become calls on :mod:`..storage` and on
the subresources of :mod:`..registry`; nothing below imports this room.
"""

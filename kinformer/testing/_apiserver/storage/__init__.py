"""The fake API server's storage, as etcd and kube-apiserver's watch cache: what is stored, when.

:class:`~.storage.Storage` holds every object, versioned by one resourceVersion counter, in a
:mod:`.keyspace` per logical cluster; every write goes through the bounded history of
:mod:`.watch_cache` to the open :mod:`.watchers`, and :mod:`.paging` keeps the snapshots that
continue tokens name. Above it :mod:`..wire` reads and writes through ``Storage``; below it,
how a write shapes an object is asked of :mod:`..registry`, never decided here.
"""

"""The fake API server's per-type rules, as kube-apiserver's registry: what a write must be.

:mod:`.strategy` shapes each create, update and delete (names, server-owned fields, status,
preconditions, CRD admission), with :mod:`.defaults` and :mod:`.workloads` filling what the
decoder fills, :mod:`.validation` and :mod:`.leases` refusing what the server refuses, and
:mod:`.fieldmanager` recording ``managedFields``. The subresources that are more than storage
live here too: :mod:`.scale`, :mod:`.tokens` and :mod:`.connect` (a Pod's ``exec``, ``log``,
...), and the Table columns of built-in types in :mod:`.printers`. Pure functions over decoded
objects, but for the allocator of Service addresses in :mod:`.defaults`: :mod:`..storage` calls
them under its lock and :mod:`..wire` for the subresources; this room imports neither.
"""

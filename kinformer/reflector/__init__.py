"""The reflector: lists and watches one resource type with client-go's rules and keeps a store
equal to the server.

:mod:`~kinformer.reflector.reflector` holds the :class:`Reflector`, its run loop and resync
timer (client-go's ``reflector.go``), and builds its parts: the list and relist rules
(:mod:`~kinformer.reflector.listing`, page by page through :mod:`~kinformer.reflector.pager`,
client-go's ``tools/pager``), the WatchList initial sync (:mod:`~kinformer.reflector.watch_list`),
the watch loop (:mod:`~kinformer.reflector.watch_loop`), the one handler every watch's events
go through (:mod:`~kinformer.reflector.watch`, ``handleAnyWatch``) and what writes them into the
store (:mod:`~kinformer.reflector.watch_events`). Below them:
:mod:`~kinformer.reflector.shard_state` (the shard the requests carry),
:mod:`~kinformer.reflector.failures` (what an error means for the next step) and
:mod:`~kinformer.reflector.sink` (what a reflector writes to). It pulls through
:mod:`kinformer.client` and feeds a store from :mod:`kinformer.cache`; the informer
(:mod:`kinformer.informer`) runs one.
"""

from kinformer.reflector.reflector import Reflector, WatchErrorHandler

__all__ = ["Reflector", "WatchErrorHandler"]

"""The reflector: lists and watches one resource type with client-go's rules and keeps a store
equal to the server.

:mod:`~kinformer.reflector.reflector` holds the :class:`Reflector` and its rules (client-go's
``reflector.go``), :mod:`~kinformer.reflector.watch` the one handler every watch's events go
through (``handleAnyWatch``), :mod:`~kinformer.reflector.pager` the paginated list
(``tools/pager``). It pulls through :mod:`kinformer.client` and feeds a store from
:mod:`kinformer.cache`; the informer (:mod:`kinformer.informer`) runs one.
"""

from kinformer.reflector.reflector import Reflector, WatchErrorHandler

__all__ = ["Reflector", "WatchErrorHandler"]

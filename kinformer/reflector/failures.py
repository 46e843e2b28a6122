"""How a reflector reads a failed request: back off and retry, list at the current version, or stop.

client-go's reflector answers each error by its kind (``isExpiredError``,
``isTooLargeResourceVersionError``, and the refused-connection and 429 checks of its watch loop).
The predicates here are those rules, shared by the list (:mod:`kinformer.reflector.listing`), the
WatchList initial sync (:mod:`kinformer.reflector.watch_list`) and the watch loop
(:mod:`kinformer.reflector.watch_loop`); :class:`StopRequested` is how a list or an initial sync
that the stop signal interrupted ends the round quietly (:mod:`kinformer.reflector.reflector`).
"""

from __future__ import annotations

import logging

from kinformer import errors


class StopRequested(Exception):
    """The stop signal fired during a list or the initial sync; the run loop ends quietly on it."""


def is_connection_refused(error: BaseException) -> bool:
    """Whether ``error`` or one of its causes is a refused connection."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__
    return False


def backs_off(error: BaseException) -> bool:
    """Whether a watch that failed to start with ``error`` is retried after a backoff step.

    A refused connection or a 429 means the server is there but busy or restarting: the
    reflector backs off and watches again instead of relisting (client-go's rule). So does a
    request that got no answer at all (a :class:`~kinformer.TransportError`: a server going
    down resets the connections it had accepted): its version is as good as before, and a list
    would meet the same connection. client-go sees such a reset less often, as Go's transport
    sends a request again when a kept-alive connection breaks under it; kinformer's requests
    do the same, but a reset on a new connection surfaces here.
    """
    return (is_connection_refused(error)
            or isinstance(error, (errors.TransportError, errors.TooManyRequestsError)))


def version_unavailable(error: BaseException) -> bool:
    """Whether ``error`` says the version asked for is gone (410) or not there yet."""
    return errors.is_expired(error) or errors.is_too_large_resource_version(error)


def refused_version(exc: BaseException, rv: str) -> bool:
    """Whether a list at ``rv`` got 400 for a version the server cannot read.

    A watch event may carry a resourceVersion that is a string but not one the server accepts
    back. client-go would list at it again forever; kinformer lists once at the current
    version instead, as after a 410.
    """
    return isinstance(exc, errors.BadRequestError) and rv not in ("", "0")


def expected(error: BaseException) -> bool:
    """Whether ``error`` is what a server going away or coming back causes: a connection
    refused, reset, cut or silent (:class:`~kinformer.TransportError`), a version the server no
    longer has (410) or a watch closed at once (:class:`~kinformer.VeryShortWatchError`)."""
    return (is_connection_refused(error) or errors.is_expired(error)
            or isinstance(error, (errors.TransportError, errors.VeryShortWatchError)))


def log_level(error: BaseException, reported_elsewhere: bool) -> int:
    """The level a reflector logs ``error`` at: WARNING, or DEBUG for an :func:`expected` one
    when its ListerWatcher reports failures itself (``reports_failures``, as a member
    cluster's does: one line when the cluster goes, one when it comes back)."""
    return logging.DEBUG if reported_elsewhere and expected(error) else logging.WARNING

"""kinformer's own connection pools: one per ``ApiClient``, built from its ``Configuration``.

The request path (:mod:`kinformer.client.rest`) sends every request through a
``urllib3.PoolManager`` of its own (a ``ProxyManager`` through an HTTP proxy, a
``SOCKSProxyManager`` through a SOCKS one), made from the connection settings of the caller's
``Configuration`` as the official client's ``RESTClientObject`` reads them (see
:func:`pool_manager`), on the first request path made for that ``ApiClient`` and shared by all
later ones: the informers, discovery and leases of one client share its connections. The
caller's ``ApiClient`` and its pool manager are never changed, and never carry kinformer's
requests: they behave exactly as the official client makes them.

Three things differ from the official client's pools, for kinformer's requests:

- A request given a :class:`Call` is broken off when the call is cancelled, from any thread,
  even while it waits for the response headers: the pool's connections attach to the call
  running on their thread, and cancelling it shuts the socket of its connection down, which
  wakes the blocked read at once. That connection is closed, never handed back open.
- urllib3 never retries (``Configuration.retries`` is not read, nor ``client_go_retries``): its
  default retries a refused connection three times, each with a multi-line WARNING, and sleeps
  out a 429's ``Retry-After`` where no stop reaches it; kinformer's callers retry with their own
  backoff, logging one line each time. The one exception is Go's transport's: an idempotent
  request whose kept-alive connection the server had closed meanwhile goes again, once, on a
  new connection. Redirects are not followed: a 3xx is an error, as an API server sends none.
- A connection handed back to a pool already holding ``Configuration.connection_pool_maxsize``
  idle ones is closed quietly (urllib3 warns "Connection pool is full"), as client-go's
  transport closes surplus idle connections: every open watch holds a connection of its own,
  so an informer process often has more open at once than the pool keeps. Raise
  ``connection_pool_maxsize`` above the number of informers plus workers to keep them all.

The pools live as long as their ``ApiClient``: when it is garbage collected, their idle
connections are closed. ``ApiClient.close()`` closes the client's own pools only;
:func:`close` closes kinformer's at once (connections in use close when handed back), and a
later request opens new ones.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import queue
import socket
import ssl
import threading
import weakref
from typing import Any

import urllib3
import urllib3.connection
import urllib3.exceptions

from kinformer import errors

log = logging.getLogger(__name__)


# ---- cancellation ------------------------------------------------------------------------------


class Cancelled(Exception):
    """Raised through urllib3 once a request's call is cancelled; urllib3 does not retry it."""


class Call:
    """One request in flight that another thread may break off with :meth:`cancel`.

    Thread-safe. While the request runs, the pool connection it uses is attached (on the
    requesting thread, before anything is sent); :meth:`cancel` shuts that connection's socket
    down, so a read blocked on it, for the response headers or the body, fails at once and the
    request raises. A call cancelled before its request sends anything sends nothing.
    :meth:`detach` ends the call before the connection goes back to the pool, so a late cancel
    never touches a connection that another request uses.
    """

    __slots__ = ("_cancelled", "_conn", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _conn, _cancelled; cancel shuts _conn down under it
        self._conn: Any = None
        self._cancelled = False

    @property
    def cancelled(self) -> bool:
        with self._lock:
            return self._cancelled

    def cancel(self) -> None:
        """Break the request off; idempotent, callable from any thread."""
        with self._lock:
            self._cancelled = True
            if self._conn is not None:
                shutdown_socket(getattr(self._conn, "sock", None))

    def attach(self, conn: Any) -> None:
        """Note ``conn`` as the request's connection; raise :class:`Cancelled` once cancelled."""
        with self._lock:
            self._conn = conn
            if self._cancelled:
                raise Cancelled()

    def check(self) -> None:
        """Raise :class:`Cancelled` once cancelled."""
        with self._lock:
            if self._cancelled:
                raise Cancelled()

    def detach(self) -> bool:
        """Forget the connection; True when the call was never cancelled (the connection is intact)."""
        with self._lock:
            self._conn = None
            return not self._cancelled


def shutdown_socket(sock: Any) -> None:
    """Shut ``sock`` down at the TCP level, waking a read blocked on it (TLS sockets too)."""
    if sock is None:
        return
    with contextlib.suppress(OSError, ValueError, AttributeError):
        if isinstance(sock, socket.socket):
            # the plain socket's shutdown: an SSLSocket's own would drop its TLS object under
            # the reader's feet
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        else:
            sock.shutdown(socket.SHUT_RDWR)


# on the thread sending a request through send(): .call, the Call being sent (None without
# one); .reused, True when the request went out on a kept-alive socket that had answered before
_running = threading.local()
_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})  # safe to send twice


class _CallAwareConnection(urllib3.connection.HTTPConnection):
    """A pool connection that attaches itself to the :class:`Call` running on its thread.

    urllib3 calls ``request`` and then ``getresponse`` on the requesting thread; without a call
    running there (a request sent without a context) both behave exactly as urllib3's own.
    """

    answered_on: Any = None  # the socket the last response arrived on: sending on it again reuses it

    def request(self, *args: Any, **kwargs: Any) -> None:
        _running.reused = self.sock is not None and self.sock is self.answered_on
        call: Call | None = getattr(_running, "call", None)
        if call is None:
            super().request(*args, **kwargs)
            return
        call.attach(self)
        try:
            super().request(*args, **kwargs)  # plain HTTP connects in here, TLS before
        except OSError as exc:
            if call.cancelled:
                raise Cancelled() from exc
            raise
        call.check()  # a cancel that came before the socket existed ends the request here

    def getresponse(self) -> Any:
        call: Call | None = getattr(_running, "call", None)
        try:
            response = super().getresponse()
        except Exception as exc:
            if call is not None and call.cancelled:
                raise Cancelled() from exc
            raise
        self.answered_on = self.sock
        return response


class _CallAwareHTTPSConnection(_CallAwareConnection, urllib3.connection.HTTPSConnection):
    """The TLS form of :class:`_CallAwareConnection`."""


class _IdleConnections(queue.LifoQueue[Any]):
    """A pool's idle connections, at most its ``maxsize``: one handed back beyond that is closed,
    quietly (urllib3 would warn "Connection pool is full"), never waited for."""

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        try:
            super().put(item, block=False)
        except queue.Full:  # more were open at once than the pool keeps: one per open watch
            if item is not None:
                item.close()
                log.debug("pool of %s full (connection_pool_maxsize %d): closed a surplus "
                          "connection", getattr(item, "host", "?"), self.maxsize)


class _HTTPConnectionPool(urllib3.HTTPConnectionPool):
    ConnectionCls = _CallAwareConnection
    QueueCls = _IdleConnections


class _HTTPSConnectionPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _CallAwareHTTPSConnection
    QueueCls = _IdleConnections


_POOL_CLASSES: dict[str, type[urllib3.HTTPConnectionPool]] = {
    "http": _HTTPConnectionPool, "https": _HTTPSConnectionPool}


@functools.cache
def _socks_pool_classes() -> dict[str, type[urllib3.HTTPConnectionPool]]:
    """The pool classes through a SOCKS proxy (made on first use: they need PySocks)."""
    from urllib3.contrib import socks

    class SOCKSConnection(_CallAwareConnection, socks.SOCKSConnection):
        pass

    class SOCKSHTTPSConnection(_CallAwareConnection, socks.SOCKSHTTPSConnection):
        pass

    class SOCKSHTTPConnectionPool(socks.SOCKSHTTPConnectionPool):
        ConnectionCls = SOCKSConnection
        QueueCls = _IdleConnections

    class SOCKSHTTPSConnectionPool(socks.SOCKSHTTPSConnectionPool):
        ConnectionCls = SOCKSHTTPSConnection
        QueueCls = _IdleConnections

    return {"http": SOCKSHTTPConnectionPool, "https": SOCKSHTTPSConnectionPool}


# ---- building and sharing ----------------------------------------------------------------------


def pool_manager(configuration: Any) -> urllib3.PoolManager:
    """A new pool manager with the connection settings of ``configuration`` (a
    ``kubernetes.client.Configuration``), read as the official client's ``RESTClientObject``
    reads them: ``verify_ssl``, ``ssl_ca_cert``, ``ca_cert_data``, ``cert_file`` and
    ``key_file``, ``assert_hostname``, ``tls_server_name``, ``socket_options`` (else TCP
    keepalive when ``keep_alive`` is set), ``connection_pool_maxsize``, and ``proxy`` with
    ``proxy_headers``, ``proxy_ssl_context`` and ``no_proxy``. Not ``retries`` (see the module
    docstring). The certificate files are read for each new connection, as urllib3 reads them.
    """
    kwargs: dict[str, Any] = {
        "cert_reqs": ssl.CERT_REQUIRED if configuration.verify_ssl else ssl.CERT_NONE,
        "ca_certs": configuration.ssl_ca_cert,
        "cert_file": configuration.cert_file,
        "key_file": configuration.key_file,
    }
    ca_cert_data = getattr(configuration, "ca_cert_data", None)
    if ca_cert_data:
        kwargs["ca_cert_data"] = ca_cert_data
    if configuration.assert_hostname is not None:
        kwargs["assert_hostname"] = configuration.assert_hostname
    tls_server_name = getattr(configuration, "tls_server_name", None)
    if tls_server_name:
        kwargs["server_hostname"] = tls_server_name
    socket_options = _socket_options(configuration)
    if socket_options is not None:
        kwargs["socket_options"] = socket_options
    if configuration.connection_pool_maxsize is not None:
        kwargs["maxsize"] = configuration.connection_pool_maxsize
    proxy = configuration.proxy
    manager: urllib3.PoolManager
    if not proxy or _bypasses_proxy(configuration):
        manager = urllib3.PoolManager(**kwargs)
        manager.pool_classes_by_scheme = _POOL_CLASSES
    elif str(proxy).split("://", 1)[0].lower() in ("socks4", "socks4a", "socks5", "socks5h"):
        from urllib3.contrib.socks import SOCKSProxyManager

        manager = SOCKSProxyManager(proxy, headers=configuration.proxy_headers, **kwargs)
        manager.pool_classes_by_scheme = _socks_pool_classes()
    else:
        proxy_ssl_context = getattr(configuration, "proxy_ssl_context", None)
        if proxy_ssl_context is not None:
            kwargs["proxy_ssl_context"] = proxy_ssl_context
        manager = urllib3.ProxyManager(proxy, proxy_headers=configuration.proxy_headers, **kwargs)
        manager.pool_classes_by_scheme = _POOL_CLASSES
    return manager


def _socket_options(configuration: Any) -> Any:
    """The socket options of ``configuration``: its own, else TCP keepalive when it asks for
    it (``keep_alive``, newer official clients), else None (urllib3's)."""
    options = getattr(configuration, "socket_options", None)
    if options is not None:
        return options
    if getattr(configuration, "keep_alive", False):
        from kubernetes.utils.keepalive import tcp_keepalive_socket_options

        return tcp_keepalive_socket_options()
    return None


def _bypasses_proxy(configuration: Any) -> bool:
    """True when ``configuration.no_proxy`` exempts its host from the proxy, by the official
    client's own rule."""
    no_proxy = getattr(configuration, "no_proxy", None)
    if not no_proxy:
        return False
    from kubernetes.client import rest as official

    return bool(official.should_bypass_proxies(configuration.host, no_proxy=no_proxy))


_pools_lock = threading.Lock()  # guards _pools: one manager is made per ApiClient
_pools: weakref.WeakKeyDictionary[Any, urllib3.PoolManager] = weakref.WeakKeyDictionary()


def for_client(api_client: Any) -> urllib3.PoolManager:
    """kinformer's pool manager for ``api_client``: made from its configuration on first use
    (:func:`pool_manager`), the same one afterwards; thread-safe. When ``api_client`` is
    garbage collected, the manager's idle connections are closed."""
    with _pools_lock:
        manager = _pools.get(api_client)
        if manager is None:
            manager = pool_manager(api_client.configuration)
            _pools[api_client] = manager
            weakref.finalize(api_client, manager.clear)
    return manager


def close(api_client: Any) -> None:
    """Close kinformer's connections to the server of ``api_client``, as ``ApiClient.close()``
    closes the client's own: idle ones at once, those in use once handed back. A later request
    opens new ones. Thread-safe; nothing happens for a client kinformer never used."""
    with _pools_lock:
        manager = _pools.get(api_client)
    if manager is not None:
        manager.clear()


# ---- sending -----------------------------------------------------------------------------------


def send(
    manager: urllib3.PoolManager,
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes | None,
    timeout: tuple[float, float],
    call: Call | None,
) -> Any:
    """Send one request through ``manager``, with ``call`` running on this thread; the urllib3
    response, its body unread.

    Raises :class:`Cancelled` once ``call`` is cancelled, urllib3's errors and OSError as they
    come (never retried but for the one case the module docstring tells).
    """
    if call is not None:
        call.check()
        _running.call = call
    _running.reused = False
    try:
        try:
            return _urlopen(manager, method, url, headers, body, timeout)
        except urllib3.exceptions.ProtocolError:
            # a kept-alive connection the server closed meanwhile (it restarted, or dropped
            # idle connections) fails an idempotent request before any answer; that request
            # goes again, once, on a new connection, as Go's transport sends it
            if not (_running.reused and method.upper() in _IDEMPOTENT):
                raise
        log.debug("%s %s: the kept-alive connection was closed under it; sending it again", method,
                  errors.redact(url))  # a host's https://user:password@ shows no password
        return _urlopen(manager, method, url, headers, body, timeout)
    finally:
        _running.call = None


def _urlopen(
    manager: urllib3.PoolManager, method: str, url: str, headers: dict[str, str],
    body: bytes | None, timeout: tuple[float, float],
) -> Any:
    return manager.urlopen(
        method, url, body=body, headers=headers, retries=False, redirect=False,
        timeout=urllib3.Timeout(connect=timeout[0], read=timeout[1]), preload_content=False)

"""``kinformer watch RESOURCE --all-contexts``: every context of the kubeconfig at once.

Each context of the kubeconfig is a member cluster, named after the context, of a
:class:`~kinformer.MultiClusterInformerFactory`; every line and table row starts with its
cluster. Each context resolves RESOURCE (:mod:`~kinformer.cli.watch.resolve`) on a thread of its
own, and the first to answer gives the type watched everywhere: the informer starts then, and
each context is engaged as soon as its own discovery answered, so one that never answers holds
no other back. Every request has a timeout: discovery's per request and ``--timeout`` for the
start, the members' informers their list and watch timeouts. A context's trouble prints one
``error: cluster NAME: ...`` line per outage and a ``recovered`` line when it lists again
(:mod:`~kinformer.cli.watch.outages`). :mod:`~kinformer.cli.watch.app` hands over to
:func:`watch_all_contexts`.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any, TextIO

from kinformer import _threads, backoff, context, errors
from kinformer.cache import labels
from kinformer.cli.watch import kubeconfig, outages, resolve, table
from kinformer.cli.watch.exits import (
    EXIT_CONFIG,
    EXIT_ERROR,
    EXIT_NO_CLUSTERS,
    EXIT_OK,
    EXIT_SOME_CLUSTERS,
    EXIT_UNKNOWN_RESOURCE,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    CommandError,
    command_error,
)
from kinformer.client.listerwatcher import ListOptions
from kinformer.clusters.factory import MultiClusterInformerFactory
from kinformer.clusters.informer import MultiClusterInformer
from kinformer.clusters.kubeconfig import KubeconfigContextsProvider
from kinformer.clusters.provider import Disengage, Engage

POLL = 0.2  # seconds between looks at every cluster's status
STOP_TIMEOUT = 10.0  # seconds to join the discovery threads; each is broken off at once
# --once gives up on a context at once after these; others may pass, and are waited for
FATAL = (errors.UnauthorizedError, errors.ForbiddenError, errors.NotFoundError,
         errors.ConnectionRefusedAPIError)
RETRIED = (EXIT_ERROR, EXIT_UNREACHABLE)  # streaming: a discovery failing so is asked again
RETRY = backoff.Backoff(duration=1.0, cap=30.0)  # between discovery attempts of one context


def watch_all_contexts(args: argparse.Namespace, selector: labels.Selector, stop: threading.Event,
                       out: TextIO, on_broken_pipe: Callable[[], None], startup: Any) -> int:
    """Watch RESOURCE in every context of the kubeconfig; the exit code.

    Streams until ``stop`` (exit 0), whatever the clusters do, unless every context failed in a
    way retrying cannot fix (:data:`~kinformer.cli.watch.exits.EXIT_NO_CLUSTERS`). With
    ``--once`` prints the table of every cluster that listed within ``--timeout`` and exits 0
    when all did, :data:`~kinformer.cli.watch.exits.EXIT_SOME_CLUSTERS` when some did,
    :data:`~kinformer.cli.watch.exits.EXIT_NO_CLUSTERS` when none did.
    """
    if args.context or args.embedded or args.shard is not None:
        raise CommandError(EXIT_USAGE, "--all-contexts cannot be combined with --context, --embedded "
                                       "or --shard")
    path = args.kubeconfig or None
    try:
        names = KubeconfigContextsProvider(path).contexts
    except errors.ConfigurationError as err:
        raise CommandError(EXIT_CONFIG, str(err)) from None
    if not names:
        raise CommandError(EXIT_CONFIG, f"kubeconfig {path or 'in $KUBECONFIG'} has no contexts")
    # the current context's namespace, read without its credentials (they are loaded, and its
    # credential plugin run, once, by that context's own discovery thread)
    default_namespace = kubeconfig.context_namespace(path, kubeconfig.current_context(path))
    reflector_log = logging.getLogger("kinformer.reflector")
    saved_level = reflector_log.level
    if not logging.getLogger().isEnabledFor(logging.DEBUG):  # without -v: the error lines say it
        reflector_log.setLevel(logging.ERROR)  # with the cluster, which a reflector's warning cannot
    run = _AllContexts(args, selector, names, default_namespace, stop, out, on_broken_pipe, startup)
    try:
        run.start(path)
        return run.once() if args.once else run.stream()
    finally:
        run.close()
        reflector_log.setLevel(saved_level)


class _Offered:
    """A cluster provider that engages each context the command offers, when it offers it."""

    def __init__(self) -> None:
        self._offers: queue.Queue[tuple[str, Any] | None] = queue.Queue()

    def offer(self, name: str, api_client: Any) -> None:
        self._offers.put((name, api_client))

    def run(self, stop: context.Context, engage: Engage, disengage: Disengage) -> None:
        handle = stop.on_cancel(lambda: self._offers.put(None))
        try:
            while (offer := self._offers.get()) is not None:
                engage(*offer)
        finally:
            handle.remove()

    def __repr__(self) -> str:
        return "<contexts of the kubeconfig, each once its server answered>"


class _AllContexts:
    """One run of ``watch --all-contexts``: each context's discovery, the informer once a type is
    known, and what each context showed. The main thread drives it (:meth:`once`,
    :meth:`stream`); the discovery threads only put their answers on ``_answers``."""

    def __init__(self, args: argparse.Namespace, selector: labels.Selector, names: list[str],
                 default_namespace: str | None, stop: threading.Event, out: TextIO,
                 on_broken_pipe: Callable[[], None], startup: Any) -> None:
        self._args = args
        self._selector = selector
        self._names = names
        self._default_namespace = default_namespace
        self._stop = stop
        self._out = out
        self._on_broken_pipe = on_broken_pipe
        self._startup = startup
        self._ctx = context.Context("watch-all-contexts")  # cancelled at close: discovery breaks off
        # (context, its answer, whether it is the last): put by discovery threads, taken by the main one
        self._answers: queue.Queue[tuple[str, resolve.Resolved | CommandError, bool]] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._path: str | None = None
        self._lock = threading.Lock()  # guards _clients and _closed
        self._closed = False
        self._clients: dict[str, Any] = {}  # context -> its ApiClient, shared by discovery and informer
        self._hosts = {name: f"the server of context {name}" for name in names}
        self._failed: dict[str, CommandError] = {}  # contexts given up on, left out
        self._outages = outages.Outages(sys.stderr)
        self._provider = _Offered()
        self._offered: set[str] = set()  # contexts handed to the provider
        self._target: resolve.Resolved | None = None
        self._target_from = ""
        self._namespace = ""
        self._factory: MultiClusterInformerFactory | None = None
        self._informer: MultiClusterInformer | None = None

    # -- discovery --------------------------------------------------------------------------------

    def start(self, path: str | None) -> None:
        """Start each context's discovery thread, which makes its client first."""
        self._path = path
        for name in self._names:
            self._threads.append(_threads.spawn(
                self._discover, _threads.thread_name("watch-discovery", name), name))

    def _connect(self, name: str) -> Any:
        """Context ``name``'s client (nothing is sent), or None after its error was put; its
        credential plugin, if it runs one, is killed at ``--timeout`` or when the command ends."""
        startup = self._startup
        attempt = self._ctx.child(f"credentials-{name}")
        handle = startup.ctx.on_cancel(attempt.cancel)
        try:
            api_client = _client(self._path, name, attempt, startup.timeout)
        except CommandError as err:
            if not (self._ctx.cancelled() or self._stop.is_set()):
                self._answers.put((name, err, True))
            return None
        finally:
            handle.remove()
            attempt.cancel()
        with self._lock:
            if self._closed:
                api_client.close()
                return None
            self._clients[name] = api_client
        self._hosts[name] = str(api_client.configuration.host)
        return api_client

    def _discover(self, name: str) -> None:
        """Make context ``name``'s client, then resolve RESOURCE in it; streaming, ask again
        with backoff while it fails in a way that may pass (a server that cannot be reached,
        a 500)."""
        api_client = self._connect(name)
        if api_client is None:
            return
        startup, where, delay = self._startup, self._hosts[name], RETRY
        while True:
            attempt = self._ctx.child(f"discovery-{name}")
            bounded = not startup.expired()  # the first attempts end at --timeout
            handle = startup.ctx.on_cancel(attempt.cancel) if bounded else None
            try:
                found: resolve.Resolved | CommandError = resolve.resolve_resource(
                    api_client, self._args.resource, where, ctx=attempt)
            except CommandError as err:
                found = err
                if bounded and startup.timed_out:
                    found = CommandError(EXIT_UNREACHABLE, f"the server at {where} did not answer "
                                                           f"discovery within {startup.timeout:g}s")
            finally:
                if handle is not None:
                    handle.remove()
                attempt.cancel()
            if self._ctx.cancelled() or self._stop.is_set():
                return
            last = not isinstance(found, CommandError) or self._args.once or found.code not in RETRIED
            self._answers.put((name, found, last))
            if last or self._ctx.wait(delay.delay()):
                return
            delay = delay.next()

    def _take_answers(self, timeout: float) -> None:
        """Act on the discovery answers that came, waiting up to ``timeout`` for the first."""
        try:
            answer = self._answers.get(timeout=timeout)
            while True:
                self._take(*answer)
                answer = self._answers.get_nowait()
        except queue.Empty:
            pass

    def _take(self, name: str, found: resolve.Resolved | CommandError, last: bool) -> None:
        if name in self._failed:
            return  # given up on already (--once, at --timeout)
        if isinstance(found, CommandError):
            self._outages.failed(name, found.message)
            if last:
                self._failed[name] = found
            return
        if self._target is None:
            self._begin(found, name)
        elif found.gvr != self._target.gvr:
            self._give_up(name, CommandError(
                EXIT_UNKNOWN_RESOURCE, f'"{self._args.resource}" is {found.gvr} here, not '
                                       f'{self._target.gvr} as in context {self._target_from}'))
            return
        self._provider.offer(name, self._clients[name])
        self._offered.add(name)

    def _begin(self, target: resolve.Resolved, name: str) -> None:
        """The first context's answer: make the informer of its type and start it."""
        args = self._args
        self._target, self._target_from = target, name
        self._namespace = "" if not target.namespaced or args.all_namespaces else (
            args.namespace or self._default_namespace or "default")
        selector = str(self._selector) or None

        def tweak(options: ListOptions) -> None:
            options.label_selector = selector

        self._factory = MultiClusterInformerFactory(self._provider, namespace=self._namespace,
                                                    tweak_list_options=tweak)
        self._informer = self._factory.for_resource(target.gvr)
        if not args.once:
            self._informer.add_event_handler(table.ClusterEventPrinter(
                self._out, max(map(len, self._names)), self._on_broken_pipe))
        self._factory.start(self._stop)

    def _give_up(self, name: str, error: CommandError) -> None:
        self._outages.failed(name, error.message)
        self._failed[name] = error

    # -- the clusters' informers ------------------------------------------------------------------

    def _look(self) -> set[str]:
        """Report each engaged cluster's errors and recoveries; the clusters that synced."""
        if self._informer is None or self._target is None:
            return set()
        synced: set[str] = set()
        what = f"list {self._target.gvr.group_resource}"
        for name, status in self._informer.cluster_status().items():
            if name in self._failed:
                continue
            error = status.last_error
            if status.synced:
                synced.add(name)
            if error is not None and not _routine(error):
                failure = command_error(error, self._hosts[name], what)
                self._outages.failed(name, failure.message)
                if self._args.once and not status.synced and isinstance(error, FATAL):
                    self._failed[name] = failure
            elif status.synced:
                self._outages.listed(name)
        return synced

    # -- the two ways to run ----------------------------------------------------------------------

    def stream(self) -> int:
        """Print every cluster's events until ``stop``; each context joins once it answers."""
        while not self._stop.is_set():
            self._take_answers(POLL)
            self._look()
            if len(self._failed) == len(self._names):
                return EXIT_NO_CLUSTERS  # nothing left to watch
        return EXIT_OK

    def once(self) -> int:
        """Wait until every context synced or was given up on (or ``--timeout``); the table."""
        while True:
            self._take_answers(POLL)
            synced = self._look()
            waiting = [name for name in self._names if name not in synced and name not in self._failed]
            if not waiting:
                break
            if self._stop.is_set():
                return EXIT_OK
            if self._startup.expired():
                for name in waiting:
                    self._give_up(name, self._late(name))
                break
        listed: dict[str, list[Any]] = {}
        if self._informer is not None:
            lister = self._informer.lister()
            listed = {name: lister.cluster(name).list() for name in self._names if name in synced}
        if listed:
            table.print_cluster_table(self._out, listed, self._target is not None and self._target.namespaced
                                      and not self._namespace, datetime.datetime.now(datetime.timezone.utc))
            if not any(listed.values()):
                print("No resources found.", file=sys.stderr, flush=True)
        if len(listed) == len(self._names):
            return EXIT_OK
        return EXIT_SOME_CLUSTERS if listed else EXIT_NO_CLUSTERS

    def _late(self, name: str) -> CommandError:
        """Why context ``name`` did not list within ``--timeout``."""
        timeout, where = self._startup.timeout, self._hosts[name]
        with self._lock:
            connected = name in self._clients
        plugin = None if connected else kubeconfig.credential_plugin(self._path, name)
        if plugin is not None:  # still running: its thread kills it now
            return kubeconfig.plugin_timeout(*plugin, timeout)
        if name not in self._offered or self._informer is None or self._target is None:
            return CommandError(EXIT_UNREACHABLE, f"the server at {where} did not answer discovery "
                                                  f"within {timeout:g}s")
        resource = self._target.gvr.group_resource
        status = self._informer.cluster_status().get(name)
        if status is not None and status.last_error is not None:
            return command_error(status.last_error, where, f"list {resource}")
        return CommandError(EXIT_ERROR, f"the first list of {resource} did not complete within {timeout:g}s")

    def close(self) -> None:
        """Stop the informers, break off discovery in flight, join its threads, close the clients."""
        self._ctx.cancel()
        if self._factory is not None:
            self._factory.shutdown()
        _threads.join_all(self._threads, STOP_TIMEOUT)
        with self._lock:
            self._closed = True
            clients, self._clients = self._clients, {}
        for api_client in clients.values():
            api_client.close()


def _routine(error: BaseException) -> bool:
    """An error the reflector answers with a relist, no outage by itself: an expired watch
    (410), or one closed at once (a server stopping: the relist's own error tells)."""
    return errors.is_expired(error) or isinstance(error, errors.VeryShortWatchError)


def _client(path: str | None, context_name: str, ctx: context.Context, timeout: float) -> Any:
    """A new client for context ``context_name``; its credential plugin is killed once ``ctx``
    is cancelled (a :class:`CommandError` saying it did not finish within ``timeout``)."""
    from kubernetes.client import ApiClient, Configuration

    from kinformer.clusters import credentials

    configuration = type.__call__(Configuration)  # not a copy of the default one, as the loader's
    configuration.host = ""  # the loader sets it only from a server: none stays empty
    try:
        merger = credentials.merged(path or os.environ.get("KUBECONFIG") or "~/.kube/config")
        credentials.load_context(merger, context_name, configuration, ctx, persist=False)
    except credentials.PluginStopped as err:
        raise kubeconfig.plugin_timeout(err.command, err.user, timeout) from None
    except Exception as err:
        raise CommandError(EXIT_CONFIG, f"cannot use context {context_name}: "
                                        f"{kubeconfig.one_line(err)}") from None
    cluster = merger.config["contexts"].get_with_name(context_name)["context"].safe_get("cluster")
    problem = kubeconfig.server_problem(configuration.host, cluster)
    if problem:
        raise CommandError(EXIT_CONFIG, f"cannot use context {context_name}: {problem}")
    return ApiClient(configuration=configuration)

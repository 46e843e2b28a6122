"""``kinformer watch``: the command line and the watch itself.

RESOURCE resolves as kubectl resolves it (:mod:`~kinformer.cli.watch.resolve`), against the
server of the kubeconfig, a pod's service account or an embedded server
(:mod:`~kinformer.cli.watch.kubeconfig`). One shared informer lists and watches it; every change
prints one line (event type, ``namespace/name``, resourceVersion) and ``--once`` prints a table
of the cache after the first list and exits (:mod:`~kinformer.cli.watch.table`). A server URL
ending in ``/clusters/*`` (kcp's, or ``kinformer serve --logical-clusters``' context
``kinformer-all-clusters``) makes the informer cluster-aware: lines and rows then name each
object's logical cluster first. Failures print one line on stderr and exit with a code of their
own (:mod:`~kinformer.cli.watch.exits`).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any, TextIO

from kinformer import _threads, context, errors
from kinformer.cache import cluster as _cluster
from kinformer.cache import labels
from kinformer.cli import options
from kinformer.cli.watch import contexts, kubeconfig, resolve, table
from kinformer.cli.watch.exits import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    CommandError,
    command_error,
    exit_codes_epilog,
)
from kinformer.client import listwatch
from kinformer.informer import SharedIndexInformer
from kinformer.sharding import ShardSelector

SYNC_POLL = 0.2  # seconds between looks at the informer's last error while waiting for the list
STOP_POLL = 0.1  # seconds between looks at Ctrl-C while discovery is in flight


def parse_shard(text: str) -> ShardSelector:
    """An argparse type: ``I/N`` as shard I of N equal shards."""
    index, slash, count = text.partition("/")
    try:
        if not slash:
            raise ValueError(text)
        return ShardSelector.for_shard(int(index), int(count))
    except (ValueError, errors.ShardSelectorError):
        raise argparse.ArgumentTypeError(
            f"invalid value {text!r}: must be I/N with 0 <= I < N, e.g. 0/3") from None


def add_parser(subparsers: Any) -> None:
    """Register ``watch`` and its options."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "watch",
        help="watch a resource type through an informer, like kubectl get -w",
        description="List and watch RESOURCE through a shared informer and print one line per "
        "change: event type, namespace/name and resourceVersion. RESOURCE resolves as kubectl "
        "resolves it: plural, singular, short name or kind, optionally as resource.group. "
        "A context whose server ends in /clusters/* watches every logical cluster: each line "
        "and row then names its cluster first, in a CLUSTER column.",
        epilog=exit_codes_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("resource", metavar="RESOURCE",
                        help="e.g. configmaps, cm, deploy, widgets.example.com")
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", default=None,
                       help="namespace to watch (default: the kubeconfig context's, else default)")
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="watch every namespace")
    parser.add_argument("-l", "--selector", default="", help="label selector, e.g. app=web,tier!=db")
    parser.add_argument("--shard", type=parse_shard, default=None, metavar="I/N",
                        help="only shard I of N equal shards of the objects' uids, e.g. 0/3 "
                        "(the server filters when it shards lists, else kinformer does)")
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config; "
                             "in a pod without either, its service account)")
    parser.add_argument("--context", default=None, help="kubeconfig context (default: the current one)")
    parser.add_argument("--all-contexts", action="store_true",
                        help="watch every context of the kubeconfig at once, each a cluster named "
                        "after its context, in a CLUSTER column first")
    parser.add_argument("--once", action="store_true", help="print a table after the first list and exit")
    parser.add_argument("--embedded", action="store_true",
                        help="start a fresh embedded API server with a few ConfigMaps instead")
    parser.add_argument("--timeout", type=options.seconds(positive=True), default=30.0,
                        help="seconds to wait for discovery and the first list (default 30)")
    parser.set_defaults(func=run, log_level=logging.WARNING)


# ---- the command ------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Run ``kinformer watch``; returns the exit code. Blocks until Ctrl-C/SIGTERM or ``--once``."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()
        signal.signal(signum, previous[signum])  # a second Ctrl-C interrupts at once

    previous: dict[int, Any] = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    broken = threading.Event()  # stdout's reader went away (| head): stop quietly

    def on_broken_pipe() -> None:
        broken.set()
        stop.set()

    try:
        return _run(args, stop, sys.stdout, on_broken_pipe)
    except CommandError as err:
        print(f"error: {err.message}", file=sys.stderr, flush=True)
        return err.code
    except BrokenPipeError:
        broken.set()
        return EXIT_OK
    finally:
        if broken.is_set():
            _silence_stdout()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run(args: argparse.Namespace, stop: threading.Event, out: TextIO,
         on_broken_pipe: Callable[[], None]) -> int:
    try:
        selector = labels.parse_selector(args.selector)
    except errors.LabelSelectorError as err:
        raise CommandError(EXIT_USAGE, str(err)) from None
    startup = _Deadline(stop, args.timeout)
    try:
        if args.all_contexts:
            return contexts.watch_all_contexts(args, selector, stop, out, on_broken_pipe, startup)
        return _watch(args, selector, args.shard, stop, out, on_broken_pipe, startup)
    finally:
        startup.close()


def _watch(args: argparse.Namespace, selector: labels.Selector, shard: ShardSelector | None,
           stop: threading.Event, out: TextIO, on_broken_pipe: Callable[[], None],
           startup: _Deadline) -> int:
    with contextlib.ExitStack() as connection:
        try:  # a credential plugin that runs is killed at --timeout or Ctrl-C
            api, default_namespace, where = connection.enter_context(kubeconfig.connect(
                args.kubeconfig, args.context, args.embedded, startup.ctx, args.timeout))
        except CommandError:
            if stop.is_set():
                return EXIT_OK  # interrupted while a credential plugin ran
            raise
        try:
            target = resolve.resolve_resource(api, args.resource, where, ctx=startup.ctx)
        except CommandError:
            if stop.is_set():
                return EXIT_OK  # interrupted while discovery was in flight
            if startup.timed_out:
                raise CommandError(EXIT_UNREACHABLE, f"the server at {where} did not answer discovery "
                                                     f"within {args.timeout:g}s") from None
            raise
        if not target.namespaced or args.all_namespaces:
            namespace = ""
        else:
            namespace = args.namespace or default_namespace or "default"
        lw = listwatch.ListWatch.for_resource(
            api, target.gvr, namespace, label_selector=str(selector) or None,
            shard_selector=shard)
        informer = SharedIndexInformer(lw, name=f"watch-{target.gvr.group_resource}")
        if not args.once:  # over every logical cluster (a host of /clusters/*): each line names its own
            informer.add_event_handler(
                table.ClusterEventPrinter(out, 0, on_broken_pipe) if informer.cluster_aware
                else table.EventPrinter(out, on_broken_pipe))
        ctx = context.Context("watch")
        thread = _threads.spawn(informer.run, _threads.thread_name("watch", target.gvr.group_resource), ctx)
        try:
            if not _wait_for_sync(informer, stop, startup, where, target):
                return EXIT_OK  # interrupted before the first list completed
            if args.once:
                cached = informer.get_indexer().list()
                show_namespace = target.namespaced and not namespace
                now = datetime.datetime.now(datetime.timezone.utc)
                if informer.cluster_aware:
                    table.print_cluster_table(out, _by_cluster(cached), show_namespace, now)
                else:
                    table.print_table(out, cached, show_namespace, now)
                if not cached:
                    scope = f" in {namespace} namespace" if target.namespaced and namespace else ""
                    print(f"No resources found{scope}.", file=sys.stderr, flush=True)
                return EXIT_OK
            while not stop.wait(1.0):
                error = informer.last_error()
                if isinstance(error, (errors.UnauthorizedError, errors.ForbiddenError)):
                    raise command_error(error, where, f"watch {target.gvr.group_resource}")
            return EXIT_OK
        finally:
            ctx.cancel()
            _threads.join_all([thread], 10.0)


def _by_cluster(objs: list[Any]) -> dict[str, list[Any]]:
    """``objs`` of a cluster-aware cache by the logical cluster each names, clusters sorted."""
    grouped: dict[str, list[Any]] = {}
    for obj in objs:
        grouped.setdefault(_cluster.cluster_of(obj), []).append(obj)
    return dict(sorted(grouped.items()))


def _wait_for_sync(informer: SharedIndexInformer, stop: threading.Event, startup: _Deadline, where: str,
                   target: resolve.Resolved) -> bool:
    """Wait for the first list; True once synced, False on stop; a fatal list error raises.

    Looks at ``has_synced()`` itself: the library's ``wait_for_sync`` with a timeout logs a
    warning each time it gives up, which would print one every :data:`SYNC_POLL` seconds."""
    while not informer.has_synced():
        if stop.wait(SYNC_POLL):
            return False
        if informer.has_synced():
            break
        error = informer.last_error()
        if isinstance(error, (errors.UnauthorizedError, errors.ForbiddenError, errors.NotFoundError)):
            raise command_error(error, where, f"list {target.gvr.group_resource}")
        if startup.expired():
            if error is None:
                raise CommandError(EXIT_ERROR, f"the first list of {target.gvr.group_resource} did not "
                                               f"complete within {startup.timeout:g}s")
            raise command_error(error, where, f"list {target.gvr.group_resource}")
    return True


class _Deadline:
    """The ``--timeout`` of discovery and the first list, and Ctrl-C while they are in flight.

    ``ctx`` is cancelled when ``stop`` is set, when ``timeout`` seconds have passed (then
    ``timed_out`` is True) or at :meth:`close`, whichever comes first; a request sent with it is
    broken off at once. The watching thread, ``kinformer-watch-deadline``, looks at ``stop``
    every :data:`STOP_POLL` seconds: a signal handler may only set an Event, never cancel a
    context itself (it runs on the main thread, which may hold the context's lock).
    """

    def __init__(self, stop: threading.Event, timeout: float) -> None:
        self.ctx = context.Context("watch-startup")
        self.timeout = timeout
        self.timed_out = False
        self._deadline = time.monotonic() + timeout
        self._closed = threading.Event()
        self._thread = _threads.spawn(self._watch, _threads.thread_name("watch", "deadline"), stop)

    def expired(self) -> bool:
        return time.monotonic() >= self._deadline

    def _watch(self, stop: threading.Event) -> None:
        while not self._closed.wait(STOP_POLL):
            if stop.is_set():
                break
            if self.expired():
                self.timed_out = True
                break
        self.ctx.cancel()

    def close(self) -> None:
        self._closed.set()
        _threads.join_all([self._thread], 5.0)


def _silence_stdout() -> None:
    """Point stdout at devnull so the interpreter's final flush cannot fail on a closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass

"""``kinformer watch``: an informer-backed ``kubectl get -w`` for any served resource type.

RESOURCE resolves as kubectl resolves it, from the server's discovery documents: plural,
singular, short name or kind, optionally qualified as ``resource.group`` or
``resource.version.group``. One shared informer lists and watches it; every change prints one
line (event type, ``namespace/name``, resourceVersion). ``--once`` prints a table of the cache
after the first list and exits. Failures print one line on stderr and exit with a code of their
own (see :data:`EXIT_CODES`).
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any, TextIO

from kinformer import _threads, context, errors, handlers, meta
from kinformer.cache import labels
from kinformer.client import discovery, listwatch
from kinformer.gvr import GroupVersionResource, split_group_version
from kinformer.informer import SharedIndexInformer
from kinformer.sharding import ShardSelector
from kinformer.testing import apiserver

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_UNKNOWN_RESOURCE = 3
EXIT_UNREACHABLE = 4
EXIT_UNAUTHORIZED = 5
EXIT_FORBIDDEN = 6
EXIT_CONFIG = 7

EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "success (--once printed the table; a watch was stopped with Ctrl-C)"),
    (EXIT_ERROR, "any other error (the first list did not complete within --timeout)"),
    (EXIT_USAGE, "bad arguments"),
    (EXIT_UNKNOWN_RESOURCE, "the server has no such resource type, or it cannot be listed and watched"),
    (EXIT_UNREACHABLE, "the server cannot be reached (refused, no answer within --timeout, TLS "
                       "failure), or it is not a Kubernetes API server"),
    (EXIT_UNAUTHORIZED, "the server answered 401 Unauthorized"),
    (EXIT_FORBIDDEN, "the server answered 403 Forbidden"),
    (EXIT_CONFIG, "the kubeconfig (or, in a pod, the service account) cannot be read, or no such context"),
)

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"  # a pod's token, CA, namespace
REQUEST_TIMEOUT = (5.0, 30.0)  # (connect, read) seconds for one discovery GET
SYNC_POLL = 0.2  # seconds between looks at the informer's last error while waiting for the list
STOP_POLL = 0.1  # seconds between looks at Ctrl-C while discovery is in flight
EMBEDDED_SEED = {  # namespace -> ConfigMap names seeded in an --embedded server
    "default": ("app-config", "feature-flags", "routing"),
    "kube-system": ("coredns", "kube-proxy"),
}


def parse_shard(text: str | None) -> ShardSelector | None:
    """``I/N`` as shard I of N equal shards; None for None. A bad value is a usage error."""
    if text is None:
        return None
    index, slash, count = text.partition("/")
    try:
        if not slash:
            raise ValueError(text)
        return ShardSelector.for_shard(int(index), int(count))
    except (ValueError, errors.ShardSelectorError):
        raise CommandError(
            EXIT_USAGE, f"--shard must be I/N with 0 <= I < N, e.g. 0/3 (got {text!r})") from None


class CommandError(Exception):
    """A failure that ends the command: ``message`` goes to stderr, ``code`` is the exit code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def exit_codes_epilog() -> str:
    """The exit codes, formatted for an argparse epilog."""
    lines = ["exit codes:"]
    lines += [f"  {code}  {text}" for code, text in EXIT_CODES]
    return "\n".join(lines)


def add_parser(subparsers: Any) -> None:
    """Register ``watch`` and its options."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "watch",
        help="watch a resource type through an informer, like kubectl get -w",
        description="List and watch RESOURCE through a shared informer and print one line per "
        "change: event type, namespace/name and resourceVersion. RESOURCE resolves as kubectl "
        "resolves it: plural, singular, short name or kind, optionally as resource.group.",
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
    parser.add_argument("--shard", default=None, metavar="I/N",
                        help="only shard I of N equal shards of the objects' uids, e.g. 0/3 "
                        "(the server filters when it shards lists, else kinformer does)")
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config; "
                             "in a pod without either, its service account)")
    parser.add_argument("--context", default=None, help="kubeconfig context (default: the current one)")
    parser.add_argument("--once", action="store_true", help="print a table after the first list and exit")
    parser.add_argument("--embedded", action="store_true",
                        help="start a fresh embedded API server with a few ConfigMaps instead")
    parser.add_argument("--timeout", type=float, default=30.0,
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
    logging.getLogger("urllib3").setLevel(logging.ERROR)  # its retry warnings repeat our one line
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
    if args.timeout <= 0:
        raise CommandError(EXIT_USAGE, "--timeout must be positive")
    shard = parse_shard(args.shard)
    startup = _Deadline(stop, args.timeout)
    try:
        return _watch(args, selector, shard, stop, out, on_broken_pipe, startup)
    finally:
        startup.close()


def _watch(args: argparse.Namespace, selector: labels.Selector, shard: ShardSelector | None,
           stop: threading.Event, out: TextIO, on_broken_pipe: Callable[[], None],
           startup: _Deadline) -> int:
    with _client(args) as (api, default_namespace, where):
        try:
            target = resolve_resource(api, args.resource, where, ctx=startup.ctx)
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
        printer = EventPrinter(out, on_broken_pipe)
        if not args.once:
            informer.add_event_handler(printer)
        ctx = context.Context("watch")
        thread = _threads.spawn(informer.run, _threads.thread_name("watch", target.gvr.group_resource), ctx)
        try:
            if not _wait_for_sync(informer, stop, startup, where, target):
                return EXIT_OK  # interrupted before the first list completed
            if args.once:
                cached = informer.get_indexer().list()
                print_table(out, cached, show_namespace=target.namespaced and not namespace,
                            now=datetime.datetime.now(datetime.timezone.utc))
                if not cached:
                    scope = f" in {namespace} namespace" if target.namespaced and namespace else ""
                    print(f"No resources found{scope}.", file=sys.stderr, flush=True)
                return EXIT_OK
            while not stop.wait(1.0):
                error = informer.last_error()
                if isinstance(error, (errors.UnauthorizedError, errors.ForbiddenError)):
                    raise _command_error(error, where, f"watch {target.gvr.group_resource}")
            return EXIT_OK
        finally:
            ctx.cancel()
            _threads.join_all([thread], 10.0)


def _wait_for_sync(informer: SharedIndexInformer, stop: threading.Event, startup: _Deadline, where: str,
                   target: Resolved) -> bool:
    """Wait for the first list; True once synced, False on stop; a fatal list error raises."""
    while not informer.wait_for_sync(timeout=SYNC_POLL, stop=stop):
        if stop.is_set():
            return False
        error = informer.last_error()
        if isinstance(error, (errors.UnauthorizedError, errors.ForbiddenError, errors.NotFoundError)):
            raise _command_error(error, where, f"list {target.gvr.group_resource}")
        if startup.expired():
            if error is None:
                raise CommandError(EXIT_ERROR, f"the first list of {target.gvr.group_resource} did not "
                                               f"complete within {startup.timeout:g}s")
            raise _command_error(error, where, f"list {target.gvr.group_resource}")
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


def _command_error(error: BaseException, where: str, what: str) -> CommandError:
    """The exit code and one-line message for an error talking to the server."""
    if isinstance(error, errors.UnauthorizedError):
        return CommandError(EXIT_UNAUTHORIZED, f"{what}: Unauthorized (401) from {where}: "
                                               "check the credentials in the kubeconfig")
    if isinstance(error, errors.ForbiddenError):
        return CommandError(EXIT_FORBIDDEN, f"{what}: Forbidden (403): {error.message or error}")
    if isinstance(error, errors.NotFoundError):
        return CommandError(EXIT_UNKNOWN_RESOURCE, f"{what}: the server could not find it (404)")
    if isinstance(error, (errors.TransportError, OSError)):
        return CommandError(EXIT_UNREACHABLE, f"unable to connect to the server at {where}: {error}")
    if isinstance(error, errors.DecodeError):
        return CommandError(EXIT_ERROR, f"{error} (from {where})")
    return CommandError(EXIT_ERROR, f"{what}: {error}")


# ---- the client -------------------------------------------------------------------------------


@contextmanager
def _client(args: argparse.Namespace) -> Iterator[tuple[Any, str, str]]:
    """``(api_client, default namespace, server URL)`` for the kubeconfig or an embedded server."""
    from kubernetes import client

    if args.embedded:
        if args.kubeconfig or args.context:
            raise CommandError(EXIT_USAGE, "--embedded cannot be combined with --kubeconfig or --context")
        with _embedded_server() as server:
            embedded = server.api_client()
            try:
                yield embedded, "default", server.url
            finally:
                embedded.close()
        return
    configuration = client.Configuration()
    default_namespace = _load_kubeconfig(args.kubeconfig, args.context, configuration)
    api: Any = client.ApiClient(configuration)
    try:
        yield api, default_namespace, str(configuration.host)
    finally:
        api.close()


def _load_kubeconfig(path: str | None, context_name: str | None, configuration: Any) -> str:
    """Load ``path`` (``context_name``) into ``configuration``; returns the context's namespace."""
    from kubernetes import config as kube_config
    from kubernetes.config.config_exception import ConfigException

    config: Any = kube_config
    config_file = path or None  # None: $KUBECONFIG (its files merged) or ~/.kube/config, as kubectl
    shown = config_file or os.environ.get("KUBECONFIG") or "~/.kube/config"
    if _in_a_pod_without_kubeconfig(path, context_name):
        return _load_in_cluster(configuration)
    if config_file is not None and not os.path.exists(config_file):
        raise CommandError(EXIT_CONFIG, f"kubeconfig {shown} does not exist")
    try:
        contexts, active = config.list_kube_config_contexts(config_file=config_file)
    except (ConfigException, OSError) as err:
        raise CommandError(EXIT_CONFIG, f"cannot use kubeconfig {shown}: {_one_line(err)}") from None
    except Exception as err:  # not YAML, or YAML of another shape: the loader raises anything
        raise CommandError(EXIT_CONFIG, f"kubeconfig {shown} is not a valid kubeconfig: "
                                        f"{_one_line(err)}") from None
    names = [str(c.get("name")) for c in contexts or () if isinstance(c, dict)]
    if context_name and context_name not in names:
        raise CommandError(EXIT_CONFIG, f'kubeconfig {shown} has no context "{context_name}"; '
                                        f"it has: {', '.join(names) or 'none'}")
    try:
        config.load_kube_config(config_file=config_file, context=context_name,
                                client_configuration=configuration)
    except (ConfigException, OSError) as err:
        raise CommandError(EXIT_CONFIG, f"cannot use kubeconfig {shown}: {_one_line(err)}") from None
    except Exception as err:
        raise CommandError(EXIT_CONFIG, f"kubeconfig {shown} is not a valid kubeconfig: "
                                        f"{_one_line(err)}") from None
    chosen = active
    if context_name:
        chosen = next((c for c in contexts if c.get("name") == context_name), active)
    return str(((chosen or {}).get("context") or {}).get("namespace") or "default")


def _in_a_pod_without_kubeconfig(path: str | None, context_name: str | None) -> bool:
    """Whether to use the pod's service account: kubectl's rule when no kubeconfig is given.

    That is: no ``--kubeconfig`` or ``--context``, no ``$KUBECONFIG``, no ``~/.kube/config``,
    and ``$KUBERNETES_SERVICE_HOST`` set (the kubelet sets it in every pod).
    """
    return (
        not path
        and not context_name
        and not os.environ.get("KUBECONFIG")
        and not os.path.exists(os.path.expanduser("~/.kube/config"))
        and bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    )


def _load_in_cluster(configuration: Any) -> str:
    """Load the pod's service account into ``configuration``; returns the pod's namespace.

    The token file is read again every minute (the kubelet rotates it).
    """
    from kubernetes.config import incluster_config
    from kubernetes.config.config_exception import ConfigException

    in_cluster: Any = incluster_config  # untyped
    loader = in_cluster.InClusterConfigLoader(
        token_filename=os.path.join(SERVICE_ACCOUNT_DIR, "token"),
        cert_filename=os.path.join(SERVICE_ACCOUNT_DIR, "ca.crt"),
    )
    try:
        loader.load_and_set(configuration)
    except (ConfigException, OSError) as err:
        raise CommandError(
            EXIT_CONFIG, f"cannot use the pod's service account: {_one_line(err)}"
        ) from None
    try:
        with open(os.path.join(SERVICE_ACCOUNT_DIR, "namespace"), encoding="utf-8") as f:
            return f.read().strip() or "default"
    except OSError:
        return "default"


@contextmanager
def _embedded_server() -> Iterator[Any]:
    """A started FakeAPIServer seeded with :data:`EMBEDDED_SEED`; its kubeconfig path on stderr."""
    configmaps = GroupVersionResource("", "v1", "configmaps")
    with apiserver.FakeAPIServer() as server, tempfile.TemporaryDirectory(prefix="kinformer-watch-") as tmp:
        for namespace, names in EMBEDDED_SEED.items():
            server.bulk_create(configmaps, [
                {"metadata": {"name": name, "namespace": namespace, "labels": {"seeded": "true"}},
                 "data": {"key": name}}
                for name in names
            ])
        path = server.write_kubeconfig(os.path.join(tmp, "kubeconfig"))
        print(f"embedded API server at {server.url} (kubeconfig: {path})", file=sys.stderr, flush=True)
        yield server


def _one_line(err: BaseException) -> str:
    """The whole message of ``err`` on one line (a YAML error spans several)."""
    text = str(err).strip() or type(err).__name__
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


# ---- resolving RESOURCE -----------------------------------------------------------------------


@dataclass(frozen=True)
class Resolved:
    """A resource type found in discovery: where to list it and how it is addressed."""

    gvr: GroupVersionResource
    kind: str
    namespaced: bool


def resolve_resource(api: Any, name: str, where: str = "", ctx: context.Context | None = None) -> Resolved:
    """Resolve ``name`` as kubectl does, reading discovery through ``api`` (an ApiClient).

    Accepts a plural, singular, short name or kind (any case), alone or as ``resource.group`` or
    ``resource.version.group``. The core group wins over the others, then groups in the server's
    order, each at its preferred version first. Raises :class:`CommandError` (unknown resource,
    unreachable server or not an API server, 401, 403). Cancelling ``ctx`` breaks off the
    discovery request in flight.
    """
    wanted = name.strip().lower()
    if not wanted:
        raise CommandError(EXIT_USAGE, "RESOURCE must not be empty")
    entries = _discover(api, where or "the server", ctx)
    for candidate_name, group, version in _interpretations(wanted):
        for entry in entries:
            gvr = entry.group_version_resource
            if group is not None and gvr.group != group:
                continue
            if version is not None and gvr.version != version:
                continue
            kind = entry.group_version_kind.kind
            names = {gvr.resource, entry.singular_name, kind.lower(), *entry.short_names}
            if candidate_name in names:
                if not entry.listable:
                    raise CommandError(EXIT_UNKNOWN_RESOURCE,
                                       f"resource {gvr.group_resource} cannot be listed and watched")
                return Resolved(gvr, kind, entry.namespaced)
    raise CommandError(EXIT_UNKNOWN_RESOURCE, f'the server doesn\'t have a resource type "{name}"')


def _interpretations(wanted: str) -> list[tuple[str, str | None, str | None]]:
    """``(resource, group or None, version or None)`` readings of ``wanted``, most specific first."""
    if "." not in wanted:
        return [(wanted, None, None)]
    readings: list[tuple[str, str | None, str | None]] = []
    parts = wanted.split(".")
    if len(parts) >= 3:
        readings.append((parts[0], ".".join(parts[2:]), parts[1]))  # resource.version.group
    readings.append((parts[0], ".".join(parts[1:]), None))  # resource.group
    return readings


def _discover(api: Any, where: str, ctx: context.Context | None = None) -> list[discovery.APIResource]:
    """Every resource type the server serves, core first, each group's preferred version first.

    A group version whose document fails is left out, as kubectl leaves it, unless the failure
    is one every document would share (401, an unreachable server). A server whose group lists
    are missing (404) or not discovery documents is not a Kubernetes API server.
    """
    reader = discovery.CachedDiscoveryClient(api, request_timeout=REQUEST_TIMEOUT, ctx=ctx)
    try:
        group_versions, preferred = reader.server_group_versions()
    except (errors.NotFoundError, errors.MethodNotAllowedError, errors.DecodeError) as err:
        raise _not_an_api_server(where, err) from None
    except (errors.APIError, errors.TransportError) as err:
        raise _command_error(err, where, "discovery") from None
    if not group_versions:
        raise _not_an_api_server(where, "GET /api and /apis list no API versions")
    groups: dict[str, int] = {}  # group -> its place in the server's order
    for gv in group_versions:
        groups.setdefault(split_group_version(gv)[0], len(groups))
    group_versions.sort(key=lambda gv: (groups[split_group_version(gv)[0]], gv not in preferred))
    entries: list[discovery.APIResource] = []
    for gv in group_versions:
        try:
            entries += reader.api_resources(gv)
        except (errors.UnauthorizedError, errors.TransportError) as err:
            raise _command_error(err, where, "discovery") from None
        except (errors.APIError, errors.DecodeError):
            continue
    return entries


def _not_an_api_server(where: str, why: object) -> CommandError:
    if isinstance(why, errors.APIError):
        why = f"GET /api answered {why.status}"
    return CommandError(EXIT_UNREACHABLE, f"{where} is not a Kubernetes API server ({why})")


# ---- output -----------------------------------------------------------------------------------


class EventPrinter:
    """An informer event handler printing ``TYPE namespace/name resourceVersion``, one line each.

    Runs on the informer's handler thread (one at a time, in event order). Objects of the initial
    list print as ADDED; a resync that changed nothing prints nothing.
    """

    def __init__(self, out: TextIO, on_broken_pipe: Callable[[], None] | None = None) -> None:
        self._out = out
        self._on_broken_pipe = on_broken_pipe

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        self._print("ADDED", obj)

    def on_update(self, old: Any, new: Any) -> None:
        if meta.resource_version(old) == meta.resource_version(new):
            return
        self._print("MODIFIED", new)

    def on_delete(self, obj: Any) -> None:
        self._print("DELETED", handlers.deleted_object(obj))

    def _print(self, event: str, obj: Any) -> None:
        line = f"{event:<9} {_key(obj):<48} {meta.resource_version(obj) or ''}\n"
        try:
            self._out.write(line)
            self._out.flush()
        except (BrokenPipeError, ValueError):
            if self._on_broken_pipe is not None:
                self._on_broken_pipe()


def print_table(out: TextIO, objs: Sequence[Any], show_namespace: bool, now: datetime.datetime) -> None:
    """Print ``objs`` sorted by namespace and name as a kubectl-style table."""
    header = (["NAMESPACE"] if show_namespace else []) + ["NAME", "RESOURCEVERSION", "AGE"]
    rows = [header]
    for obj in sorted(objs, key=meta.namespace_and_name):
        row = [meta.namespace(obj)] if show_namespace else []
        row += [meta.name(obj), meta.resource_version(obj) or "", _age(_created(obj), now)]
        rows.append(row)
    if len(rows) == 1:
        return
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for row in rows:
        out.write("   ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n")
    out.flush()


def _key(obj: Any) -> str:
    namespace, name = meta.namespace(obj), meta.name(obj)
    return f"{namespace}/{name}" if namespace else name


def _created(obj: Any) -> Any:
    """``metadata.creationTimestamp`` of decoded JSON, or None."""
    metadata = meta.metadata(obj)
    return metadata.get("creationTimestamp") if isinstance(metadata, dict) else None


def _age(timestamp: Any, now: datetime.datetime) -> str:
    """kubectl's short age: ``42s``, ``5m``, ``3h``, ``2d``; ``<unknown>`` without a timestamp."""
    if not isinstance(timestamp, str) or not timestamp:
        return "<unknown>"
    try:
        created = datetime.datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.timezone.utc)
    except ValueError:
        return "<unknown>"
    seconds = max(0, int((now - created).total_seconds()))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    if seconds < 2 * 86400:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def _silence_stdout() -> None:
    """Point stdout at devnull so the interpreter's final flush cannot fail on a closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass

"""``kinformer watch RESOURCE --all-contexts``: every context of the kubeconfig at once.

Each context of the kubeconfig is a member cluster, named after the context, of a
:class:`~kinformer.MultiClusterInformerFactory` over a
:class:`~kinformer.KubeconfigContextsProvider`; every line and table row starts with its
cluster. RESOURCE is resolved in every context at once (:mod:`~kinformer.cli.watch.resolve`),
and the first context, in the kubeconfig's order, that knows it gives the type watched
everywhere. A context that cannot be reached or refuses the credentials prints one ``error:
cluster NAME: ...`` line on stderr and is retried with backoff while the others go on; a
context whose server does not serve the type is left out after its error line.
:mod:`~kinformer.cli.watch.app` hands over to :func:`watch_all_contexts`.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any, TextIO

from kinformer import _threads, errors
from kinformer.cache import labels
from kinformer.cli.watch import kubeconfig, resolve, table
from kinformer.cli.watch.exits import (
    EXIT_CONFIG,
    EXIT_ERROR,
    EXIT_OK,
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

POLL = 0.2  # seconds between looks at every cluster's status
FATAL = (errors.UnauthorizedError, errors.ForbiddenError, errors.NotFoundError)  # no use waiting


def watch_all_contexts(args: argparse.Namespace, selector: labels.Selector, stop: threading.Event,
                       out: TextIO, on_broken_pipe: Callable[[], None], startup: Any) -> int:
    """Watch RESOURCE in every context of the kubeconfig; the exit code.

    Streams until ``stop`` (exit 0), whatever the clusters do. With ``--once`` prints the table
    of every cluster that listed within ``--timeout`` and exits 0 when all did, else with the
    code of the first (in the kubeconfig's order) that did not.
    """
    if args.context or args.embedded or args.shard is not None:
        raise CommandError(EXIT_USAGE, "--all-contexts cannot be combined with --context, --embedded "
                                       "or --shard")
    path = args.kubeconfig or None
    try:
        contexts = KubeconfigContextsProvider(path).contexts
    except errors.ConfigurationError as err:
        raise CommandError(EXIT_CONFIG, str(err)) from None
    if not contexts:
        raise CommandError(EXIT_CONFIG, f"kubeconfig {path or 'in $KUBECONFIG'} has no contexts")
    from kubernetes import client

    default_namespace = kubeconfig.load_kubeconfig(path, None, client.Configuration())
    found, hosts = _resolve_everywhere(path, contexts, args.resource, startup)
    if stop.is_set():
        return EXIT_OK
    resolved = [r for r in found.values() if isinstance(r, resolve.Resolved)]
    if not resolved:
        raise next(r for r in found.values() if isinstance(r, CommandError))
    target = resolved[0]
    failed: dict[str, CommandError] = {}
    watched: list[str] = []
    for name, result in found.items():
        if isinstance(result, CommandError):
            _say_error(name, result.message)
            failed[name] = result
        if not isinstance(result, CommandError) or (result.code != EXIT_UNKNOWN_RESOURCE and not args.once):
            watched.append(name)  # an unreachable one may come back: its informer retries
    namespace = "" if not target.namespaced or args.all_namespaces else (
        args.namespace or default_namespace or "default")

    def tweak(options: ListOptions) -> None:
        options.label_selector = str(selector) or None

    factory = MultiClusterInformerFactory(KubeconfigContextsProvider(path, watched), namespace=namespace,
                                          tweak_list_options=tweak)
    informer = factory.for_resource(target.gvr)
    if not args.once:
        informer.add_event_handler(table.ClusterEventPrinter(out, max(map(len, watched)), on_broken_pipe))
    reflector_log = logging.getLogger("kinformer.reflector")
    saved_level = reflector_log.level
    if not logging.getLogger().isEnabledFor(logging.DEBUG):  # without -v: the error lines say it
        reflector_log.setLevel(logging.ERROR)  # with the cluster, which a reflector's warning cannot
    factory.start(stop)
    try:
        errors_seen: dict[str, str] = {name: err.message for name, err in failed.items()}
        if args.once:
            return _once(args, informer, watched, failed, errors_seen, hosts, stop, out, startup, target,
                         show_namespace=target.namespaced and not namespace)
        while not stop.wait(POLL):
            _report(informer, errors_seen, hosts, target)
        return EXIT_OK
    finally:
        factory.shutdown()
        reflector_log.setLevel(saved_level)


def _once(args: argparse.Namespace, informer: MultiClusterInformer, watched: list[str],
          failed: dict[str, CommandError], errors_seen: dict[str, str], hosts: dict[str, str],
          stop: threading.Event,
          out: TextIO, startup: Any, target: resolve.Resolved, show_namespace: bool) -> int:
    """Wait for every cluster's first list, print the table of those that listed."""
    what = f"list {target.gvr.group_resource}"
    while True:
        statuses = _report(informer, errors_seen, hosts, target)
        pending = [name for name in watched if name not in failed
                   and not (name in statuses and statuses[name].synced)]
        for name in pending:
            error = statuses[name].last_error if name in statuses else None
            if isinstance(error, FATAL):
                failed[name] = command_error(error, hosts[name], what)
        pending = [name for name in pending if name not in failed]
        if not pending:
            break
        if stop.wait(POLL):
            return EXIT_OK
        if startup.expired():
            for name in pending:
                error = statuses[name].last_error if name in statuses else None
                failed[name] = command_error(error, hosts[name], what) if error is not None else (
                    CommandError(EXIT_ERROR, f"the first list of {target.gvr.group_resource} did not "
                                             f"complete within {args.timeout:g}s"))
                if errors_seen.get(name) != failed[name].message:
                    _say_error(name, failed[name].message)
            break
    lister = informer.lister()
    listed = {name: lister.cluster(name).list() for name in watched if name not in failed}
    table.print_cluster_table(out, listed, show_namespace, datetime.datetime.now(datetime.timezone.utc))
    if not any(listed.values()):
        print("No resources found.", file=sys.stderr, flush=True)
    first = next((failed[name] for name in hosts if name in failed), None)  # the kubeconfig's order
    return EXIT_OK if first is None else first.code


def _report(informer: MultiClusterInformer, errors_seen: dict[str, str], hosts: dict[str, str],
            target: resolve.Resolved) -> dict[str, Any]:
    """Every cluster's status; a line on stderr for each error not reported yet."""
    statuses = informer.cluster_status()
    for name, status in statuses.items():
        if status.last_error is None:
            continue
        message = command_error(status.last_error, hosts[name],
                                f"list {target.gvr.group_resource}").message
        if errors_seen.get(name) != message:
            errors_seen[name] = message
            _say_error(name, message)
    return statuses


def _say_error(cluster: str, message: str) -> None:
    print(f"error: cluster {cluster}: {message}", file=sys.stderr, flush=True)


def _resolve_everywhere(path: str | None, contexts: list[str], resource: str, startup: Any,
                        ) -> tuple[dict[str, resolve.Resolved | CommandError], dict[str, str]]:
    """RESOURCE as each context's server resolves it, or the error that stopped it, and each
    context's server URL; every context at once, so one that never answers costs
    ``--timeout`` once, not once per context."""
    found: dict[str, resolve.Resolved | CommandError] = {}
    hosts = {name: f"the server of context {name}" for name in contexts}
    lock = threading.Lock()  # guards found and hosts

    def one(name: str) -> None:
        result: resolve.Resolved | CommandError
        try:
            api_client = _client(path, name)
        except CommandError as err:
            result = err
        else:
            where = str(api_client.configuration.host)
            with lock:
                hosts[name] = where
            try:
                result = resolve.resolve_resource(api_client, resource, where, ctx=startup.ctx)
            except CommandError as err:
                result = err
                if startup.timed_out:
                    result = CommandError(EXIT_UNREACHABLE, f"the server at {where} did not answer "
                                                            f"discovery within {startup.timeout:g}s")
            finally:
                api_client.close()
        with lock:
            found[name] = result

    threads = [_threads.spawn(one, _threads.thread_name("watch-discovery", name), name) for name in contexts]
    _threads.join_all(threads, startup.timeout + 10.0)
    with lock:
        return {name: found.get(name, CommandError(EXIT_UNREACHABLE, "discovery did not end"))
                for name in contexts}, dict(hosts)


def _client(path: str | None, context_name: str) -> Any:
    from kubernetes.config import kube_config as loader

    kube_config: Any = loader  # untyped
    try:
        return kube_config.new_client_from_config(config_file=path, context=context_name,
                                                  persist_config=False)
    except Exception as err:
        raise CommandError(EXIT_CONFIG, f"cannot use context {context_name}: "
                                        f"{kubeconfig.one_line(err)}") from None

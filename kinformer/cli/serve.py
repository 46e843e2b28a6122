"""``kinformer serve``: run a FakeAPIServer in the foreground until Ctrl-C or SIGTERM.

Writes a kubeconfig for it (kubectl, client-go and the Python client work unchanged), whose
cluster, user and context are named ``--context`` (default ``kinformer``) so that several
servers' kubeconfigs merge, logs the URL, and exits 0 after a clean stop. A start that fails
prints one ``error:`` line and exits 1 (cannot listen, cannot write the kubeconfig) or 2 (bad
arguments), leaving nothing behind; a ``--kubeconfig`` file that exists and is not one a serve
wrote (:func:`written_by_serve`) is not overwritten (exit 1). With ``--logical-clusters`` it serves kcp's
``/clusters/<name>`` paths, and the kubeconfig gains a context for ``/clusters/*``
(:func:`all_clusters_context`; :data:`ALL_CLUSTERS_CONTEXT` by default).

Without ``--kubeconfig`` the kubeconfig goes in a ``kinformer-serve-*`` temporary directory,
removed at exit and locked by this process while it runs; one left by a serve killed outright
(``SIGKILL``), its lock released by the kernel, is removed by the next serve to start, as is a
dead server's TLS directory. With ``--kubeconfig`` no temporary directory is made at all (with
``--token`` the server's TLS material still is).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

from kinformer.cli import options
from kinformer.testing import _tempdirs
from kinformer.testing.apiserver import TLS_DIR_PREFIX, FakeAPIServer

log = logging.getLogger(__name__)

TOKEN_ENV = "KINFORMER_SERVE_TOKEN"
CONTEXT = "kinformer"  # the default name of the kubeconfig's cluster, user and context
ALL_CLUSTERS_SUFFIX = "-all-clusters"  # with --logical-clusters: the context to list and watch all
ALL_CLUSTERS_CONTEXT = CONTEXT + ALL_CLUSTERS_SUFFIX
WRITTEN_BY = "kinformer-serve"  # the kubeconfig extension that marks a file serve wrote itself
DIR_PREFIX = "kinformer-serve-"  # the temporary directory of a kubeconfig written without a path
EXIT_OK = 0
EXIT_ERROR = 1  # cannot listen, or cannot write the kubeconfig
EXIT_USAGE = 2


def _port(text: str) -> int:
    """An argparse type: a TCP port, 0 for any free one."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}: not a number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {port}: must be 0 to 65535")
    return port


def _name(text: str) -> str:
    """An argparse type: a kubeconfig entry's name (not empty, no surrounding blanks)."""
    if not text.strip() or text != text.strip():
        raise argparse.ArgumentTypeError(f"invalid name {text!r}: must be non-empty, without "
                                         "leading or trailing blanks")
    return text


def _token(text: str) -> str:
    """An argparse type: a bearer token (not empty: an empty one could not be sent)."""
    if not text:
        raise argparse.ArgumentTypeError("invalid token '': must not be empty (leave --token out "
                                         "to serve without one)")
    return text


def all_clusters_context(name: str = CONTEXT) -> str:
    """The context that lists and watches every logical cluster: ``NAME-all-clusters``."""
    return name + ALL_CLUSTERS_SUFFIX


def add_parser(subparsers: Any) -> None:
    """Register ``serve`` and its options."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve", help="run a fake Kubernetes API server in the foreground",
        description="Run a Kubernetes-compatible API server on loopback until Ctrl-C or SIGTERM.")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=0, help="port (default: any free port)")
    parser.add_argument("--kubeconfig", default="",
                        help="where to write the kubeconfig (default: a file in a temp dir)")
    parser.add_argument("--context", type=_name, default=CONTEXT, metavar="NAME",
                        help="name of the kubeconfig's cluster, user and context, so that several "
                        f"servers' kubeconfigs merge with KUBECONFIG=a:b (default {CONTEXT})")
    parser.add_argument("--token", type=_token, default=os.environ.get(TOKEN_ENV) or None,
                        help="require this bearer token; serves HTTPS with a throwaway CA "
                        f"(default: ${TOKEN_ENV}, which keeps it out of process listings; "
                        "empty or unset: no token)")
    parser.add_argument("--history-size", type=options.integer(minimum=1), default=10_000,
                        help="watch events kept for resuming (default 10000)")
    parser.add_argument("--bookmark-interval", type=options.seconds(positive=True), default=60.0,
                        help="seconds between watch bookmarks (default 60)")
    parser.add_argument("--feature-gates", default="", metavar="NAME=BOOL,...",
                        help="turn on gated features, as kube-apiserver's flag does, e.g. "
                        "ShardedListAndWatch=true (all off by default)")
    parser.add_argument("--logical-clusters", action="store_true",
                        help="serve kcp's logical clusters: URL/clusters/NAME for one, "
                        f"URL/clusters/* to list and watch all (kubeconfig context "
                        f"NAME{ALL_CLUSTERS_SUFFIX}, default {ALL_CLUSTERS_CONTEXT})")
    parser.set_defaults(func=run)


def parse_feature_gates(text: str) -> dict[str, bool]:
    """``Name=true,Other=false`` as a dict; raises ValueError for anything else."""
    gates: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, equals, value = item.partition("=")
        if not equals or value.lower() not in ("true", "false"):
            raise ValueError(f"{item!r} is not NAME=true or NAME=false")
        gates[name.strip()] = value.lower() == "true"
    return gates


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT or SIGTERM; returns 0 after a clean stop, 1 when it cannot start."""
    try:
        gates = FakeAPIServer.check_feature_gates(parse_feature_gates(args.feature_gates))
    except ValueError as err:
        print(f"error: --feature-gates: {err}", file=sys.stderr)
        return EXIT_USAGE
    if args.kubeconfig:
        folder = os.path.dirname(os.path.abspath(args.kubeconfig))
        if not os.path.isdir(folder):
            return _error(f"cannot write the kubeconfig {args.kubeconfig}: "
                          f"the directory {folder} does not exist")
        if os.path.lexists(args.kubeconfig) and not written_by_serve(args.kubeconfig):
            return _error(f"will not overwrite {args.kubeconfig}: it exists and is no kubeconfig "
                          "kinformer serve wrote; remove it or name another file")
    for prefix in (DIR_PREFIX, TLS_DIR_PREFIX):  # left by a serve killed outright: removed now
        _tempdirs.sweep(prefix)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    server = FakeAPIServer(host=args.host, port=args.port, token=args.token,
                           history_size=args.history_size,
                           bookmark_interval=args.bookmark_interval, feature_gates=gates,
                           logical_clusters=args.logical_clusters)
    try:
        try:
            server.start()
        except (OSError, OverflowError) as err:  # in use, no such address, not allowed
            reason = getattr(err, "strerror", None) or err
            return _error(f"cannot listen on {args.host}:{args.port}: {reason}")
        with contextlib.ExitStack() as cleanup:
            path = args.kubeconfig
            if not path:
                folder = cleanup.enter_context(_tempdirs.OwnedDirectory(DIR_PREFIX))
                path = os.path.join(folder, "kubeconfig")
            try:
                write_kubeconfig(server, path, args.context)
            except OSError as err:
                return _error(f"cannot write the kubeconfig {path}: {err.strerror or err}")
            print(f"kinformer serve: {server.url} kubeconfig={path}", flush=True)  # said once
            while not stop.wait(1.0):
                pass
            log.info("stopping")
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return EXIT_OK


def written_by_serve(path: str) -> bool:
    """Whether ``path`` is a kubeconfig serve wrote (its extension :data:`WRITTEN_BY`): one
    that serve may write again. Anything else, unreadable included, is not."""
    import yaml

    try:
        with open(path, encoding="utf-8") as text:
            document = yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError):
        return False
    extensions = document.get("extensions") if isinstance(document, dict) else None
    return isinstance(extensions, list) and any(
        isinstance(entry, dict) and entry.get("name") == WRITTEN_BY for entry in extensions)


def kubeconfig(server: FakeAPIServer, name: str = CONTEXT) -> dict[str, Any]:
    """The server's kubeconfig, its cluster, user and context named ``name``; with logical
    clusters, plus the context :func:`all_clusters_context` for ``/clusters/*`` (the current
    context stays the root's). Its extension :data:`WRITTEN_BY` marks it as serve's, which
    the next serve given its path may overwrite."""
    document = _named(server.kubeconfig(), name)
    document["extensions"] = [{"name": WRITTEN_BY, "extension": {"url": server.url}}]
    if server.logical_clusters:
        across = _named(server.kubeconfig("*"), all_clusters_context(name))
        document["clusters"] += across["clusters"]
        document["contexts"].append(dict(across["contexts"][0], context=dict(
            across["contexts"][0]["context"], user=name)))  # one user: one set of credentials
    return document


def _named(document: dict[str, Any], name: str) -> dict[str, Any]:
    """``document`` (one cluster, user and context) with all three and the current context
    named ``name``."""
    cluster, = document["clusters"]
    user, = document["users"]
    context, = document["contexts"]
    return dict(
        document, clusters=[dict(cluster, name=name)], users=[dict(user, name=name)],
        contexts=[{"name": name, "context": dict(context["context"], cluster=name, user=name)}],
        **{"current-context": name})


def write_kubeconfig(server: FakeAPIServer, path: str, name: str = CONTEXT) -> None:
    """Write :func:`kubeconfig` to ``path`` with owner-only permissions (it may hold the token),
    whole or not at all: it is written beside ``path`` and renamed over it, so a reader waiting
    for the file never reads half of one."""
    pending = f"{path}.{os.getpid()}.tmp"
    fd = os.open(pending, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(kubeconfig(server, name), f, indent=2)
        os.replace(pending, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(pending)
        raise


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr, flush=True)
    return EXIT_ERROR

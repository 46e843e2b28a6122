"""``kinformer serve``: run a FakeAPIServer in the foreground until Ctrl-C or SIGTERM.

Writes a kubeconfig for it (kubectl, client-go and the Python client work unchanged), logs the
URL, and exits 0 after a clean stop. A start that fails prints one ``error:`` line and exits 1
(cannot listen, cannot write the kubeconfig) or 2 (bad arguments), leaving nothing behind. With
``--logical-clusters`` it serves kcp's ``/clusters/<name>`` paths, and the kubeconfig gains a
context for ``/clusters/*`` (:data:`ALL_CLUSTERS_CONTEXT`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import tempfile
import threading
from types import FrameType
from typing import Any

from kinformer.cli import options
from kinformer.testing.apiserver import FakeAPIServer

log = logging.getLogger(__name__)

TOKEN_ENV = "KINFORMER_SERVE_TOKEN"
ALL_CLUSTERS_CONTEXT = "kinformer-all-clusters"  # with --logical-clusters: list and watch all
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


def add_parser(subparsers: Any) -> None:
    """Register ``serve`` and its options."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve", help="run a fake Kubernetes API server in the foreground",
        description="Run a Kubernetes-compatible API server on loopback until Ctrl-C or SIGTERM.")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=0, help="port (default: any free port)")
    parser.add_argument("--kubeconfig", default="",
                        help="where to write the kubeconfig (default: a file in a temp dir)")
    parser.add_argument("--token", default=os.environ.get(TOKEN_ENV),
                        help="require this bearer token; serves HTTPS with a throwaway CA "
                        f"(default: ${TOKEN_ENV}, which keeps it out of process listings)")
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
                        f"{ALL_CLUSTERS_CONTEXT})")
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
        with tempfile.TemporaryDirectory(prefix="kinformer-serve-") as tmp:
            path = args.kubeconfig or os.path.join(tmp, "kubeconfig")
            try:
                write_kubeconfig(server, path)
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


def kubeconfig(server: FakeAPIServer) -> dict[str, Any]:
    """The server's kubeconfig; with logical clusters, plus the context
    :data:`ALL_CLUSTERS_CONTEXT` for ``/clusters/*`` (the current context stays the root's)."""
    document = server.kubeconfig()
    if server.logical_clusters:
        across = server.kubeconfig("*")
        cluster = dict(across["clusters"][0], name=ALL_CLUSTERS_CONTEXT)
        context = {"name": ALL_CLUSTERS_CONTEXT,
                   "context": dict(across["contexts"][0]["context"], cluster=ALL_CLUSTERS_CONTEXT)}
        document["clusters"].append(cluster)
        document["contexts"].append(context)
    return document


def write_kubeconfig(server: FakeAPIServer, path: str) -> None:
    """Write :func:`kubeconfig` to ``path`` with owner-only permissions (it may hold the token)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(kubeconfig(server), f, indent=2)


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr, flush=True)
    return EXIT_ERROR

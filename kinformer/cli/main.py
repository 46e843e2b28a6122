"""The ``kinformer`` command: one argparse subcommand per module, dispatched by :func:`main`.

Each subcommand module offers ``add_parser(subparsers)`` (registering its options and setting
``func``, and optionally ``log_level``, the level logged without ``-v``: INFO by default) and a
``run(args) -> int``. ``serve`` runs a FakeAPIServer in the foreground, ``demo`` shows the
machinery at work against one, ``watch`` is an informer-backed ``kubectl get -w``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from kinformer import __version__
from kinformer.cli import serve
from kinformer.cli.demo import app as demo
from kinformer.cli.watch import app as watch

# Modules contributing a subcommand, in help order.
SUBCOMMANDS = (serve, demo, watch)


def build_parser() -> argparse.ArgumentParser:
    """The full parser, with every available subcommand."""
    parser = argparse.ArgumentParser(
        prog="kinformer", description="client-go's informer machinery for Python, on threads.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    parser.add_argument("--version", action="version", version=f"kinformer {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the subcommand, return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else getattr(args, "log_level", logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    code: int = func(args)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

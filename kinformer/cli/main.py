"""The ``kinformer`` command: one argparse subcommand per module, dispatched by :func:`main`.

Each subcommand module offers ``add_parser(subparsers)`` (registering its options and setting
``func``, and optionally ``log_level``, the level logged without ``-v``: INFO by default) and a
``run(args) -> int``. ``serve`` runs a FakeAPIServer in the foreground, ``demo`` shows the
machinery at work against one, ``watch`` is an informer-backed ``kubectl get -w``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import warnings
from collections.abc import Iterator, Sequence

import urllib3

from kinformer import __version__
from kinformer.cli import serve
from kinformer.cli.demo import app as demo
from kinformer.cli.watch import app as watch

# Modules contributing a subcommand, in help order.
SUBCOMMANDS = (serve, demo, watch)


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The full parser, and each subcommand's own parser by name."""
    parser = argparse.ArgumentParser(
        prog="kinformer", description="client-go's informer machinery for Python, on threads.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    parser.add_argument("--version", action="version", version=f"kinformer {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.add_parser(subparsers)
    return parser, dict(subparsers.choices)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the subcommand, return its exit code.

    Bad arguments exit 2 with the usage of the subcommand they were given to.
    """
    parser, commands = build_parser()
    arguments = list(sys.argv[1:] if argv is None else argv)
    args, unknown = parser.parse_known_args(attach_dash_values(arguments, [parser, *commands.values()]))
    if unknown:  # argparse would report them with the top-level usage
        commands.get(getattr(args, "command", None) or "", parser).error(
            f"unrecognized arguments: {' '.join(unknown)}")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else getattr(args, "log_level", logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    with _quiet_tls_warnings(args.verbose):
        code: int = func(args)
    return code


@contextlib.contextmanager
def _quiet_tls_warnings(verbose: bool) -> Iterator[None]:
    """urllib3's InsecureRequestWarning, one block per request to a server whose certificate is
    not checked (``insecure-skip-tls-verify``), left out unless ``-v``: kubectl prints none, and
    a single watch printed fourteen."""
    with warnings.catch_warnings():
        if not verbose:
            warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
        yield


def attach_dash_values(arguments: list[str], parsers: Sequence[argparse.ArgumentParser]) -> list[str]:
    """``--shard -1/3`` as ``--shard=-1/3``: a value starting with ``-`` given to a long option.

    argparse takes such a value for an option of its own and fails with "expected one
    argument" instead of checking it (``-1/3`` and ``-inf`` do not look like negative numbers
    to it). A value that is one of the parsers' options is left alone.
    """
    # argparse offers no public list of a parser's options; _actions is stable since 3.2
    actions = [action for p in parsers for action in p._actions]
    options = {name for action in actions for name in action.option_strings}
    takes_one = {name for action in actions if action.nargs is None
                 for name in action.option_strings if name.startswith("--")}
    attached: list[str] = []
    index = 0
    while index < len(arguments):
        token = arguments[index]
        following = arguments[index + 1] if index + 1 < len(arguments) else None
        if (token in takes_one and following is not None and following.startswith("-")
                and following not in options and following != "--"):
            attached.append(f"{token}={following}")
            index += 2
            continue
        if token == "--":
            attached += arguments[index:]
            break
        attached.append(token)
        index += 1
    return attached


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

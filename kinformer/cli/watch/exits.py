"""How ``kinformer watch`` ends: its exit codes and :class:`CommandError`, which carries one.

Every other module of the command raises :class:`CommandError` with a code from
:data:`EXIT_CODES`; :mod:`kinformer.cli.watch.app` prints its message on stderr and exits with
its code. :func:`command_error` maps a library error (401, 403, 404, a transport failure) to its
code and one-line message.
"""

from __future__ import annotations

from kinformer import errors

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_UNKNOWN_RESOURCE = 3
EXIT_UNREACHABLE = 4
EXIT_UNAUTHORIZED = 5
EXIT_FORBIDDEN = 6
EXIT_CONFIG = 7
EXIT_SOME_CLUSTERS = 8
EXIT_NO_CLUSTERS = 9

EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "success (--once printed the table; a watch was stopped with Ctrl-C)"),
    (EXIT_ERROR, "any other error (the first list did not complete within --timeout)"),
    (EXIT_USAGE, "bad arguments"),
    (EXIT_UNKNOWN_RESOURCE, "the server has no such resource type, or it cannot be listed and watched"),
    (EXIT_UNREACHABLE, "the server cannot be reached (refused, no answer within --timeout, TLS "
                       "failure), or it is not a Kubernetes API server"),
    (EXIT_UNAUTHORIZED, "the server answered 401 Unauthorized"),
    (EXIT_FORBIDDEN, "the server answered 403 Forbidden"),
    (EXIT_CONFIG, "the kubeconfig (or, in a pod, the service account) cannot be read, or no such "
                  "context, or its user or server is missing, or its credential plugin failed or "
                  "did not finish within --timeout"),
    (EXIT_SOME_CLUSTERS, "--all-contexts --once: some contexts listed (their table printed), the others "
                         "did not (an error line each)"),
    (EXIT_NO_CLUSTERS, "--all-contexts: no context listed (an error line each): with --once within "
                       "--timeout, streaming for good (each failed in a way retrying cannot fix)"),
)


class CommandError(Exception):
    """A failure that ends the command: ``message`` goes to stderr, ``code`` is the exit code.

    The message never carries a credential: a server URL's password, a token it quotes, are
    replaced by ``[redacted]`` (:func:`kinformer.errors.redact`).
    """

    def __init__(self, code: int, message: str) -> None:
        message = errors.redact(message)
        super().__init__(message)
        self.code = code
        self.message = message


def exit_codes_epilog() -> str:
    """The exit codes, formatted for an argparse epilog."""
    lines = ["exit codes:"]
    lines += [f"  {code}  {text}" for code, text in EXIT_CODES]
    return "\n".join(lines)


def command_error(error: BaseException, where: str, what: str) -> CommandError:
    """The exit code and one-line message for an error talking to the server at ``where``."""
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

"""argparse types for the ``kinformer`` command's numeric options: finite and in range, or exit 2.

Every numeric option of every subcommand is parsed by one of these, so a bad value ends the
command before it starts, with argparse's usage line and a message in its style
(``argument --timeout: invalid value 'nan': must be a finite number``) and exit code 2. The
ranges are :mod:`kinformer._checks`' (durations up to what :mod:`threading` can wait), so the
command and the library refuse the same values.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from kinformer import _checks


def number(
    *, minimum: float | None = None, above: float | None = None, maximum: float | None = None,
) -> Callable[[str], float]:
    """A type for a finite float ``>= minimum``, ``> above`` and ``<= maximum`` (when given)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}: not a number") from None
        problem = _checks.out_of_range(value, minimum=minimum, above=above, maximum=maximum)
        if problem:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}: {problem}")
        return value
    return parse


def seconds(*, positive: bool = False) -> Callable[[str], float]:
    """A type for a duration: finite seconds ``>= 0`` (``> 0`` when ``positive``)."""
    if positive:
        return number(above=0.0, maximum=_checks.MAX_SECONDS)
    return number(minimum=0.0, maximum=_checks.MAX_SECONDS)


def integer(*, minimum: int | None = None, maximum: int | None = None) -> Callable[[str], int]:
    """A type for a whole number ``>= minimum`` and ``<= maximum`` (when given)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}: not a whole number") from None
        problem = _checks.out_of_range(value, minimum=minimum, maximum=maximum)
        if problem:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}: {problem}")
        return value
    return parse

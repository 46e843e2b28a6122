"""Checks of numeric arguments: a finite number in range, or :class:`~kinformer.ConfigurationError`.

Every public constructor and wait that takes seconds, a rate or a count checks it here, once,
when it is given: NaN compares false with everything, so an unchecked NaN passes a ``<= 0``
test and turns a wait into a busy loop or a hang, and infinity overflows the waits of
:mod:`threading`. Each check names the argument and what it must be (``resync_period must be
a finite number, got nan``) and returns the value as the type it checked (``float`` or
``int``), so a caller can store what it returns. Durations are :func:`seconds` (``>= 0``, or
``> 0`` when ``positive``), timeouts of waits :func:`timeout` (None for no limit), rates and
factors :func:`number`, counts :func:`integer`.
"""

from __future__ import annotations

import math
import numbers
import threading

from kinformer import errors

MAX_SECONDS = float(threading.TIMEOUT_MAX)  # the longest wait threading accepts (~292 years)


def number(
    name: str,
    value: object,
    *,
    minimum: float | None = None,
    above: float | None = None,
    maximum: float | None = None,
) -> float:
    """``value`` as a float if it is a finite real number ``>= minimum``, ``> above`` and
    ``<= maximum`` (each bound only when given); else :class:`~kinformer.ConfigurationError`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise errors.ConfigurationError(f"{name} must be a number, got {value!r}")
    result = float(value)
    problem = out_of_range(result, minimum=minimum, above=above, maximum=maximum)
    if problem:
        raise errors.ConfigurationError(f"{name} {problem}, got {value!r}")
    return result


def out_of_range(
    value: float,
    *,
    minimum: float | None = None,
    above: float | None = None,
    maximum: float | None = None,
) -> str:
    """What is wrong with ``value`` (``"must be a finite number"``, ``"must be positive"``,
    ``"must be at least 2"`` ...), or ``""`` when it is finite and within the bounds given."""
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number"
    if minimum is not None and value < minimum:
        return "must not be negative" if minimum == 0 else f"must be at least {minimum:g}"
    if above is not None and value <= above:
        return "must be positive" if above == 0 else f"must be greater than {above:g}"
    if maximum is not None and value > maximum:
        return f"must be at most {maximum:g}"
    return ""


def seconds(name: str, value: object, *, positive: bool = False) -> float:
    """A duration: finite, ``>= 0`` (``> 0`` when ``positive``), at most :data:`MAX_SECONDS`."""
    if positive:
        return number(name, value, above=0.0, maximum=MAX_SECONDS)
    return number(name, value, minimum=0.0, maximum=MAX_SECONDS)


def timeout(name: str, value: object) -> float | None:
    """A wait's timeout: None (no limit), or seconds as :func:`seconds` checks them."""
    return None if value is None else seconds(name, value)


def integer(name: str, value: object, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an int if it is an integer (not a bool) within ``minimum`` and ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise errors.ConfigurationError(f"{name} must be an integer, got {value!r}")
    result = int(value)
    if minimum is not None and result < minimum:
        raise errors.ConfigurationError(f"{name} must be at least {minimum}, got {value!r}")
    if maximum is not None and result > maximum:
        raise errors.ConfigurationError(f"{name} must be at most {maximum}, got {value!r}")
    return result

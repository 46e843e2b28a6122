"""Kubernetes label selectors: parse ``"app=web,tier in (a,b),!legacy"`` and match labels.

Listers filter cached objects with these, the fake API server filters LIST and WATCH answers with
them, and ``ListOptions.label_selector`` carries their string form. The grammar and the key and
value validation are the API server's: ``=``, ``==``, ``!=``, ``in (...)``, ``notin (...)``,
``key`` (exists), ``!key`` (does not exist), and ``key>N`` / ``key<N`` (the label, read as an
integer, compared with ``N``), joined by commas, whitespace allowed between tokens. Selectors
are immutable values; :func:`parse_selector` caches them by text, since listers parse the same
string again and again.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kinformer import errors

# Operators, spelled as in the Kubernetes ``selection`` package.
EQUALS = "="
DOUBLE_EQUALS = "=="
NOT_EQUALS = "!="
IN = "in"
NOT_IN = "notin"
EXISTS = "exists"
DOES_NOT_EXIST = "!"
GREATER_THAN = "gt"
LESS_THAN = "lt"

_QUALIFIED_NAME_MAX = 63  # the name part of a key, and a value
_PREFIX_MAX = 253  # a DNS-1123 subdomain
_NAME_RE = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_PREFIX_RE = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*\Z")
_SPECIAL = frozenset("!=,()<> \t\n\r\f\v")
_INT_RE = re.compile(r"[+-]?[0-9]+\Z")  # what Go's strconv.ParseInt(s, 10, 64) reads
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _parse_int64(text: str) -> int | None:
    """``text`` as a 64-bit integer, or None when Go's ParseInt would refuse it."""
    if not _INT_RE.match(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def validate_label_key(key: str) -> str | None:
    """Return why ``key`` is not a valid label key (``[prefix/]name``), or None when it is."""
    prefix, slash, name = key.rpartition("/")
    if slash:
        if not prefix:
            return f"key {key!r}: prefix part must be non-empty"
        if "/" in prefix:
            return f"key {key!r}: a qualified name has at most one '/'"
        if len(prefix) > _PREFIX_MAX or not _PREFIX_RE.match(prefix):
            return (
                f"key {key!r}: prefix part must be a lowercase DNS-1123 subdomain "
                f"of at most {_PREFIX_MAX} characters"
            )
    if not name:
        return f"key {key!r}: name part must be non-empty"
    return _name_problem(name, f"key {key!r}: name part")


def validate_label_value(value: str) -> str | None:
    """Return why ``value`` is not a valid label value, or None when it is (empty is valid)."""
    if not value:
        return None
    return _name_problem(value, f"value {value!r}:")


def _name_problem(text: str, subject: str) -> str | None:
    """Why ``text`` is no valid name part of a label key, nor label value; ``subject`` starts
    the answer."""
    if len(text) > _QUALIFIED_NAME_MAX:
        return f"{subject} must be no more than {_QUALIFIED_NAME_MAX} characters"
    if not _NAME_RE.match(text):
        return (
            f"{subject} must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return None


@dataclass(frozen=True, slots=True)
class Requirement:
    """One term of a selector: ``key``, ``operator`` and the sorted ``values`` it compares with."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy it; ``!=`` and ``notin`` hold when the key is absent.

        ``gt`` and ``lt`` hold only for a label whose value reads as an integer.
        """
        op = self.operator
        if op in (GREATER_THAN, LESS_THAN):
            return _compare(op, labels.get(self.key), int(self.values[0]))
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        value = labels.get(self.key)
        if op in (EQUALS, DOUBLE_EQUALS):
            return value is not None and value == self.values[0]
        if op == NOT_EQUALS:
            return value is None or value != self.values[0]
        if op == IN:
            return value is not None and value in self.values
        return value is None or value not in self.values  # NOT_IN

    def __str__(self) -> str:
        op = self.operator
        if op == EXISTS:
            return self.key
        if op == DOES_NOT_EXIST:
            return "!" + self.key
        if op in (IN, NOT_IN):
            return f"{self.key} {op} ({','.join(self.values)})"
        if op in (GREATER_THAN, LESS_THAN):
            return f"{self.key}{'>' if op == GREATER_THAN else '<'}{self.values[0]}"
        if op == DOUBLE_EQUALS:
            op = EQUALS
        return f"{self.key}{op}{self.values[0]}"


def _compare(op: str, value: str | None, bound: int) -> bool:
    """``value > bound`` (``gt``) or ``value < bound`` (``lt``); False unless ``value`` is an integer."""
    number = None if value is None else _parse_int64(value)
    if number is None:
        return False
    return number > bound if op == GREATER_THAN else number < bound


def _compile(req: Requirement) -> Callable[[Mapping[str, str]], bool]:
    """A fast closure equivalent to ``req.matches``."""
    key, op, values = req.key, req.operator, req.values
    if op in (GREATER_THAN, LESS_THAN):
        bound = int(values[0])
        return lambda labels: _compare(op, labels.get(key), bound)
    if op == EXISTS:
        return lambda labels: key in labels
    if op == DOES_NOT_EXIST:
        return lambda labels: key not in labels
    if op in (EQUALS, DOUBLE_EQUALS):
        want = values[0]
        return lambda labels: labels.get(key) == want
    if op == NOT_EQUALS:
        avoid = values[0]
        return lambda labels: labels.get(key) != avoid
    allowed = frozenset(values)
    if op == IN:
        return lambda labels: labels.get(key) in allowed
    return lambda labels: labels.get(key) not in allowed


class Selector:
    """An immutable conjunction of label requirements; the empty selector matches everything.

    ``str()`` gives the canonical form: requirements sorted by key, set values sorted, ``==``
    written as ``=``. Equal selectors compare and hash equal. Safe to share between threads.
    """

    __slots__ = ("_checks", "_requirements", "_text")

    def __init__(self, requirements: Iterable[Requirement] = ()) -> None:
        reqs = tuple(sorted(requirements, key=lambda r: (r.key, r.operator, r.values)))
        self._requirements = reqs
        self._checks = tuple(_compile(r) for r in reqs)
        self._text = ",".join(str(r) for r in reqs)

    @property
    def requirements(self) -> tuple[Requirement, ...]:
        """The requirements, sorted by key."""
        return self._requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether a label map satisfies every requirement (``None`` counts as no labels)."""
        if labels is None:
            labels = {}
        for check in self._checks:  # noqa: SIM110 - no generator per call in lister loops
            if not check(labels):
                return False
        return True

    def empty(self) -> bool:
        """True for the selector that matches everything."""
        return not self._requirements

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Selector({self._text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Selector) and self._text == other._text

    def __hash__(self) -> int:
        return hash(self._text)


_EVERYTHING = Selector()


def everything() -> Selector:
    """The selector that matches every label set (client-go ``labels.Everything()``)."""
    return _EVERYTHING


def selector_from_dict(match_labels: Mapping[str, str]) -> Selector:
    """An equality selector from a ``matchLabels``-style map; keys and values are validated."""
    reqs = []
    text = ",".join(f"{k}={v}" for k, v in match_labels.items())
    for key, value in match_labels.items():
        problem = validate_label_key(key) or validate_label_value(value)
        if problem:
            raise errors.LabelSelectorError(text, text.find(f"{key}={value}"), problem)
        reqs.append(Requirement(key, EQUALS, (value,)))
    return Selector(reqs)


def parse_selector(text: str) -> Selector:
    """Parse a label selector string; an empty or all-whitespace string selects everything.

    Raises :class:`~kinformer.errors.LabelSelectorError` naming the position of the first problem. Results are
    cached by text (the selectors are immutable).

    >>> selector = parse_selector("app=web,tier in (api,db),!canary")
    >>> selector.matches({"app": "web", "tier": "db"})
    True
    >>> selector.matches({"app": "web", "tier": "db", "canary": "true"})
    False
    """
    if not text or text.isspace():
        return _EVERYTHING
    return _parse_cached(text)


@functools.lru_cache(maxsize=512)
def _parse_cached(text: str) -> Selector:
    return _Parser(text).parse()


# Token kinds of the lexer.
_IDENT = "identifier"
_END = "end of string"


class _Parser:
    """A small recursive-descent parser over (kind, text, position) tokens."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = self._lex(text)
        self.i = 0

    def _error(self, position: int, problem: str) -> errors.LabelSelectorError:
        return errors.LabelSelectorError(self.text, position, problem)

    def _lex(self, text: str) -> list[tuple[str, str, int]]:
        tokens: list[tuple[str, str, int]] = []
        i, n = 0, len(text)
        while i < n:
            c = text[i]
            if c.isspace():
                i += 1
            elif c in "!=":
                if i + 1 < n and text[i + 1] == "=":
                    tokens.append((c + "=", c + "=", i))
                    i += 2
                else:
                    tokens.append((c, c, i))
                    i += 1
            elif c in ",()<>":
                tokens.append((c, c, i))
                i += 1
            else:
                start = i
                while i < n and text[i] not in _SPECIAL:
                    i += 1
                word = text[start:i]
                kind = word if word in (IN, NOT_IN) else _IDENT
                tokens.append((kind, word, start))
        tokens.append((_END, "", n))
        return tokens

    def _next(self) -> tuple[str, str, int]:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def _peek(self) -> tuple[str, str, int]:
        return self.tokens[self.i]

    def parse(self) -> Selector:
        reqs = []
        while True:
            reqs.append(self._requirement())
            kind, word, pos = self._next()
            if kind == _END:
                return Selector(reqs)
            if kind != ",":
                raise self._error(pos, f"found {word!r}, expected ',' or end of string")

    def _key(self) -> tuple[str, int]:
        kind, word, pos = self._next()
        if kind != _IDENT:
            shown = kind if kind == _END else repr(word)
            raise self._error(pos, f"found {shown}, expected a label key")
        problem = validate_label_key(word)
        if problem:
            raise self._error(pos, problem)
        return word, pos

    def _requirement(self) -> Requirement:
        if self._peek()[0] == "!":
            self._next()
            key, _ = self._key()
            nxt = self._peek()
            if nxt[0] not in (",", _END):
                raise self._error(nxt[2], f"found {nxt[1]!r}, expected ',' or end of string")
            return Requirement(key, DOES_NOT_EXIST)
        key, _ = self._key()
        kind, word, pos = self._peek()
        if kind in (",", _END):
            return Requirement(key, EXISTS)
        self._next()
        if kind in ("=", "==", "!="):
            op = {"=": EQUALS, "==": DOUBLE_EQUALS, "!=": NOT_EQUALS}[kind]
            return Requirement(key, op, (self._exact_value(),))
        if kind in (IN, NOT_IN):
            return Requirement(key, kind, self._value_set(pos))
        if kind in ("<", ">"):
            return Requirement(key, GREATER_THAN if kind == ">" else LESS_THAN, (self._integer(),))
        raise self._error(
            pos, f"found {word!r}, expected one of '=', '==', '!=', 'in', 'notin', '>', '<'"
        )

    def _integer(self) -> str:
        kind, word, pos = self._next()
        if kind not in (_IDENT, IN, NOT_IN):
            shown = kind if kind == _END else repr(word)
            raise self._error(pos, f"found {shown}, expected an integer")
        if _parse_int64(word) is None:
            raise self._error(pos, f"for '>' and '<', the value must be an integer, not {word!r}")
        return self._checked_value(word, pos)

    def _checked_value(self, word: str, pos: int) -> str:
        problem = validate_label_value(word)
        if problem:
            raise self._error(pos, problem)
        return word

    def _exact_value(self) -> str:
        kind, word, pos = self._peek()
        if kind in (",", _END):
            return ""  # "key=" selects an empty value, as the API server reads it
        self._next()
        if kind not in (_IDENT, IN, NOT_IN):
            raise self._error(pos, f"found {word!r}, expected a label value")
        return self._checked_value(word, pos)

    def _value_set(self, op_pos: int) -> tuple[str, ...]:
        kind, word, pos = self._next()
        if kind != "(":
            shown = kind if kind == _END else repr(word)
            raise self._error(pos, f"found {shown}, expected '('")
        values: set[str] = set()
        expect_value = True
        while True:
            kind, word, pos = self._next()
            if kind == ")":
                if expect_value and values:
                    values.add("")  # "(a,)" carries an empty value
                break
            if kind == ",":
                if expect_value:
                    values.add("")  # "(,a)" carries an empty value
                expect_value = True
                continue
            if kind in (_IDENT, IN, NOT_IN) and expect_value:
                values.add(self._checked_value(word, pos))
                expect_value = False
                continue
            shown = kind if kind == _END else repr(word)
            raise self._error(pos, f"found {shown}, expected a value, ',' or ')'")
        if not values:
            raise self._error(op_pos, "for 'in' and 'notin', the set of values must not be empty")
        return tuple(sorted(values))

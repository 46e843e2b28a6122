"""Shard selectors: Kubernetes' ``shardSelector`` for sharded list and watch, and its hash.

Kubernetes 1.36 added server-side sharded list and watch (KEP-5866, feature gate
``ShardedListAndWatch``, alpha): a ``shardSelector`` query parameter such as::

    shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')

makes the API server send only the objects whose field hashes into one of the half-open
ranges, with 64-bit FNV-1a over the field's UTF-8 bytes. :class:`ShardSelector` parses that
grammar with the server's checks and wording, prints its canonical form, builds equal splits
of the hash space (:meth:`ShardSelector.for_shard`) and tells whether an object matches, so a
client can filter by itself where the server does not shard.

:meth:`ShardSelector.empty` is the shard that holds nothing: a member of a shard group that does
not see itself among the members owns it. It is never sent to a server (whose grammar has no
such selector, and for which no parameter means *everything*); an informer given it lists and
watches nothing and caches nothing.

:func:`cluster_shard_hash` places whole clusters on shards by their names
(:meth:`MultiClusterInformerFactory.set_cluster_shard
<kinformer.MultiClusterInformerFactory.set_cluster_shard>`); no server takes part there, so it
need not be FNV-1a, and is not: see its docstring.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

from kinformer import errors, meta

__all__ = ["FIELDS", "HASH_SPACE", "ShardSelector", "cluster_shard_hash", "fnv1a_64"]

HASH_SPACE = 1 << 64  # hashes lie in [0, HASH_SPACE)
FIELDS = ("object.metadata.uid", "object.metadata.namespace")  # the fields a selector may hash

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = HASH_SPACE - 1
_END_OF_SPACE = "0x10000000000000000"


def fnv1a_64(value: str) -> int:
    """64-bit FNV-1a of ``value``'s UTF-8 bytes: the hash the API server shards by."""
    h = _FNV_OFFSET
    for byte in value.encode():
        h = ((h ^ byte) * _FNV_PRIME) & _MASK
    return h


def cluster_shard_hash(name: str) -> int:
    """The 64-bit hash a cluster's name is placed on a shard of clusters by: BLAKE2b with an
    8-byte digest (RFC 7693; digest size 8 is a parameter of the hash, not a truncation) of the
    name's UTF-8 bytes, read as an unsigned big-endian integer, in ``[0, HASH_SPACE)``.

    Shards split the hash space into equal ranges by its high bits
    (:meth:`ShardSelector.for_shard`), so the hash must move its high bits for any change of the
    name. :func:`fnv1a_64` does not: a character at the end of the name passes through one
    multiplication, which carries the change upward only as far as the prime's few set bits reach,
    so ``member-1`` to ``member-20`` all lay in one of 2, 3 or 4 equal shards, and the others
    owned none. BLAKE2b is a cryptographic hash: names that differ in one character differ
    in about half of their 64 bits, top bits included, and 200 names of a family like ``member-N``
    split between 2, 3 or 4 shards within 0.76x-1.2x of a fair share each
    (``benchmarks/bench_cluster_shards.py``; FNV-1a leaves some shards empty). It is defined by
    its specification, not by Python (``hash()`` is salted per process), so every replica, in any
    version or language (Go: ``blake2b.New(8, nil)``), places a cluster alike. Objects keep
    :func:`fnv1a_64`, which the API server's ``shardSelector`` fixes.

        >>> hex(cluster_shard_hash("member-1")), hex(cluster_shard_hash("member-2"))
        ('0xf4e9ceae644084c4', '0xce67e94906b530d5')
    """
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big")


def _q(text: str) -> str:
    """``text`` double-quoted with escapes, as the server's messages quote values."""
    return json.dumps(text)


def _hex(bound: int) -> str:
    return _END_OF_SPACE if bound == HASH_SPACE else f"0x{bound:016x}"


def is_empty(selector: ShardSelector | None) -> bool:
    """Whether ``selector`` is :meth:`ShardSelector.empty` (None, the whole resource, is not)."""
    return selector is not None and not selector._ranges


class ShardSelector:
    """A field and the half-open hash ranges ``[start, end)`` of it that belong to a shard.

    Immutable, hashable and equal by value; ``str()`` is the server's canonical form, which
    :meth:`parse` reads back. Build one with :meth:`parse`, :meth:`for_shard` or
    :meth:`from_ranges`; invalid input raises :class:`~kinformer.ShardSelectorError`.
    :meth:`empty` is the one selector without ranges: it matches nothing, its ``str()`` is
    ``""``, and it is never sent as a query parameter (None, not it, means the whole resource).

        >>> selector = ShardSelector.for_shard(0, 2)
        >>> str(selector)
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
        >>> ShardSelector.parse(str(selector)) == selector
        True
    """

    __slots__ = ("_field", "_ranges")

    def __init__(self, field: str, ranges: Iterable[tuple[int, int]]) -> None:
        checked = tuple((int(start), int(end)) for start, end in ranges)
        if field not in FIELDS:
            raise errors.ShardSelectorError(
                f"unsupported field path {_q(field)}; supported: {', '.join(FIELDS)}")
        if not checked:
            raise errors.ShardSelectorError("a shard selector needs at least one range")
        for start, end in checked:
            if not 0 <= start < HASH_SPACE or not 0 < end <= HASH_SPACE:
                raise errors.ShardSelectorError(f"shard range [{start}, {end}) is outside [0, 2^64)")
            if start >= end:
                raise errors.ShardSelectorError(
                    f"shard range start {_hex(start)} must be less than end {_hex(end)}")
        self._field = field
        self._ranges = checked

    @property
    def field(self) -> str:
        """The field hashed: ``object.metadata.uid`` or ``object.metadata.namespace``."""
        return self._field

    @property
    def ranges(self) -> list[tuple[int, int]]:
        """The half-open ranges ``[start, end)`` of hashes that match, in the order given."""
        return list(self._ranges)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ShardSelector):
            return NotImplemented
        return (self._field, self._ranges) == (other._field, other._ranges)

    def __hash__(self) -> int:
        return hash((self._field, self._ranges))

    def __repr__(self) -> str:
        return f"ShardSelector({str(self)!r})" if self._ranges else "ShardSelector.empty()"

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def empty(cls) -> ShardSelector:
        """The shard that holds nothing: ``ranges == []``, ``matches()`` always False, ``str()``
        ``""``. Equal to every other empty selector; its field is the default one.

            >>> ShardSelector.empty().matches({"metadata": {"uid": "u"}}), str(ShardSelector.empty())
            (False, '')
        """
        return _EMPTY

    @classmethod
    def for_shard(cls, index: int, count: int, field: str = "object.metadata.uid") -> ShardSelector:
        """Shard ``index`` of ``count`` equal parts of the hash space (the last one ends at 2^64)."""
        if count < 1 or not 0 <= index < count:
            raise errors.ShardSelectorError(
                f"shard {index} of {count}: need 0 <= index < count and count >= 1")
        start = index * HASH_SPACE // count
        end = (index + 1) * HASH_SPACE // count
        return cls(field, [(start, end)])

    @classmethod
    def from_ranges(
        cls, ranges: Iterable[tuple[int, int]], field: str = "object.metadata.uid"
    ) -> ShardSelector:
        """A selector of the given half-open ranges, in the given order."""
        return cls(field, ranges)

    @classmethod
    def parse(cls, text: str) -> ShardSelector:
        """Read a ``shardSelector`` as the API server does: its grammar, checks and messages.

        ``shardRange(FIELD, 'START', 'END')`` terms joined by ``||`` (parentheses and any
        whitespace allowed); FIELD is ``object.metadata.uid`` or ``object.metadata.namespace``,
        the same in every term; bounds are quoted ``0x`` plus exactly 16 lowercase hex digits,
        or ``0x10000000000000000`` (2^64), with START below END.
        """
        stripped = text.strip()
        if not stripped:
            raise errors.ShardSelectorError(
                "empty shard selector is not allowed; omit the parameter for unfiltered lists")
        terms = _Parser(stripped).parse()
        fields = [field for field, _, _ in terms]
        for other in fields[1:]:
            if other != fields[0]:
                raise errors.ShardSelectorError(
                    f"all shard ranges must use the same field, got {_q(fields[0])} and {_q(other)}")
        return cls(fields[0], [(start, end) for _, start, end in terms])

    # -- use -----------------------------------------------------------------------------------

    def value_of(self, obj: Any) -> str:
        """The value of the selector's field in ``obj`` (``""`` when absent, as for a
        cluster-scoped object's namespace)."""
        return meta.uid(obj) if self._field == "object.metadata.uid" else meta.namespace(obj)

    def matches_hash(self, value: int) -> bool:
        """Whether a hash lies in one of the ranges."""
        return any(start <= value < end for start, end in self._ranges)

    def matches(self, obj: Any) -> bool:
        """Whether ``obj`` belongs to this shard: its field's hash lies in one of the ranges."""
        h = fnv1a_64(self.value_of(obj))
        return any(start <= h < end for start, end in self._ranges)

    def __str__(self) -> str:
        return " || ".join(
            f"shardRange({self._field}, '{_hex(start)}', '{_hex(end)}')" for start, end in self._ranges)


def _new_empty() -> ShardSelector:
    empty = object.__new__(ShardSelector)
    empty._field = FIELDS[0]
    empty._ranges = ()
    return empty


_EMPTY = _new_empty()


# -- the parser -------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<ident>[A-Za-z_][A-Za-z0-9_]*)|(?P<string>'[^'\\]*'|\"[^\"\\]*\")"
    r"|(?P<op>\|\||[().,])|(?P<bad>\S))")


class _Parser:
    """A recursive-descent reader of the selector grammar: ``term ('||' term)*``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []
        for match in _TOKEN.finditer(text):
            kind = match.lastgroup
            assert kind is not None
            self.tokens.append((kind, match.group(kind), match.start(kind)))
            if kind == "bad":
                break
        self.at = 0

    def _error(self, message: str) -> errors.ShardSelectorError:
        return errors.ShardSelectorError(f"CEL parse error: {message}")

    def _peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def _take(self, value: str | None = None, kind: str | None = None) -> tuple[str, str, int]:
        token = self._peek()
        if token is None:
            raise self._error(f"unexpected end of input, expected {value or kind}")
        if token[0] == "bad":
            raise self._error(f"token recognition error at: '{token[1]}' (position {token[2]})")
        if (value is not None and token[1] != value) or (kind is not None and token[0] != kind):
            raise self._error(f"mismatched input '{token[1]}' expecting {value or kind} "
                              f"(position {token[2]})")
        self.at += 1
        return token

    def parse(self) -> list[tuple[str, int, int]]:
        terms = self._or()
        token = self._peek()
        if token is not None:
            self._take("end of input")  # raises, naming what is left over
        return terms

    def _or(self) -> list[tuple[str, int, int]]:
        terms = self._primary()
        while (token := self._peek()) is not None and token[1] == "||":
            self.at += 1
            terms += self._primary()
        return terms

    def _primary(self) -> list[tuple[str, int, int]]:
        token = self._peek()
        if token is not None and token[1] == "(":
            self.at += 1
            terms = self._or()
            self._take(")")
            return terms
        _, name, _ = self._take(kind="ident")
        following = self._peek()
        if following is None or following[1] != "(":
            raise errors.ShardSelectorError(
                "unexpected expression kind; expected shardRange() call or || operator")
        if name != "shardRange":
            raise errors.ShardSelectorError(
                f"unsupported function {_q(name)}; only shardRange() and || are allowed")
        self.at += 1
        args = self._arguments()
        if len(args) != 3:
            raise errors.ShardSelectorError(
                f"shardRange() requires exactly 3 arguments, got {len(args)}")
        path, start, end = args
        if path[0] != "path":
            raise errors.ShardSelectorError(
                "shardRange() first argument: expected field path (e.g. object.metadata.uid)")
        if path[1] not in FIELDS:
            raise errors.ShardSelectorError(
                f"unsupported field path {_q(path[1])}; supported: {', '.join(FIELDS)}")
        low, high = _bound(start, "hexStart"), _bound(end, "hexEnd")
        if low >= high:
            raise errors.ShardSelectorError(
                f"shard range start {start[1]} must be less than end {end[1]}")
        return [(path[1], low, high)]

    def _arguments(self) -> list[tuple[str, str]]:
        """The arguments of a call whose '(' was taken: each ("path", a.b.c) or ("string", s)."""
        args: list[tuple[str, str]] = []
        token = self._peek()
        if token is not None and token[1] == ")":
            self.at += 1
            return args
        while True:
            token = self._peek()
            if token is not None and token[0] == "string":
                self.at += 1
                args.append(("string", token[1][1:-1]))
            else:
                parts = [self._take(kind="ident")[1]]
                while (dot := self._peek()) is not None and dot[1] == ".":
                    self.at += 1
                    parts.append(self._take(kind="ident")[1])
                args.append(("path", ".".join(parts)))
            if self._take()[1] == ")":
                return args
            previous = self.tokens[self.at - 1]
            if previous[1] != ",":
                raise self._error(f"mismatched input '{previous[1]}' expecting ',' or ')' "
                                  f"(position {previous[2]})")


def _bound(arg: tuple[str, str], name: str) -> int:
    """A range bound: a quoted ``0x`` plus 16 lowercase hex digits, or 2^64."""
    kind, text = arg
    if kind != "string":
        raise errors.ShardSelectorError(
            f"{name} must be a string literal (e.g. '0xff'), got a field path")
    if not text.startswith("0x"):
        raise errors.ShardSelectorError(f"{name} must have '0x' prefix, got {_q(text)}")
    digits = text[2:]
    if not digits:
        raise errors.ShardSelectorError(f"{name}: hex value is required after '0x'")
    if len(digits) > 17:
        raise errors.ShardSelectorError(
            f"{name}: hex value too long ({len(digits)} chars, max 17): {_q(digits)}")
    for char in digits:
        if char not in "0123456789abcdef":
            raise errors.ShardSelectorError(f"{name}: invalid hex character {_q(char)} in {_q(text)}")
    if len(digits) == 17:
        if text != _END_OF_SPACE:
            raise errors.ShardSelectorError(
                f"{name}: 17-digit hex value must be '{_END_OF_SPACE}' (2^64), got {_q(text)}")
    elif len(digits) != 16:
        padded = "0x" + digits.rjust(16, "0")
        raise errors.ShardSelectorError(
            f"{name} must be a 0x-prefixed 16-digit hex value, got {_q(text)} (did you mean {_q(padded)}?)")
    return int(digits, 16)

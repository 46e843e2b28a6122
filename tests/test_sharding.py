"""Shard selectors: the hash, the server's grammar and messages, equal splits and matching."""

from __future__ import annotations

import itertools

import pytest

import kinformer
from kinformer import errors
from kinformer.sharding import HASH_SPACE, ShardSelector, fnv1a_64

HALF = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"


def obj(uid: str, namespace: str = "ns") -> dict[str, object]:
    metadata = {"name": "x", "uid": uid}
    if namespace:
        metadata["namespace"] = namespace
    return {"metadata": metadata}


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", 0xCBF29CE484222325), ("a", 0xAF63DC4C8601EC8C), ("foobar", 0x85944171F73967E8)],
)
def test_fnv1a_64_is_the_standard_64_bit_hash_of_the_utf8_bytes(value: str, expected: int) -> None:
    assert fnv1a_64(value) == expected


def test_the_canonical_form_reads_back_to_an_equal_hashable_selector() -> None:
    selector = ShardSelector.parse(HALF)
    assert str(selector) == HALF
    assert selector == ShardSelector.for_shard(0, 2)
    assert hash(selector) == hash(ShardSelector.for_shard(0, 2))
    assert selector.field == "object.metadata.uid"
    assert selector.ranges == [(0, 1 << 63)]
    assert kinformer.ShardSelector is ShardSelector and kinformer.fnv1a_64 is fnv1a_64


def test_terms_joined_by_or_with_any_whitespace_and_parentheses_keep_their_order() -> None:
    text = ("  ( shardRange(object.metadata.namespace,'0x8000000000000000' , '0x10000000000000000'))"
            "||shardRange( object . metadata . namespace, '0x0000000000000000', '0x0000000000000010')")
    selector = ShardSelector.parse(text)
    assert selector.ranges == [(1 << 63, HASH_SPACE), (0, 16)]
    assert str(selector) == (
        "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000') || "
        "shardRange(object.metadata.namespace, '0x0000000000000000', '0x0000000000000010')")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
         'hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" '
         '(did you mean "0x0000000000000000"?)'),
        ("shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
         'unsupported field path "object.metadata.name"; supported: object.metadata.uid, '
         "object.metadata.namespace"),
        ("shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",
         "shard range start 0x8000000000000000 must be less than end 0x0000000000000000"),
        ("shardRange(object.metadata.uid, '0x0000000000000000', '0x20000000000000000')",
         "hexEnd: 17-digit hex value must be '0x10000000000000000' (2^64), got "
         '"0x20000000000000000"'),
        ("shardRange(object.metadata.uid, '0x000000000000000G', '0x8000000000000000')",
         'hexStart: invalid hex character "G" in "0x000000000000000G"'),
        ("shardRange(object.metadata.uid, 'ff', '0x8000000000000000')",
         "hexStart must have '0x' prefix, got \"ff\""),
        ("shardRange(object.metadata.uid, '0x0000000000000000')",
         "shardRange() requires exactly 3 arguments, got 2"),
        ("hashRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
         'unsupported function "hashRange"; only shardRange() and || are allowed'),
        (HALF + " || shardRange(object.metadata.namespace, '0x8000000000000000', "
         "'0x10000000000000000')",
         'all shard ranges must use the same field, got "object.metadata.uid" and '
         '"object.metadata.namespace"'),
        ("   ", "empty shard selector is not allowed; omit the parameter for unfiltered lists"),
    ],
)
def test_bad_selectors_are_refused_with_the_servers_words(text: str, message: str) -> None:
    with pytest.raises(errors.ShardSelectorError) as raised:
        ShardSelector.parse(text)
    assert str(raised.value) == message
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize("text", [HALF + " &&", "shardRange(object.metadata.uid,", HALF + ")"])
def test_text_that_does_not_parse_is_a_parse_error(text: str) -> None:
    with pytest.raises(errors.ShardSelectorError, match="CEL parse error"):
        ShardSelector.parse(text)


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_equal_splits_cover_the_hash_space_once(count: int) -> None:
    shards = [ShardSelector.for_shard(i, count) for i in range(count)]
    bounds = [r for s in shards for r in s.ranges]
    assert bounds[0][0] == 0 and bounds[-1][1] == HASH_SPACE
    assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
    uids = [f"uid-{i}" for i in range(500)]
    for uid in uids:
        assert sum(s.matches(obj(uid)) for s in shards) == 1


def test_matching_hashes_the_selected_field_and_a_cluster_scoped_namespace_is_empty() -> None:
    by_ns = ShardSelector.from_ranges([(fnv1a_64(""), fnv1a_64("") + 1)],
                                      field="object.metadata.namespace")
    assert by_ns.matches(obj("u", namespace=""))
    assert not by_ns.matches(obj("u", namespace="default"))
    value = fnv1a_64("some-uid")
    by_uid = ShardSelector.from_ranges([(value, value + 1)])
    assert by_uid.matches(obj("some-uid")) and not by_uid.matches(obj("other-uid"))


@pytest.mark.parametrize(("index", "count"), [(2, 2), (-1, 2), (0, 0)])
def test_a_shard_outside_its_count_is_refused(index: int, count: int) -> None:
    with pytest.raises(errors.ShardSelectorError):
        ShardSelector.for_shard(index, count)


def test_the_empty_selector_matches_nothing_prints_nothing_and_is_one_value() -> None:
    empty = ShardSelector.empty()
    assert empty.ranges == [] and str(empty) == "" and repr(empty) == "ShardSelector.empty()"
    assert not any(empty.matches(obj(f"uid-{i}")) for i in range(100))
    assert not empty.matches_hash(0) and not empty.matches_hash(HASH_SPACE - 1)
    assert empty == ShardSelector.empty() and hash(empty) == hash(ShardSelector.empty())
    assert empty != ShardSelector.for_shard(0, 1) and empty is not None
    assert len({empty, ShardSelector.empty(), ShardSelector.for_shard(0, 1)}) == 2
    assert empty.field == "object.metadata.uid"


def test_no_other_constructor_makes_an_empty_selector() -> None:
    with pytest.raises(errors.ShardSelectorError):
        ShardSelector.from_ranges([])
    with pytest.raises(errors.ShardSelectorError):
        ShardSelector.parse("")

"""Shard selectors: the hash, the server's grammar and messages, equal splits and matching."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

import kinformer
from kinformer import errors
from kinformer.sharding import HASH_SPACE, ShardSelector, cluster_shard_hash, fnv1a_64

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


# -- placing clusters: cluster_shard_hash ---------------------------------------------------------

FAMILIES = {  # 200 cluster names each, as fleets name their members
    "member-N": [f"member-{n}" for n in range(1, 201)],
    "cluster-NN": [f"cluster-{n:02d}" for n in range(1, 201)],
    "prod-eu-N": [f"prod-eu-{n}" for n in range(1, 201)],
}


def shares(hash_name: Callable[[str], int], names: list[str], count: int) -> list[float]:
    """Each of ``count`` equal shards' number of ``names``, over its fair share."""
    shards = [ShardSelector.for_shard(index, count) for index in range(count)]
    return [sum(shard.matches_hash(hash_name(name)) for name in names) * count / len(names)
            for shard in shards]


@pytest.mark.parametrize(
    ("name", "expected"),
    [("", 0xE4A6A0577479B2B4), ("member-1", 0xF4E9CEAE644084C4), ("member-2", 0xCE67E94906B530D5)],
)
def test_cluster_shard_hash_is_blake2b_with_an_8_byte_digest_read_big_endian(
    name: str, expected: int,
) -> None:
    # fixed values: every replica, in any process or version, places a cluster alike
    assert cluster_shard_hash(name) == expected
    assert kinformer.cluster_shard_hash is cluster_shard_hash


@pytest.mark.parametrize("count", [2, 3, 4])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_cluster_names_split_between_equal_shards_within_half_and_one_and_a_half_fair_shares(
    family: str, count: int,
) -> None:
    found = shares(cluster_shard_hash, FAMILIES[family], count)
    assert all(0.5 <= share <= 1.5 for share in found), found


def test_fnv1a_64_would_leave_shards_of_clusters_empty() -> None:
    # why clusters are not placed by the objects' hash: names that differ at the end stay together
    for count in (3, 4):
        assert min(shares(fnv1a_64, FAMILIES["member-N"], count)) == 0
    assert shares(fnv1a_64, [f"member-{n}" for n in range(1, 21)], 2) == [2.0, 0.0]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_cluster_names_that_differ_in_one_character_land_far_apart(family: str) -> None:
    names = FAMILIES[family]
    pairs = list(itertools.pairwise(names))
    bits = [bin(cluster_shard_hash(a) ^ cluster_shard_hash(b)).count("1") for a, b in pairs]
    assert sum(bits) / len(bits) > 28  # about half of 64 bits; FNV-1a moves about 11
    same_top_byte = sum(cluster_shard_hash(a) >> 56 == cluster_shard_hash(b) >> 56 for a, b in pairs)
    assert same_top_byte <= len(pairs) // 20  # FNV-1a keeps it in 196 of 199 pairs


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

"""Label selectors: the API server's grammar, matching and validation."""

from __future__ import annotations

import pytest

from kinformer import errors
from kinformer.cache.labels import (
    everything,
    parse_selector,
    selector_from_dict,
)

WEB = {"app": "web", "tier": "front"}


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("app=web", WEB, True),
        ("app==web", WEB, True),
        ("app=db", WEB, False),
        ("app!=db", WEB, True),
        ("app!=web", WEB, False),
        ("missing!=x", WEB, True),
        ("tier in (front,back)", WEB, True),
        ("tier in (back)", WEB, False),
        ("missing in (a)", WEB, False),
        ("tier notin (back)", WEB, True),
        ("tier notin (front)", WEB, False),
        ("missing notin (a)", WEB, True),
        ("app", WEB, True),
        ("missing", WEB, False),
        ("!missing", WEB, True),
        ("!app", WEB, False),
        ("app=", {"app": ""}, True),
        ("app=", WEB, False),
        ("replicas>3", {"replicas": "4"}, True),
        ("replicas>3", {"replicas": "3"}, False),
        ("replicas<3", {"replicas": "2"}, True),
        ("replicas<3", {"replicas": "03"}, False),
        ("replicas>3", {"replicas": "many"}, False),  # not an integer: never matches
        ("replicas<3", {}, False),  # absent: never matches
        ("replicas>3", {"replicas": "99999999999999999999"}, False),  # beyond 64 bits
    ],
)
def test_each_operator_matches_like_the_api_server(
    text: str, labels: dict[str, str], expected: bool
) -> None:
    assert parse_selector(text).matches(labels) is expected


def test_comma_joined_requirements_must_all_hold() -> None:
    selector = parse_selector("app=web,tier in (front,back),!legacy")
    assert selector.matches(WEB)
    assert not selector.matches({**WEB, "legacy": "yes"})
    assert not selector.matches({"app": "web", "tier": "middle"})


def test_whitespace_between_tokens_is_ignored() -> None:
    spaced = parse_selector("  app = web ,  tier  in ( front , back ) , ! legacy  ")
    assert str(spaced) == str(parse_selector("app=web,tier in (front,back),!legacy"))


def test_prefixed_keys_are_accepted() -> None:
    selector = parse_selector("kinformer.io/mirror=true,!example.com/skip")
    assert selector.matches({"kinformer.io/mirror": "true"})
    assert not selector.matches({"kinformer.io/mirror": "true", "example.com/skip": ""})


def test_empty_and_blank_text_select_everything() -> None:
    for text in ("", "   "):
        selector = parse_selector(text)
        assert selector.empty()
        assert selector.matches(None)
        assert selector.matches(WEB)
    assert everything().empty()
    assert str(everything()) == ""


def test_no_labels_count_as_an_empty_label_set() -> None:
    assert not parse_selector("app").matches(None)
    assert parse_selector("!app").matches(None)
    assert parse_selector("app notin (x)").matches(None)


def test_greater_and_less_than_keep_their_symbols_in_the_canonical_form() -> None:
    selector = parse_selector("b < 10, a>2")
    assert str(selector) == "a>2,b<10"
    assert parse_selector(str(selector)) == selector


def test_canonical_form_sorts_keys_and_values_and_writes_single_equals() -> None:
    selector = parse_selector("z==1,a notin (c,b),m")
    assert str(selector) == "a notin (b,c),m,z=1"
    assert parse_selector(str(selector)) == selector
    assert not selector.empty()


def test_parsing_the_same_text_twice_gives_the_cached_selector() -> None:
    assert parse_selector("app=web,x") is parse_selector("app=web,x")


def test_selector_from_dict_requires_every_pair() -> None:
    selector = selector_from_dict({"tier": "front", "app": "web"})
    assert str(selector) == "app=web,tier=front"
    assert selector.matches(WEB)
    assert not selector.matches({"app": "web"})
    assert selector_from_dict({}).empty()


def test_selector_from_dict_rejects_invalid_values() -> None:
    with pytest.raises(errors.LabelSelectorError):
        selector_from_dict({"app": "-bad"})


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ("app=web,", 8),  # a dangling comma: a key expected at the end
        ("app in web", 7),  # '(' expected
        ("app in ()", 4),  # an empty set
        ("app web", 4),  # an operator expected
        ("=web", 0),  # a key expected
        ("app=web)", 7),  # stray ')'
        ("app in (a b)", 10),  # missing comma between values
        ("app in (a", 9),  # unclosed set
        ("-bad=x", 0),  # key must start alphanumeric
        ("a/b/c=x", 0),  # two slashes in a key
        ("/name=x", 0),  # empty prefix
        ("Upper.Case/name=x", 0),  # prefix must be lowercase DNS
        ("app=bad-", 4),  # value must end alphanumeric
        ("app=" + "v" * 64, 4),  # value too long
        ("k" * 64 + "=v", 0),  # name part too long
        ("app>x", 4),  # '>' and '<' take an integer
        ("app<", 4),  # an integer expected at the end
        ("app>-3", 4),  # an integer, but not a valid label value
        ("app>>3", 4),  # one operator only
        ("app<99999999999999999999", 4),  # beyond 64 bits
        ("!app=x", 4),  # '!' takes only a key
    ],
)
def test_bad_syntax_names_the_position_and_the_selector(text: str, position: int) -> None:
    with pytest.raises(errors.LabelSelectorError) as info:
        parse_selector(text)
    assert info.value.position == position
    assert f"position {position}" in str(info.value)
    assert repr(text) in str(info.value)


def test_label_selector_errors_are_configuration_errors() -> None:
    with pytest.raises(errors.ConfigurationError):
        parse_selector("a in")
    with pytest.raises(ValueError):
        parse_selector("a in")


def test_set_values_may_be_empty_strings() -> None:
    assert parse_selector("app in (,web)").matches({"app": ""})
    assert parse_selector("app in (web,)").matches({"app": ""})

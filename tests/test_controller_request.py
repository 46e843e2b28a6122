"""Request keys across clusters, resourceVersion ordering and the staleness record."""

from __future__ import annotations

import pytest

import kinformer
from kinformer import errors
from kinformer.controllers import Request, StalenessTracker, compare_resource_version


def test_requests_of_two_clusters_holding_default_app_are_two_keys() -> None:
    a, b = Request("app", "default", "root:a"), Request("app", "default", "root:b")
    assert a != b and len({a, b, Request("app", "default", "root:a")}) == 2
    assert (a.key, b.key) == ("root:a|default/app", "root:b|default/app")
    assert Request("app", "default").key == "default/app"
    assert Request("node-1", cluster="east").key == "east|node-1"


@pytest.mark.parametrize("request_", [
    Request("app"), Request("app", "default"), Request("app", "default", "root:a"), Request("n", cluster="c"),
])
def test_from_key_inverts_key(request_: Request) -> None:
    assert Request.from_key(request_.key) == request_


@pytest.mark.parametrize("request_", [
    Request("ops|admin"),  # an RBAC name may hold a '|' (a path segment name)
    Request("a/b"), Request("b", "a"), Request("x", "team|a"), Request("n", "ns", "ctx|1"),
    Request("50%7C"), Request("app", "default", "50%"),
])
def test_from_key_inverts_the_key_of_a_request_whose_parts_hold_the_separators(request_: Request) -> None:
    """A part holding a separator never reads back as another request (a reconcile of
    ClusterRole "ops|admin" is not a request for "admin" in cluster "ops")."""
    assert Request.from_key(request_.key) == request_


def test_requests_that_differ_have_keys_that_differ() -> None:
    assert Request("b", "a").key != Request("a/b").key
    assert Request("admin", cluster="ops").key != Request("ops|admin").key


def test_a_cluster_named_with_a_slash_keeps_its_plain_key() -> None:
    request = Request("app", "default", "arn:aws:eks:eu-west-1:123:cluster/prod")
    assert request.key == "arn:aws:eks:eu-west-1:123:cluster/prod|default/app"
    assert Request.from_key(request.key) == request


def test_a_request_is_frozen_and_checked() -> None:
    request = Request("app", "default", "root:a")
    with pytest.raises(AttributeError):
        request.name = "other"  # type: ignore[misc]
    with pytest.raises(errors.ConfigurationError):
        Request("")
    with pytest.raises(errors.InvalidKeyError):
        Request.from_key("a|b|c")
    with pytest.raises(errors.InvalidKeyError):
        Request.from_key("root:a|default/")


@pytest.mark.parametrize(("a", "b", "expected"), [
    ("1", "1", 0), ("9", "10", -1), ("10", "9", 1), ("123", "124", -1),
    ("99999999999999999999999", "100000000000000000000000", -1),
])
def test_resource_versions_compare_as_numbers(a: str, b: str, expected: int) -> None:
    assert compare_resource_version(a, b) == expected
    assert compare_resource_version(b, a) == -expected


@pytest.mark.parametrize("bad", ["", "0", "01", "-1", "1.5", "abc", " 1", "\u0661"])
def test_a_resource_version_that_is_not_a_positive_decimal_is_refused(bad: str) -> None:
    with pytest.raises(errors.InvalidResourceVersionError) as caught:
        compare_resource_version(bad, "1")
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, errors.KinformerError)
    with pytest.raises(errors.InvalidResourceVersionError):
        compare_resource_version("1", bad)


def test_the_public_names_are_exported() -> None:
    assert kinformer.Request is Request
    assert kinformer.compare_resource_version is compare_resource_version
    assert kinformer.InvalidResourceVersionError is errors.InvalidResourceVersionError


class Store:
    def __init__(self, rv: str) -> None:
        self.rv = rv

    def last_store_sync_resource_version(self) -> str:
        return self.rv


def test_a_request_waits_until_its_informer_saw_its_write() -> None:
    tracker = StalenessTracker("c")
    store = Store("9")
    key = Request("app", "default")
    assert tracker.ensure_ready(key)  # nothing written
    tracker.wrote_at(key, "v1/configmaps", store, "10")
    tracker.wrote_at(key, "v1/configmaps", store, "5")  # older: the newer one stays
    assert not tracker.ensure_ready(key)
    assert tracker.ensure_ready(Request("other"))
    store.rv = "10"
    assert tracker.ensure_ready(key)
    assert tracker.written(key) is None  # caught up: the record is dropped
    tracker.wrote_at(key, "v1/configmaps", store, "11")
    tracker.forget(key)
    assert tracker.ensure_ready(key)


def test_a_cache_that_went_back_past_where_it_stood_at_the_write_no_longer_holds_the_request() -> None:
    """The server was restored from a backup, or rebuilt, between a write and its event: the
    informer relisted at versions below the one written, which that server may never reach.
    The request was skipped as stale for good (one warning after 30 s, then on and on)."""
    tracker = StalenessTracker("c")
    store = Store("60")
    key = Request("app", "default")
    tracker.wrote_at(key, "v1/configmaps", store, "62")
    store.rv = "61"
    assert not tracker.ensure_ready(key)  # behind the write, but not behind where it stood
    store.rv = "11"  # relisted from the new server
    assert tracker.ensure_ready(key)
    assert tracker.written(key) is None


def test_a_write_to_an_informer_made_anew_is_not_merged_with_the_old_ones_and_a_stopped_one_holds_nothing(
) -> None:
    """A member cluster left and came back: its new informer has the old one's name. The old
    informer's record must neither outlive it (its cache never moves again) nor lend its
    higher version to the new cache (another server may count from lower versions)."""
    tracker = StalenessTracker("c")
    old, new = Store("60"), Store("5")
    stopped = False
    key = Request("app", "default", "member-1")
    tracker.wrote_at(key, "v1/configmaps@member-1", old, "62", lambda: stopped)
    assert not tracker.ensure_ready(key)  # running, behind its write
    stopped = True
    assert tracker.ensure_ready(key) and tracker.written(key) is None
    tracker.wrote_at(key, "v1/configmaps@member-1", old, "63")
    tracker.wrote_at(key, "v1/configmaps@member-1", new, "7")  # the new informer's own write
    assert tracker.written(key) == ("v1/configmaps@member-1", "7")
    new.rv = "7"
    assert tracker.ensure_ready(key)


def test_a_request_waits_for_every_cache_it_wrote_through_and_a_delete_clears_only_its_own() -> None:
    tracker = StalenessTracker("c")
    children, owners = Store("9"), Store("20")
    key = Request("app", "default")
    tracker.wrote_at(key, "v1/configmaps", children, "10")  # a child written, then the owner
    tracker.wrote_at(key, "example.com/v1/widgets", owners, "21")
    assert tracker.written(key) == ("example.com/v1/widgets", "21")
    owners.rv = "21"
    assert not tracker.ensure_ready(key)  # the child's cache is still behind
    assert tracker.written(key) == ("v1/configmaps", "10")  # the owner's record is dropped
    children.rv = "10"
    assert tracker.ensure_ready(key) and tracker.written(key) is None
    tracker.wrote_at(key, "example.com/v1/widgets", owners, "22")
    tracker.wrote_at(key, "v1/configmaps", children, "11")
    tracker.forget(key, "v1/configmaps")  # a child deleted: its answer is no version to wait for
    assert not tracker.ensure_ready(key)  # the owner's write still waits
    tracker.forget(key)
    assert tracker.ensure_ready(key)


def test_versions_that_are_not_numbers_turn_the_check_off_for_that_informer_once(
        caplog: pytest.LogCaptureFixture) -> None:
    tracker = StalenessTracker("c")
    store = Store("abc")
    for name in ("a", "b"):
        tracker.wrote_at(Request(name), "other", store, "xyz")
        assert tracker.ensure_ready(Request(name))
    assert [r.getMessage() for r in caplog.records if "staleness check off" in r.getMessage()] == [
        "staleness check off for informer=other: resourceVersion 'abc' is not a positive decimal "
        "integer without leading zeros"]

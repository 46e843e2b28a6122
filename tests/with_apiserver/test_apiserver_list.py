"""FakeAPIServer lists: pagination over a snapshot, resourceVersion rules, selectors."""

from __future__ import annotations

from typing import Any

from helpers import CONFIGMAPS, api_error
from kubernetes import client as k8s

from kinformer.testing import FakeAPIServer

NS = "default"


def fill(server: FakeAPIServer, count: int, **labels: str) -> None:
    server.bulk_create(CONFIGMAPS, [
        {"metadata": {"name": f"cm-{i:04d}", "namespace": NS, "labels": labels}}
        for i in range(count)])


def test_pages_come_from_one_snapshot_while_writes_go_on(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    fill(apiserver, 300)
    api = k8s.CoreV1Api(api_client)
    first = api.list_namespaced_config_map(NS, limit=100)
    assert first.metadata.remaining_item_count == 200
    names = [i.metadata.name for i in first.items]
    token = first.metadata._continue
    page_number = 0
    while token:
        # between pages: an object added, one not yet listed deleted, one not yet listed changed
        api.create_namespaced_config_map(NS, {"metadata": {"name": f"cm-{page_number:04d}-late"}})
        api.delete_namespaced_config_map(f"cm-{299 - page_number:04d}", NS)
        api.patch_namespaced_config_map(f"cm-{250 + page_number:04d}", NS, {"data": {"x": "y"}})
        page = api.list_namespaced_config_map(NS, limit=100, _continue=token)
        assert page.metadata.resource_version == first.metadata.resource_version
        assert all(i.data is None for i in page.items)
        names += [i.metadata.name for i in page.items]
        token = page.metadata._continue
        page_number += 1
    assert page_number == 2
    assert names == [f"cm-{i:04d}" for i in range(300)]
    assert len(api.list_namespaced_config_map(NS).items) == 300


def test_a_garbage_continue_token_is_400_and_a_compacted_one_410(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    fill(apiserver, 5)
    api = k8s.CoreV1Api(api_client)
    status, body = api_error(api.list_namespaced_config_map, NS, limit=2, _continue="garbage!")
    assert status == 400
    assert body["message"].startswith("invalid continue token: continue key is not valid: ")
    token = api.list_namespaced_config_map(NS, limit=2).metadata._continue
    apiserver.compact()
    status, body = api_error(api.list_namespaced_config_map, NS, limit=2, _continue=token)
    assert (status, body["reason"]) == (410, "Expired")


def test_an_expired_continue_token_hands_back_one_that_lists_the_rest_as_it_is_now(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    # etcd's storage answers a compacted continue token with 410 Expired whose Status carries,
    # in metadata.continue, an inconsistent token: the rest of the list after the page's last
    # key, from the current state and at the current resourceVersion
    fill(apiserver, 5)
    api = k8s.CoreV1Api(api_client)
    first = api.list_namespaced_config_map(NS, limit=2)
    assert [o.metadata.name for o in first.items] == ["cm-0000", "cm-0001"]
    apiserver.delete(CONFIGMAPS, NS, "cm-0002")
    apiserver.create(CONFIGMAPS, {"metadata": {"name": "cm-0001-late", "namespace": NS}})
    apiserver.create(CONFIGMAPS, {"metadata": {"name": "cm-0000-before", "namespace": NS}})
    apiserver.compact()
    status, body = api_error(api.list_namespaced_config_map, NS, limit=2,
                             _continue=first.metadata._continue)
    assert (status, body["reason"], body["code"]) == (410, "Expired", 410)
    assert body["message"].startswith(
        "The provided continue parameter is too old to display a consistent list result. You "
        "can start a new list without the continue parameter, or use the continue token in "
        "this response to retrieve the remainder of the results.")
    assert list(body)[:3] == ["kind", "apiVersion", "metadata"]
    rest = body["metadata"]["continue"]
    names, versions, token = [], set(), rest
    while token:
        page = api.list_namespaced_config_map(NS, limit=2, _continue=token)
        names += [o.metadata.name for o in page.items]
        versions.add(page.metadata.resource_version)
        token = page.metadata._continue
    # what came after cm-0001, as it is now: the late one in, the deleted one out
    assert names == ["cm-0001-late", "cm-0003", "cm-0004"]
    assert versions == {str(apiserver.current_resource_version())}
    # it is still a token of this list only
    assert api_error(api.list_namespaced_config_map, "kube-system", limit=2,
                     _continue=rest)[0] == 400


def test_a_continue_token_with_a_resource_version_is_400_except_with_zero(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    fill(apiserver, 5)
    api = k8s.CoreV1Api(api_client)
    token = api.list_namespaced_config_map(NS, limit=2).metadata._continue
    status, body = api_error(api.list_namespaced_config_map, NS, limit=2, _continue=token,
                             resource_version="1")
    assert (status, body["message"]) == (
        400, "specifying resource version is not allowed when using continue")
    # "0" is let through and the token continues, as on a real server (a pager written
    # before client-go cleared the version on later pages sends it so)
    page = api.list_namespaced_config_map(NS, limit=2, _continue=token, resource_version="0")
    assert [i.metadata.name for i in page.items] == ["cm-0002", "cm-0003"]


def test_an_exact_list_shows_the_past_until_it_is_compacted(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    api = k8s.CoreV1Api(api_client)
    api.create_namespaced_config_map(NS, {"metadata": {"name": "a"}, "data": {"v": "1"}})
    then = api.list_namespaced_config_map(NS).metadata.resource_version
    api.patch_namespaced_config_map("a", NS, {"data": {"v": "2"}})
    api.create_namespaced_config_map(NS, {"metadata": {"name": "b"}})
    past = api.list_namespaced_config_map(NS, resource_version=then,
                                          resource_version_match="Exact")
    assert past.metadata.resource_version == then
    assert [(i.metadata.name, i.data) for i in past.items] == [("a", {"v": "1"})]
    assert len(api.list_namespaced_config_map(NS, resource_version=then).items) == 2
    apiserver.compact()
    status, body = api_error(api.list_namespaced_config_map, NS, resource_version=then,
                             resource_version_match="Exact")
    # a compacted version reaches etcd's storage on a real server, which says so
    assert (status, body["reason"], body["message"]) == (
        410, "Expired", "The resourceVersion for the provided list is too old.")
    not_older = api.list_namespaced_config_map(NS, resource_version=then,
                                               resource_version_match="NotOlderThan")
    assert len(not_older.items) == 2


def test_a_version_with_a_limit_and_no_match_is_an_exact_list(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    # the semantics lists had before resourceVersionMatch, which kube-apiserver keeps: with a
    # limit, a version means Exact (the past, 410 once compacted); without one, NotOlderThan
    api = k8s.CoreV1Api(api_client)
    api.create_namespaced_config_map(NS, {"metadata": {"name": "a"}, "data": {"v": "1"}})
    then = api.list_namespaced_config_map(NS).metadata.resource_version
    api.patch_namespaced_config_map("a", NS, {"data": {"v": "2"}})
    api.create_namespaced_config_map(NS, {"metadata": {"name": "b"}})
    past = api.list_namespaced_config_map(NS, resource_version=then, limit=10)
    assert past.metadata.resource_version == then
    assert [(i.metadata.name, i.data) for i in past.items] == [("a", {"v": "1"})]
    apiserver.compact()
    status, body = api_error(api.list_namespaced_config_map, NS, resource_version=then, limit=10)
    assert (status, body["reason"]) == (410, "Expired")
    now = str(apiserver.current_resource_version())
    for kwargs in ({}, {"resource_version_match": "NotOlderThan", "limit": 10}):
        current = api.list_namespaced_config_map(NS, resource_version=then, **kwargs)
        assert current.metadata.resource_version == now
        assert [(i.metadata.name, i.data) for i in current.items] == [
            ("a", {"v": "2"}), ("b", None)]
    # at "0" the limit is ignored, and the list is of now
    assert api.list_namespaced_config_map(NS, resource_version="0",
                                          limit=1).metadata.resource_version == now


def test_resource_version_match_without_a_version_is_422(api_client: Any) -> None:
    status, body = api_error(k8s.CoreV1Api(api_client).list_namespaced_config_map, NS,
                             resource_version_match="NotOlderThan")
    assert (status, body["reason"]) == (422, "Invalid")


def test_a_version_from_the_future_times_out_as_too_large(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    future = str(int(apiserver.current_resource_version()) + 100)
    status, body = api_error(k8s.CoreV1Api(api_client).list_namespaced_config_map, NS,
                             resource_version=future)
    assert (status, body["reason"]) == (504, "Timeout")
    assert body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"


def test_resource_version_zero_serves_everything_ignoring_limit(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    fill(apiserver, 20)
    page = k8s.CoreV1Api(api_client).list_namespaced_config_map(NS, resource_version="0",
                                                                 limit=5)
    assert len(page.items) == 20
    assert not page.metadata._continue


def test_label_and_field_selectors_filter_lists(apiserver: FakeAPIServer, api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    api.create_namespace({"metadata": {"name": "other"}})
    for ns, name, labels in ((NS, "a", {"app": "web", "tier": "fe", "replicas": "3"}),
                             (NS, "b", {"app": "db", "replicas": "12"}),
                             ("other", "a", {"app": "web", "replicas": "many"})):
        api.create_namespaced_config_map(ns, {"metadata": {"name": name, "labels": labels}})

    def names(**kwargs: Any) -> list[str]:
        items = api.list_config_map_for_all_namespaces(**kwargs).items
        return [f"{i.metadata.namespace}/{i.metadata.name}" for i in items]

    assert names(label_selector="app=web") == ["default/a", "other/a"]
    assert names(label_selector="app in (db),!tier") == ["default/b"]
    assert names(label_selector="app!=web") == ["default/b"]
    assert names(label_selector="replicas>3") == ["default/b"]  # "many" is no integer
    assert names(label_selector="replicas<10,app=web") == ["default/a"]
    assert names(field_selector="metadata.name=a,metadata.namespace!=other") == ["default/a"]
    assert names(field_selector="metadata.namespace==other") == ["other/a"]


def test_pages_of_a_filtered_list_hold_only_matches(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    fill(apiserver, 10, app="web")
    api = k8s.CoreV1Api(api_client)
    api.create_namespaced_config_map(NS, {"metadata": {"name": "z", "labels": {"app": "db"}}})
    page = api.list_namespaced_config_map(NS, limit=4, label_selector="app=web")
    seen = [i.metadata.name for i in page.items]
    while page.metadata._continue:
        page = api.list_namespaced_config_map(NS, limit=4, label_selector="app=web",
                                              _continue=page.metadata._continue)
        seen += [i.metadata.name for i in page.items]
    assert seen == [f"cm-{i:04d}" for i in range(10)]


def test_each_page_applies_the_selectors_of_its_own_request(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    # the snapshot holds every object: a page asked without the first page's selector shows
    # them all from after the last one listed, as a real server does
    api = k8s.CoreV1Api(api_client)
    for i in range(6):
        api.create_namespaced_config_map(NS, {"metadata": {
            "name": f"c{i}", "labels": {"even": str(i % 2 == 0).lower()}}})
    first = api.list_namespaced_config_map(NS, limit=2, label_selector="even=true")
    assert [i.metadata.name for i in first.items] == ["c0", "c2"]
    assert first.metadata.remaining_item_count is None
    rest = api.list_namespaced_config_map(NS, limit=10, _continue=first.metadata._continue)
    assert [i.metadata.name for i in rest.items] == ["c3", "c4", "c5"]
    odd = api.list_namespaced_config_map(NS, limit=10, label_selector="even=false",
                                         _continue=first.metadata._continue)
    assert [i.metadata.name for i in odd.items] == ["c3", "c5"]
    by_name = api.list_namespaced_config_map(NS, limit=1, field_selector="metadata.name=c5",
                                             _continue=first.metadata._continue)
    assert [i.metadata.name for i in by_name.items] == ["c5"]
    assert not by_name.metadata._continue


def test_a_continue_token_continues_only_a_list_of_the_same_resource_and_namespace(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    fill(apiserver, 5)
    api = k8s.CoreV1Api(api_client)
    api.create_namespace({"metadata": {"name": "other"}})
    token = api.list_namespaced_config_map(NS, limit=2).metadata._continue
    for call, args in [
        (api.list_namespaced_secret, (NS,)),
        (api.list_namespaced_config_map, ("other",)),
        (api.list_config_map_for_all_namespaces, ()),
    ]:
        status, body = api_error(call, *args, limit=2, _continue=token)
        assert (status, body["reason"]) == (400, "BadRequest"), call
        assert body["message"].startswith(
            "invalid continue token: continue key is not valid: "), body
    every = api.list_config_map_for_all_namespaces(limit=2).metadata._continue
    status, _ = api_error(api.list_namespaced_config_map, NS, limit=2, _continue=every)
    assert status == 400
    page = api.list_namespaced_config_map(NS, limit=2, _continue=token)
    assert [i.metadata.name for i in page.items] == ["cm-0002", "cm-0003"]

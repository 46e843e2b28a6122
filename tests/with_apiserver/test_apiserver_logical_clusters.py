"""FakeAPIServer(logical_clusters=True): kcp's /clusters/<name> and /clusters/* over HTTP."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from helpers import CONFIGMAPS, api_error, cm_manifest, crd, http_exchange, request
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch

from kinformer import ConfigurationError, errors
from kinformer.gvr import GroupVersionResource
from kinformer.testing import FakeAPIServer, wait_for

NS = "default"
NAMESPACES = GroupVersionResource("", "v1", "namespaces")
WIDGETS = GroupVersionResource("example.com", "v1", "widgets")
ANNOTATION = "kcp.io/cluster"


@pytest.fixture
def server(logical_clusters_server: FakeAPIServer) -> FakeAPIServer:
    return logical_clusters_server  # and client_of(cluster): see conftest


def core(client_of: Callable[[str | None], Any], cluster: str | None) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(client_of(cluster))


class Stream:
    """A raw watch of ConfigMaps in every namespace, read event by event; closed by the test."""

    def __init__(self, api: k8s.CoreV1Api, **query: Any) -> None:
        self.response = api.list_config_map_for_all_namespaces(
            watch=True, _preload_content=False, _request_timeout=10, **query)
        self._lines = k8s_watch.watch.iter_resp_lines(self.response)

    def next(self) -> dict[str, Any]:
        return json.loads(next(self._lines))  # type: ignore[no-any-return]

    def rest(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self._lines]

    def close(self) -> None:
        self.response.close()


@pytest.fixture
def streams() -> Iterator[list[Stream]]:
    opened: list[Stream] = []
    yield opened
    for stream in opened:
        stream.close()


def cluster_of(obj: Any) -> str:
    """The ``kcp.io/cluster`` annotation of a decoded object or an official-client model."""
    if isinstance(obj, dict):
        return str(obj["metadata"]["annotations"][ANNOTATION])
    return str(obj.metadata.annotations[ANNOTATION])


def described(event: dict[str, Any]) -> tuple[str, str, str]:
    obj = event["object"]
    return event["type"], cluster_of(obj), obj["metadata"]["name"]


# ---- one logical cluster ---------------------------------------------------------------------


def test_the_official_client_of_one_logical_cluster_creates_reads_changes_and_deletes_there(
    server: FakeAPIServer, client_of: Callable[[str | None], Any],
) -> None:
    b = core(client_of, "b")
    created = b.create_namespaced_config_map(NS, cm_manifest("app", {"v": "1"}))
    assert cluster_of(created) == "b"
    assert b.read_namespaced_config_map("app", NS).data == {"v": "1"}
    b.patch_namespaced_config_map("app", NS, {"data": {"v": "2"}})
    current = b.read_namespaced_config_map("app", NS)
    current.data["w"] = "3"
    assert b.replace_namespaced_config_map("app", NS, current).data == {"v": "2", "w": "3"}
    assert [c.metadata.name for c in b.list_namespaced_config_map(NS).items] == ["app"]
    root = core(client_of, None)
    assert api_error(root.read_namespaced_config_map, "app", NS)[0] == 404  # not the root's
    b.delete_namespaced_config_map("app", NS)
    assert api_error(b.read_namespaced_config_map, "app", NS)[0] == 404
    paths = {path for _, path, _, _ in server.requests}
    assert f"/clusters/b/api/v1/namespaces/{NS}/configmaps/app" in paths
    # server-side apply creates there; a delete of the collection empties only that cluster
    status, applied = request(client_of("b"), "PATCH", f"/api/v1/namespaces/{NS}/configmaps/ssa",
                              {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}},
                              "application/apply-patch+yaml", [("fieldManager", "test")])
    assert (status, cluster_of(applied)) == (201, "b")
    root.create_namespaced_config_map(NS, cm_manifest("stays"))
    b.delete_collection_namespaced_config_map(NS)
    assert b.list_namespaced_config_map(NS).items == []
    assert [c.metadata.name for c in root.list_namespaced_config_map(NS).items] == ["stays"]


def test_each_cluster_keeps_its_own_object_of_one_name_annotated_with_its_cluster(
    server: FakeAPIServer, client_of: Callable[[str | None], Any],
) -> None:
    for cluster in ("a", "root:org:team"):
        manifest = cm_manifest("app", {"cluster": cluster})
        manifest["metadata"]["annotations"] = {ANNOTATION: "somewhere-else", "keep": "me"}
        core(client_of, cluster).create_namespaced_config_map(NS, manifest)
    core(client_of, None).create_namespaced_config_map(NS, cm_manifest("app", {"cluster": "-"}))
    for cluster in ("a", "root:org:team"):
        stored = core(client_of, cluster).read_namespaced_config_map("app", NS)
        assert stored.data == {"cluster": cluster}
        assert stored.metadata.annotations == {ANNOTATION: cluster, "keep": "me"}
    assert cluster_of(core(client_of, "root").read_namespaced_config_map("app", NS)) == "root"
    # an update cannot move an object to another cluster's name, nor drop it
    a = core(client_of, "a")
    moved = a.read_namespaced_config_map("app", NS)
    moved.metadata.annotations = {ANNOTATION: "b"}
    assert cluster_of(a.replace_namespaced_config_map("app", NS, moved)) == "a"
    patch = [{"op": "remove", "path": "/metadata/annotations"}]
    assert cluster_of(a.patch_namespaced_config_map("app", NS, patch)) == "a"


def test_namespaces_belong_to_their_logical_cluster(
    client_of: Callable[[str | None], Any],
) -> None:
    a, b = core(client_of, "a"), core(client_of, "b")
    assert sorted(n.metadata.name for n in b.list_namespace().items) == [
        "default", "kube-node-lease", "kube-public", "kube-system"]  # a new cluster's namespaces
    assert [s.metadata.name for s in b.list_namespaced_service_account(NS).items] == ["default"]
    a.create_namespace({"metadata": {"name": "team"}})
    status, body = api_error(b.create_namespaced_config_map, "team", cm_manifest("x"))
    assert (status, body["message"]) == (404, 'namespaces "team" not found')
    a.create_namespaced_config_map("team", cm_manifest("x"))
    b.create_namespace({"metadata": {"name": "team"}})
    b.create_namespaced_config_map("team", cm_manifest("x"))
    a.delete_namespace("team")  # takes a's objects with it, not b's
    assert api_error(a.read_namespaced_config_map, "x", "team")[0] == 404
    assert b.read_namespaced_config_map("x", "team").metadata.name == "x"


def test_a_name_outside_kcps_grammar_is_400_with_a_status(server: FakeAPIServer) -> None:
    for name in ("Upper", "under_score", "-dash", "dash-", "a::b", "a:", "x" * 64):
        status, _, body = http_exchange(server, "GET", f"/clusters/{name}/api/v1/configmaps")
        assert status == 400, name
        assert json.loads(body) == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'invalid cluster: "{name}" does not match the regex',
            "reason": "BadRequest", "code": 400}
    for name in ("root:org:team", "a-1", "x" * 63, "0"):
        assert http_exchange(server, "GET", f"/clusters/{name}/api/v1/configmaps")[0] == 200
    assert http_exchange(server, "GET", "/clusters")[0] == 404
    assert http_exchange(server, "GET", "/clusters/b")[0] == 404
    # kubectl escapes the wildcard
    status, _, body = http_exchange(server, "GET", "/clusters/%2A/api/v1/namespaces")
    assert (status, len(json.loads(body)["items"])) == (200, 4 * 5)  # root and the four above


def test_discovery_version_health_and_openapi_are_served_under_a_cluster_prefix(
    server: FakeAPIServer,
) -> None:
    for prefix in ("/clusters/b", "/clusters/*"):
        for path in ("/api", "/api/v1", "/apis", "/apis/apps/v1", "/version", "/openapi/v3",
                     "/openapi/v3/api/v1", "/healthz", "/readyz"):
            status, _, body = http_exchange(server, "GET", prefix + path)
            assert status == 200, (prefix, path, body)
            assert body == http_exchange(server, "GET", path)[2]  # as at the root


def test_a_crd_serves_its_resource_in_its_own_cluster_and_across_clusters(
    server: FakeAPIServer, client_of: Callable[[str | None], Any],
) -> None:
    k8s.ApiextensionsV1Api(client_of("a")).create_custom_resource_definition(crd(WIDGETS))
    custom = {c: k8s.CustomObjectsApi(client_of(c)) for c in ("a", "b", "*")}
    custom["a"].create_namespaced_custom_object(
        "example.com", "v1", NS, "widgets",
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})

    def served(prefix: str) -> list[str]:
        status, _, body = http_exchange(server, "GET", f"{prefix}/apis/example.com/v1")
        return [r["name"] for r in json.loads(body)["resources"]] if status == 200 else []

    assert served("/clusters/a") == ["widgets"]
    assert served("/clusters/*") == ["widgets"]
    assert served("/clusters/b") == [] and served("") == []  # kcp shares no CRD between clusters
    assert api_error(custom["b"].list_namespaced_custom_object,
                     "example.com", "v1", NS, "widgets")[0] == 404
    across = custom["*"].list_cluster_custom_object("example.com", "v1", "widgets")
    assert [(cluster_of(w), w["metadata"]["name"]) for w in across["items"]] == [("a", "w")]


def test_without_logical_clusters_cluster_paths_are_404_and_objects_carry_no_annotation(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    for path in ("/clusters/b/api/v1/configmaps", "/clusters/*/api/v1/configmaps",
                 "/clusters/root/version"):
        status, _, body = http_exchange(apiserver, "GET", path)
        assert (status, json.loads(body)["reason"]) == (404, "NotFound")
    created = k8s.CoreV1Api(api_client).create_namespaced_config_map(NS, cm_manifest("a"))
    assert created.metadata.annotations is None
    assert not apiserver.logical_clusters


# ---- across clusters -------------------------------------------------------------------------


def fill(server: FakeAPIServer, clusters: tuple[str, ...], count: int) -> None:
    for cluster in clusters:
        server.bulk_create(CONFIGMAPS, (
            {"metadata": {"name": f"cm-{i}", "namespace": NS, "labels": {"even": str(i % 2 == 0)}}}
            for i in range(count)), cluster=cluster)


def test_a_list_across_clusters_pages_and_filters_at_one_resource_version(
    server: FakeAPIServer, client_of: Callable[[str | None], Any],
) -> None:
    fill(server, ("c", "a", "b"), 4)
    server.create(NAMESPACES, {"metadata": {"name": "other"}}, cluster="b")
    server.create(CONFIGMAPS, {"metadata": {"name": "elsewhere", "namespace": "other"}},
                  cluster="b")
    everywhere = core(client_of, "*")
    first = everywhere.list_config_map_for_all_namespaces(limit=5)
    assert first.metadata.remaining_item_count == 8
    items, token = list(first.items), first.metadata._continue
    core(client_of, "a").delete_namespaced_config_map("cm-3", NS)  # pages keep their snapshot
    while token:
        page = everywhere.list_config_map_for_all_namespaces(limit=5, _continue=token)
        assert page.metadata.resource_version == first.metadata.resource_version
        items += page.items
        token = page.metadata._continue
    assert [(cluster_of(i), i.metadata.name) for i in items] == [
        (c, f"cm-{i}") for c in ("a", "b") for i in range(4)] + [("b", "elsewhere")] + [
        ("c", f"cm-{i}") for i in range(4)]
    even = everywhere.list_config_map_for_all_namespaces(label_selector="even=True")
    assert [(cluster_of(i), i.metadata.name) for i in even.items] == [
        (c, n) for c in ("a", "b", "c") for n in ("cm-0", "cm-2")]
    in_other = everywhere.list_namespaced_config_map("other")
    assert [i.metadata.name for i in in_other.items] == ["elsewhere"]
    named = everywhere.list_config_map_for_all_namespaces(field_selector="metadata.name=cm-1")
    assert [cluster_of(i) for i in named.items] == ["a", "b", "c"]


def test_a_continue_token_continues_only_a_list_of_the_same_cluster(
    server: FakeAPIServer, client_of: Callable[[str | None], Any],
) -> None:
    fill(server, ("a", "b"), 3)
    token = core(client_of, "*").list_config_map_for_all_namespaces(limit=2).metadata._continue
    status, body = api_error(core(client_of, "a").list_config_map_for_all_namespaces,
                             limit=2, _continue=token)
    assert (status, body["reason"]) == (400, "BadRequest")
    a_token = core(client_of, "a").list_namespaced_config_map(NS, limit=2).metadata._continue
    page = core(client_of, "a").list_namespaced_config_map(NS, limit=2, _continue=a_token)
    assert [i.metadata.name for i in page.items] == ["cm-2"]


def test_an_exact_list_across_clusters_shows_the_past_until_compacted(
    server: FakeAPIServer, client_of: Callable[[str | None], Any],
) -> None:
    fill(server, ("a", "b"), 2)
    then = server.current_resource_version()
    server.delete(CONFIGMAPS, NS, "cm-0", cluster="a")
    server.create(CONFIGMAPS, {"metadata": {"name": "late", "namespace": NS}}, cluster="c")
    server.update(CONFIGMAPS, {"metadata": {"name": "cm-1", "namespace": NS},
                               "data": {"changed": "yes"}}, cluster="b")
    everywhere = core(client_of, "*")
    past = everywhere.list_config_map_for_all_namespaces(resource_version=then,
                                                         resource_version_match="Exact")
    assert past.metadata.resource_version == then
    assert [(cluster_of(i), i.metadata.name, i.data) for i in past.items] == [
        ("a", "cm-0", None), ("a", "cm-1", None), ("b", "cm-0", None), ("b", "cm-1", None)]
    server.compact()
    status, _ = api_error(everywhere.list_config_map_for_all_namespaces, resource_version=then,
                          resource_version_match="Exact")
    assert status == 410


def test_a_watch_across_clusters_streams_every_clusters_changes_and_resumes(
    server: FakeAPIServer, client_of: Callable[[str | None], Any], streams: list[Stream],
) -> None:
    everywhere = core(client_of, "*")
    start = everywhere.list_config_map_for_all_namespaces().metadata.resource_version
    streams.append(stream := Stream(everywhere, resource_version=start))
    assert server.wait_for_watchers(CONFIGMAPS, cluster="*")
    assert server.watcher_count(CONFIGMAPS, cluster="a") == 0
    core(client_of, "a").create_namespaced_config_map(NS, cm_manifest("x"))
    core(client_of, None).create_namespaced_config_map(NS, cm_manifest("x"))
    server.create(CONFIGMAPS, {"metadata": {"name": "y", "namespace": NS}}, cluster="b")
    server.delete(CONFIGMAPS, NS, "x", cluster="a")
    seen = [described(stream.next()) for _ in range(4)]
    assert seen == [("ADDED", "a", "x"), ("ADDED", "root", "x"), ("ADDED", "b", "y"),
                    ("DELETED", "a", "x")]
    # the same changes again from the version before them, once more after a compaction: 410
    streams.append(again := Stream(everywhere, resource_version=start, timeout_seconds=1))
    assert [described(e) for e in again.rest()] == seen
    server.compact()
    streams.append(expired := Stream(everywhere, resource_version=start))
    event = expired.next()
    assert (event["type"], event["object"]["code"]) == ("ERROR", 410)


def test_a_watch_across_clusters_sends_initial_events_then_its_bookmarks(
    server: FakeAPIServer, client_of: Callable[[str | None], Any], streams: list[Stream],
) -> None:
    fill(server, ("b", "a"), 1)
    streams.append(stream := Stream(
        core(client_of, "*"), send_initial_events=True, resource_version_match="NotOlderThan",
        allow_watch_bookmarks=True, timeout_seconds=1))
    events = stream.rest()
    assert [described(e) for e in events[:2]] == [("ADDED", "a", "cm-0"), ("ADDED", "b", "cm-0")]
    marker = events[2]
    assert marker["type"] == "BOOKMARK"
    assert marker["object"]["metadata"] == {
        "resourceVersion": server.current_resource_version(),
        "annotations": {"k8s.io/initial-events-end": "true"}}


def test_a_watch_of_one_cluster_sees_nothing_of_the_others(
    server: FakeAPIServer, client_of: Callable[[str | None], Any], streams: list[Stream],
) -> None:
    b = core(client_of, "b")
    start = b.list_config_map_for_all_namespaces().metadata.resource_version
    streams.append(stream := Stream(b, resource_version=start))
    assert server.wait_for_watchers(CONFIGMAPS, cluster="b")
    server.create(CONFIGMAPS, {"metadata": {"name": "x", "namespace": NS}}, cluster="a")
    server.create(CONFIGMAPS, {"metadata": {"name": "x", "namespace": NS}})
    server.create(CONFIGMAPS, {"metadata": {"name": "mine", "namespace": NS}}, cluster="b")
    assert described(stream.next()) == ("ADDED", "b", "mine")
    streams.append(replayed := Stream(b, resource_version=start))  # from the history
    assert described(replayed.next()) == ("ADDED", "b", "mine")


def test_every_verb_but_list_and_watch_across_clusters_is_405(
    server: FakeAPIServer, client_of: Callable[[str | None], Any],
) -> None:
    server.create(CONFIGMAPS, {"metadata": {"name": "x", "namespace": NS}}, cluster="a")
    everywhere = client_of("*")
    item = f"/api/v1/namespaces/{NS}/configmaps/x"
    for method, path, body, verb in (
            ("GET", item, None, "get"),
            ("POST", f"/api/v1/namespaces/{NS}/configmaps", cm_manifest("y"), "create"),
            ("PUT", item, cm_manifest("x"), "update"),
            ("PATCH", item, {"data": {"a": "b"}}, "patch"),
            ("DELETE", item, None, "delete"),
            ("DELETE", f"/api/v1/namespaces/{NS}/configmaps", None, "deletecollection"),
            ("POST", f"/api/v1/namespaces/{NS}/pods/p/exec", None, "create")):
        content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
        status, answer = request(everywhere, method, path, body, content_type)
        resource = "pods" if "pods" in path else "configmaps"
        assert (status, answer) == (405, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'{verb} is not supported on resources of kind "{resource}" in the `*` '
                       f"logical cluster",
            "reason": "MethodNotAllowed", "details": {"kind": resource}, "code": 405}), method
    status, answer = request(everywhere, "GET", "/apis/apps/v1/namespaces/default/deployments/d")
    assert (status, answer["details"]) == (405, {"group": "apps", "kind": "deployments"})
    assert [o["metadata"]["name"] for o in server.list_objects(CONFIGMAPS, cluster="*")] == ["x"]


def test_crd_deletion_ends_watches_across_clusters_once_no_cluster_serves_it(
    server: FakeAPIServer, client_of: Callable[[str | None], Any],
) -> None:
    custom = k8s.CustomObjectsApi(client_of("*"))
    for cluster in ("a", "b"):
        k8s.ApiextensionsV1Api(client_of(cluster)).create_custom_resource_definition(crd(WIDGETS))
        server.create(WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget",
                                "metadata": {"name": "w", "namespace": NS}}, cluster=cluster)
    response = custom.list_cluster_custom_object(
        "example.com", "v1", "widgets", watch=True, resource_version=server.current_resource_version(),
        _preload_content=False, _request_timeout=10)
    try:
        lines = k8s_watch.watch.iter_resp_lines(response)
        assert server.wait_for_watchers(WIDGETS, cluster="*")
        server.delete(GroupVersionResource("apiextensions.k8s.io", "v1",
                                           "customresourcedefinitions"), None,
                      "widgets.example.com", cluster="a")
        assert described(json.loads(next(lines))) == ("DELETED", "a", "w")
        assert server.watcher_count(WIDGETS, cluster="*") == 1  # b still serves widgets
        server.delete(GroupVersionResource("apiextensions.k8s.io", "v1",
                                           "customresourcedefinitions"), None,
                      "widgets.example.com", cluster="b")
        assert [described(json.loads(line)) for line in lines] == [("DELETED", "b", "w")]
    finally:
        response.close()


# ---- fault switches and helpers --------------------------------------------------------------


def test_the_fault_switches_act_on_every_logical_cluster(
    server: FakeAPIServer, client_of: Callable[[str | None], Any], streams: list[Stream],
) -> None:
    a, everywhere = core(client_of, "a"), core(client_of, "*")
    streams.append(one := Stream(a, resource_version="0"))
    streams.append(across := Stream(everywhere, resource_version="0"))
    assert server.wait_for_watchers(CONFIGMAPS, 2)
    assert server.drop_watches() == 2
    for stream in (one, across):
        with pytest.raises((urllib3.exceptions.ProtocolError, StopIteration)):
            stream.next()
    assert wait_for(lambda: server.watcher_count(CONFIGMAPS) == 0, timeout=5)
    server.fail_next(status=503, verb="list", resource="configmaps")
    assert api_error(everywhere.list_config_map_for_all_namespaces)[0] == 503
    server.forbid("configmaps", "create")
    assert api_error(a.create_namespaced_config_map, NS, cm_manifest("x"))[0] == 403
    server.allow("configmaps", "create")
    a.create_namespaced_config_map(NS, cm_manifest("x"))


def test_the_helpers_take_a_logical_cluster_by_keyword(server: FakeAPIServer) -> None:
    server.create(CONFIGMAPS, {"metadata": {"name": "x", "namespace": NS}, "data": {"v": "a"}},
                  cluster="a")
    server.create(CONFIGMAPS, {"metadata": {"name": "x", "namespace": NS}, "data": {"v": "r"}})
    assert server.get(CONFIGMAPS, NS, "x", cluster="a")["data"] == {"v": "a"}
    assert server.get(CONFIGMAPS, NS, "x", cluster="root")["data"] == {"v": "r"}
    assert cluster_of(server.get(CONFIGMAPS, NS, "x")) == "root"
    changed = server.update(CONFIGMAPS, {"metadata": {"name": "x", "namespace": NS},
                                         "data": {"v": "a2"}}, cluster="a")
    assert (changed["data"], cluster_of(changed)) == ({"v": "a2"}, "a")
    assert [cluster_of(o) for o in server.list_objects(CONFIGMAPS, NS, cluster="*")] == [
        "a", "root"]
    with pytest.raises(errors.APIError) as info:
        server.get(CONFIGMAPS, NS, "x", cluster="*")
    assert info.value.status == 405
    with pytest.raises(errors.APIError):
        server.create(CONFIGMAPS, {"metadata": {"name": "y", "namespace": NS}}, cluster="*")
    server.delete(CONFIGMAPS, NS, "x", cluster="a")
    assert server.list_objects(CONFIGMAPS, NS, cluster="a") == []
    assert len(server.list_objects(CONFIGMAPS, NS)) == 1
    with pytest.raises(ConfigurationError, match="does not match"):
        server.list_objects(CONFIGMAPS, cluster="Not_A_Name")
    assert server.api_client("root:x").configuration.host == f"{server.url}/clusters/root:x"
    assert server.kubeconfig("b")["clusters"][0]["cluster"]["server"] == f"{server.url}/clusters/b"


def test_a_server_without_logical_clusters_refuses_a_cluster_keyword(
    apiserver: FakeAPIServer,
) -> None:
    with pytest.raises(ConfigurationError, match="logical_clusters=True"):
        apiserver.create(CONFIGMAPS, {"metadata": {"name": "x", "namespace": NS}}, cluster="b")
    with pytest.raises(ConfigurationError):
        apiserver.api_client("b")
    apiserver.create(CONFIGMAPS, {"metadata": {"name": "x", "namespace": NS}}, cluster="root")
    assert apiserver.get(CONFIGMAPS, NS, "x")["metadata"].get("annotations") is None


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_gets_and_creates_in_a_logical_cluster(
    server: FakeAPIServer, tmp_path: Path,
) -> None:
    server.create(CONFIGMAPS, {"metadata": {"name": "in-b", "namespace": NS}}, cluster="b")
    server.create(CONFIGMAPS, {"metadata": {"name": "in-root", "namespace": NS}})

    def kubectl(cluster: str, *args: str) -> str:
        kubeconfig = server.write_kubeconfig(tmp_path / f"kubeconfig-{len(args)}", cluster)
        result = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert kubectl("b", "get", "cm", "-o", "name") == "configmap/in-b\n"
    kubectl("b", "create", "cm", "made", "--from-literal=a=b")
    assert cluster_of(server.get(CONFIGMAPS, NS, "made", cluster="b")) == "b"
    assert kubectl("*", "get", "cm", "-A", "-o", "name").split() == [
        "configmap/in-b", "configmap/made", "configmap/in-root"]


def test_preload_stores_into_the_cluster_named_and_annotates_it(
    server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    server.preload(CONFIGMAPS, [{**cm_manifest(f"c{i}"), "metadata": {"name": f"c{i}", "namespace": NS}}
                              for i in range(3)], cluster="a")
    listed = core(client_of, "a").list_namespaced_config_map(NS).items
    assert sorted(cm.metadata.name for cm in listed) == ["c0", "c1", "c2"]
    assert {cm.metadata.annotations[ANNOTATION] for cm in listed} == {"a"}
    assert core(client_of, "b").list_namespaced_config_map(NS).items == []

"""FakeAPIServer CustomResourceDefinitions: served at once, discovered, and removed with a watch."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import crd
from kubernetes import client as k8s
from kubernetes import dynamic
from kubernetes import watch as k8s_watch

from kinformer.gvr import GroupVersionResource
from kinformer.testing import FakeAPIServer

GROUP = "example.com"
WIDGETS = GroupVersionResource(GROUP, "v1", "widgets")


def widgets_crd() -> dict[str, Any]:
    """Widgets with a short name and a status subresource, both of which tests look at."""
    return crd(WIDGETS, short_names=("wi",), status=True)


def widget(name: str, size: int = 1) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": {"size": size}}


def group_names(raw: Any) -> list[str]:
    return [g["name"] for g in raw("GET", "/apis")[1]["groups"]]


def test_a_created_crd_is_served_at_once_and_discovered(api_client: Any, raw: Any) -> None:
    ext = k8s.ApiextensionsV1Api(api_client)
    made = ext.create_custom_resource_definition(widgets_crd())
    assert any(c.type == "Established" and c.status == "True" for c in made.status.conditions)
    assert GROUP in group_names(raw)
    resources = raw("GET", f"/apis/{GROUP}/v1")[1]
    assert resources["apiVersion"] == "v1"
    entry = next(r for r in resources["resources"] if r["name"] == "widgets")
    assert entry["kind"] == "Widget" and entry["namespaced"] is True
    assert entry["singularName"] == "widget" and entry["shortNames"] == ["wi"]
    custom = k8s.CustomObjectsApi(api_client)
    created = custom.create_namespaced_custom_object(GROUP, "v1", "default", "widgets",
                                                     widget("w"))
    assert created["metadata"]["generation"] == 1
    changed = custom.patch_namespaced_custom_object(GROUP, "v1", "default", "widgets", "w",
                                                    {"spec": {"size": 2}})
    assert changed["metadata"]["generation"] == 2
    listed = custom.list_namespaced_custom_object(GROUP, "v1", "default", "widgets")
    assert listed["kind"] == "WidgetList"
    assert [i["spec"]["size"] for i in listed["items"]] == [2]


def test_custom_objects_refuse_strategic_merge_and_name_their_group_in_errors(
    api_client: Any, raw: Any,
) -> None:
    k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition(widgets_crd())
    custom = k8s.CustomObjectsApi(api_client)
    custom.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget("w"))
    status, body = raw("PATCH", f"/apis/{GROUP}/v1/namespaces/default/widgets/w",
                       body={"spec": {"size": 3}},
                       content_type="application/strategic-merge-patch+json")
    assert (status, body["reason"]) == (415, "UnsupportedMediaType")
    with pytest.raises(k8s.ApiException) as info:
        custom.get_namespaced_custom_object(GROUP, "v1", "default", "widgets", "nope")
    body = json.loads(info.value.body)
    assert body["message"] == f'widgets.{GROUP} "nope" not found'
    assert body["details"] == {"name": "nope", "group": GROUP, "kind": "widgets"}
    done = custom.delete_namespaced_custom_object(GROUP, "v1", "default", "widgets", "w")
    assert done["status"] == "Success" and done["details"]["group"] == GROUP


def test_status_subresource_writes_only_status(api_client: Any) -> None:
    k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition(widgets_crd())
    custom = k8s.CustomObjectsApi(api_client)
    custom.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget("w"))
    main = custom.patch_namespaced_custom_object(GROUP, "v1", "default", "widgets", "w",
                                                 {"status": {"ready": True}})
    assert "status" not in main
    sub = custom.patch_namespaced_custom_object_status(
        GROUP, "v1", "default", "widgets", "w", {"status": {"ready": True}, "spec": {"size": 9}})
    assert sub["status"] == {"ready": True} and sub["spec"] == {"size": 1}


def test_a_cluster_scoped_crd_serves_every_version(api_client: Any) -> None:
    k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition(
        crd(GroupVersionResource(GROUP, "v1", "gadgets"), "Cluster", versions=("v1", "v2")))
    custom = k8s.CustomObjectsApi(api_client)
    custom.create_cluster_custom_object(GROUP, "v1", "gadgets", {
        "apiVersion": f"{GROUP}/v1", "kind": "Gadget", "metadata": {"name": "g"}})
    as_v2 = custom.get_cluster_custom_object(GROUP, "v2", "gadgets", "g")
    assert as_v2["apiVersion"] == f"{GROUP}/v2"
    assert "namespace" not in as_v2["metadata"]


def test_deleting_a_crd_deletes_its_objects_ends_watches_and_leaves_discovery(
    apiserver: FakeAPIServer, api_client: Any, raw: Any,
) -> None:
    ext = k8s.ApiextensionsV1Api(api_client)
    ext.create_custom_resource_definition(widgets_crd())
    custom = k8s.CustomObjectsApi(api_client)
    for name in ("a", "b"):
        custom.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget(name))
    since = custom.list_cluster_custom_object(GROUP, "v1", "widgets")["metadata"][
        "resourceVersion"]
    response = custom.list_cluster_custom_object(GROUP, "v1", "widgets", watch=True,
                                                 resource_version=since, _preload_content=False,
                                                 _request_timeout=10)
    try:
        assert apiserver.wait_for_watchers(WIDGETS, 1, timeout=5)
        ext.delete_custom_resource_definition(f"widgets.{GROUP}")
        events = [json.loads(line) for line in k8s_watch.watch.iter_resp_lines(response)]
    finally:
        response.close()
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("DELETED", "a"), ("DELETED", "b")]
    assert GROUP not in group_names(raw)
    assert raw("GET", f"/apis/{GROUP}/v1/widgets")[0] == 404


def test_dynamic_client_discovers_and_reads_builtins_and_crds(api_client: Any) -> None:
    k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition(widgets_crd())
    k8s.CustomObjectsApi(api_client).create_namespaced_custom_object(
        GROUP, "v1", "default", "widgets", widget("w"))
    client = dynamic.DynamicClient(api_client)
    widgets = client.resources.get(api_version=f"{GROUP}/v1", kind="Widget")
    assert widgets.namespaced
    assert [i.metadata.name for i in widgets.get(namespace="default").items] == ["w"]
    assert widgets.get(name="w", namespace="default").spec.size == 1
    configmaps = client.resources.get(api_version="v1", kind="ConfigMap")
    configmaps.create(body={"metadata": {"name": "c"}}, namespace="default")
    seen = []
    for event in configmaps.watch(namespace="default", resource_version="0", timeout=5):
        seen.append((event["type"], event["object"].metadata.name))
        break
    assert seen == [("ADDED", "c")]
    deployments = client.resources.get(api_version="apps/v1", kind="Deployment")
    assert deployments.get(namespace="default").items == []


def test_a_malformed_crd_is_422_not_a_server_error(raw: Any) -> None:
    bad = widgets_crd()
    bad["spec"]["names"]["shortNames"] = 7
    bad["spec"]["versions"][0]["subresources"] = 3
    status, body = raw("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                       body=bad)
    assert (status, body["reason"]) == (422, "Invalid")
    assert GROUP not in group_names(raw)

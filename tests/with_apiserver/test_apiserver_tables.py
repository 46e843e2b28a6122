"""FakeAPIServer serves the Table form kubectl asks for (APISERVER-FACTS 37): the columns
kube-apiserver prints per type, with their priorities, each row's cells and its
PartialObjectMetadata; custom resources print their CRD's additionalPrinterColumns.

Requests go through the official client's request path with the exact Accept header kubectl
sends (the typed APIs would ask for the plain object).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import TIMEOUT, crd
from kubernetes import client as k8s

from kinformer.gvr import GroupVersionResource
from kinformer.testing import FakeAPIServer
from kinformer.testing._apiserver.registry import printers

NS = "default"
KUBECTL_ACCEPT = ("application/json;as=Table;v=v1;g=meta.k8s.io,"
                  "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
WIDGETS = GroupVersionResource("example.com", "v1", "widgets")
CRDS = GroupVersionResource("apiextensions.k8s.io", "v1", "customresourcedefinitions")


def get(api_client: Any, path: str, accept: str = KUBECTL_ACCEPT,
        query: list[tuple[str, str]] | None = None) -> tuple[int, Any]:
    """A GET through the official client's request path with ``accept``: (status, JSON)."""
    params = api_client.param_serialize("GET", path, query_params=query or [],
                                        header_params={"Accept": accept})
    response = api_client.call_api(*params)
    return int(response.status), json.loads(response.read())


def columns(table: dict[str, Any]) -> list[tuple[str, int]]:
    return [(c["name"], c["priority"]) for c in table["columnDefinitions"]]


def pod(name: str, *containers: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": c, "image": f"{c}:1"} for c in containers], **spec}}


def test_pods_print_kubectls_wide_columns_and_a_pending_pod_reads_as_on_a_real_server(
    api_client: Any,
) -> None:
    k8s.CoreV1Api(api_client).create_namespaced_pod(NS, pod("p1", "c"))
    status, table = get(api_client, f"/api/v1/namespaces/{NS}/pods", query=[("limit", "500")])
    assert status == 200
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert columns(table) == [("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0),
                              ("Age", 0), ("IP", 1), ("Node", 1), ("Nominated Node", 1),
                              ("Readiness Gates", 1)]
    name = table["columnDefinitions"][0]
    assert (name["type"], name["format"]) == ("string", "name")
    assert list(name) == ["name", "type", "format", "description", "priority"]
    [row] = table["rows"]
    cells = row["cells"]
    assert cells[:4] + cells[5:] == ["p1", "0/1", "Pending", "0", "<none>", "<none>", "<none>",
                                     "<none>"]
    assert cells[4].endswith("s")  # the age, in seconds
    partial = row["object"]
    assert (partial["kind"], partial["apiVersion"]) == ("PartialObjectMetadata",
                                                        "meta.k8s.io/v1")
    assert partial["metadata"]["name"] == "p1" and partial["metadata"]["labels"] == {"app": "web"}
    assert table["metadata"]["resourceVersion"] == partial["metadata"]["resourceVersion"]


def test_a_running_pod_counts_ready_containers_restarts_and_its_node(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    running = pod("p2", "a", "b", nodeName="node-1", readinessGates=[{"conditionType": "x"}])
    running["status"] = {
        "phase": "Running", "podIPs": [{"ip": "10.0.0.7"}],
        "conditions": [{"type": "x", "status": "True"}],
        "containerStatuses": [
            {"name": "a", "ready": True, "restartCount": 2, "state": {"running": {}}},
            {"name": "b", "ready": False, "restartCount": 0,
             "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}
    running["metadata"]["namespace"] = NS
    apiserver.create(GroupVersionResource("", "v1", "pods"), running)  # a kubelet's report
    _, table = get(api_client, f"/api/v1/namespaces/{NS}/pods/p2")
    cells = table["rows"][0]["cells"]
    assert cells[:4] + cells[5:] == ["p2", "1/2", "CrashLoopBackOff", "2", "10.0.0.7", "node-1",
                                     "<none>", "1/1"]


def test_deployments_services_and_configmaps_print_their_columns(api_client: Any) -> None:
    template = {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"},
                                        {"name": "side", "image": "busybox"}]}}
    k8s.AppsV1Api(api_client).create_namespaced_deployment(NS, {
        "metadata": {"name": "web"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": template}})
    core = k8s.CoreV1Api(api_client)
    core.create_namespaced_service(NS, {"metadata": {"name": "web"}, "spec": {
        "type": "NodePort", "selector": {"app": "web"},
        "ports": [{"port": 80, "nodePort": 30080}, {"port": 53, "protocol": "UDP"}]}})
    core.create_namespaced_config_map(NS, {"metadata": {"name": "cfg"},
                                           "data": {"a": "1", "b": "2"}})
    _, deploys = get(api_client, f"/apis/apps/v1/namespaces/{NS}/deployments")
    assert columns(deploys) == [("Name", 0), ("Ready", 0), ("Up-to-date", 0), ("Available", 0),
                                ("Age", 0), ("Containers", 1), ("Images", 1), ("Selector", 1)]
    cells = deploys["rows"][0]["cells"]
    assert cells[:4] + cells[5:] == ["web", "0/3", 0, 0, "nginx,side", "nginx:1.25,busybox",
                                     "app=web"]
    _, services = get(api_client, f"/api/v1/namespaces/{NS}/services")
    assert columns(services) == [("Name", 0), ("Type", 0), ("Cluster-IP", 0),
                                 ("External-IP", 0), ("Port(s)", 0), ("Age", 0),
                                 ("Selector", 1)]
    rows = {row["cells"][0]: row["cells"] for row in services["rows"]}
    assert sorted(rows) == ["kubernetes", "web"]  # every cluster's default holds the API's own
    cells = rows["web"]
    assert cells[0:2] + cells[3:5] + cells[6:] == ["web", "NodePort", "<none>",
                                                   "80:30080/TCP,53:30000/UDP", "app=web"]
    assert cells[2].startswith("10.96.")
    kubernetes = rows["kubernetes"]
    assert kubernetes[:5] + kubernetes[6:] == ["kubernetes", "ClusterIP", "10.96.0.1", "<none>",
                                               "443/TCP", "<none>"]
    _, maps = get(api_client, f"/api/v1/namespaces/{NS}/configmaps")
    assert columns(maps) == [("Name", 0), ("Data", 0), ("Age", 0)]
    assert [r["cells"][:2] for r in maps["rows"]] == [["cfg", 2]]


def test_replica_sets_print_kubectls_columns(api_client: Any) -> None:
    template = {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}}
    apps = k8s.AppsV1Api(api_client)
    apps.create_namespaced_replica_set(NS, {"metadata": {"name": "web-1"}, "spec": {
        "replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template}})
    apps.patch_namespaced_replica_set_status("web-1", NS, {"status": {"replicas": 3,
                                                                      "readyReplicas": 2}})
    _, table = get(api_client, f"/apis/apps/v1/namespaces/{NS}/replicasets")
    assert columns(table) == [("Name", 0), ("Desired", 0), ("Current", 0), ("Ready", 0),
                              ("Age", 0), ("Containers", 1), ("Images", 1), ("Selector", 1)]
    assert [c["type"] for c in table["columnDefinitions"][1:4]] == ["integer"] * 3
    [row] = table["rows"]
    cells = row["cells"]
    assert cells[:4] + cells[5:] == ["web-1", 3, 3, 2, "nginx", "nginx:1.25", "app=web"]


def test_other_built_in_types_print_at_least_name_and_age(api_client: Any) -> None:
    _, namespaces = get(api_client, "/api/v1/namespaces")
    assert columns(namespaces) == [("Name", 0), ("Status", 0), ("Age", 0)]
    assert namespaces["rows"][0]["cells"][:2] == ["default", "Active"]
    _, accounts = get(api_client, f"/api/v1/namespaces/{NS}/serviceaccounts")
    assert [c for c, _ in columns(accounts)] == ["Name", "Secrets", "Age"]
    assert accounts["rows"][0]["cells"][:2] == ["default", 0]
    _, budgets = get(api_client, f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets")
    assert columns(budgets)[0] == ("Name", 0)
    assert budgets["rows"] == []


@pytest.fixture
def widgets(apiserver: FakeAPIServer) -> GroupVersionResource:
    definition = crd(WIDGETS)
    definition["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
        {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1,
         "description": "the paint"},
        {"name": "Ready", "type": "string",
         "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
        {"name": "Missing", "type": "string", "jsonPath": ".spec.nothing"},
    ]
    apiserver.create(CRDS, definition)
    apiserver.create(WIDGETS, {"metadata": {"name": "w1", "namespace": NS},
                               "spec": {"size": 3, "color": "red"},
                               "status": {"conditions": [{"type": "Other", "status": "False"},
                                                         {"type": "Ready", "status": "True"}]}})
    return WIDGETS


def test_custom_resources_print_their_additional_printer_columns(
    api_client: Any, widgets: GroupVersionResource,
) -> None:
    _, table = get(api_client, f"/apis/example.com/v1/namespaces/{NS}/widgets")
    assert columns(table) == [("Name", 0), ("Size", 0), ("Color", 1), ("Ready", 0),
                              ("Missing", 0)]
    assert [c["type"] for c in table["columnDefinitions"]] == [
        "string", "integer", "string", "string", "string"]
    assert table["columnDefinitions"][2]["description"] == "the paint"
    assert table["columnDefinitions"][1]["description"] == (
        "Custom resource definition column (in JSONPath format): .spec.size")
    assert table["rows"][0]["cells"] == ["w1", 3, "red", "True", None]


def test_a_custom_resource_without_printer_columns_prints_name_and_age(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    apiserver.create(CRDS, crd(GroupVersionResource("example.com", "v1", "gadgets")))
    apiserver.create(GroupVersionResource("example.com", "v1", "gadgets"),
                     {"metadata": {"name": "g", "namespace": NS}})
    _, table = get(api_client, f"/apis/example.com/v1/namespaces/{NS}/gadgets/g")
    assert [(c["name"], c["type"]) for c in table["columnDefinitions"]] == [
        ("Name", "string"), ("Age", "date")]
    assert table["rows"][0]["cells"][0] == "g"


def test_include_object_and_the_v1beta1_table(api_client: Any) -> None:
    k8s.CoreV1Api(api_client).create_namespaced_config_map(NS, {"metadata": {"name": "c"}})
    path = f"/api/v1/namespaces/{NS}/configmaps/c"
    _, full = get(api_client, path, query=[("includeObject", "Object")])
    assert full["rows"][0]["object"]["kind"] == "ConfigMap"
    _, bare = get(api_client, path, query=[("includeObject", "None")])
    assert bare["rows"][0]["object"] is None
    status, refused = get(api_client, path, query=[("includeObject", "Everything")])
    assert (status, refused["message"]) == (400, 'unrecognized includeObject value: "Everything"')
    _, beta = get(api_client, path, "application/json;as=Table;v=v1beta1;g=meta.k8s.io")
    assert beta["apiVersion"] == "meta.k8s.io/v1beta1"
    assert beta["rows"][0]["object"]["apiVersion"] == "meta.k8s.io/v1beta1"


def test_a_paged_table_carries_the_continue_token(api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    for name in ("a", "b", "c"):
        api.create_namespaced_config_map(NS, {"metadata": {"name": name}})
    _, first = get(api_client, f"/api/v1/namespaces/{NS}/configmaps", query=[("limit", "2")])
    assert [r["cells"][0] for r in first["rows"]] == ["a", "b"]
    assert first["metadata"]["remainingItemCount"] == 1
    _, rest = get(api_client, f"/api/v1/namespaces/{NS}/configmaps",
                  query=[("limit", "2"), ("continue", first["metadata"]["continue"])])
    assert [r["cells"][0] for r in rest["rows"]] == ["c"]


def test_metadata_only_clients_get_partial_object_metadata(api_client: Any) -> None:
    k8s.CoreV1Api(api_client).create_namespaced_config_map(NS, {"metadata": {"name": "c"},
                                                                "data": {"k": "v"}})
    accept = ("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;"
              "v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
              "application/json")
    _, listed = get(api_client, f"/api/v1/namespaces/{NS}/configmaps", accept)
    assert (listed["kind"], listed["apiVersion"]) == ("PartialObjectMetadataList",
                                                      "meta.k8s.io/v1")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["c"]
    assert "data" not in listed["items"][0]


def test_unservable_accept_headers_are_406_and_protobuf_first_gets_json(
    api_client: Any,
) -> None:
    path = f"/api/v1/namespaces/{NS}/configmaps"
    status, refused = get(api_client, path, "text/html")
    assert (status, refused["reason"]) == (406, "NotAcceptable")
    _, listed = get(api_client, path, "application/vnd.kubernetes.protobuf,application/json")
    assert listed["kind"] == "ConfigMapList"


def test_a_table_watch_sends_each_event_as_a_table(api_client: Any) -> None:
    k8s.CoreV1Api(api_client).create_namespaced_config_map(NS, {"metadata": {"name": "c"}})
    params = api_client.param_serialize(
        "GET", f"/api/v1/namespaces/{NS}/configmaps",
        query_params=[("watch", "true"), ("timeoutSeconds", "5")],
        header_params={"Accept": KUBECTL_ACCEPT})
    stream = api_client.call_api(*params, _request_timeout=TIMEOUT).response
    try:
        first = json.loads(next(iter(stream)))
    finally:
        stream.close()
    assert first["type"] == "ADDED"
    table = first["object"]
    assert table["kind"] == "Table" and columns(table)[1] == ("Data", 0)
    assert table["rows"][0]["cells"][0] == "c"
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_ages_read_as_kubernetes_prints_them() -> None:
    assert [printers.human_duration(s) for s in (-5, -1, 0, 119, 150, 600, 3 * 3600 - 1,
                                                  5 * 3600 + 120, 30 * 3600, 50 * 3600,
                                                  10 * 86400, 800 * 86400)] == [
        "<invalid>", "0s", "0s", "119s", "2m30s", "10m", "179m", "5h2m", "30h", "2d2h", "10d",
        "2y70d"]

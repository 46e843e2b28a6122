"""FakeAPIServer answers as kube-apiserver does where fakes usually differ: strict decoding,
custom kinds, Retry-After, what DELETE returns, Status bytes, create defaults, served types and
the scale subresource.

Through the official client where it shows the behaviour, and as plain HTTP where the client
hides it (exact bytes, headers, its own retries).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import api_error, cm_manifest, crd, http_exchange, request
from kubernetes import client as k8s

from kinformer.errors import ConfigurationError
from kinformer.gvr import GroupVersionResource
from kinformer.testing import FakeAPIServer

NS = "default"
WIDGETS = GroupVersionResource("example.com", "v1", "widgets")
CRDS = GroupVersionResource("apiextensions.k8s.io", "v1", "customresourcedefinitions")


# -- strict decoding ---------------------------------------------------------------------------


def test_a_config_map_value_of_the_wrong_json_type_is_400_naming_the_field(api_client: Any) -> None:
    # the typed API checks the model first, so the body goes through the client's request path
    path = f"/api/v1/namespaces/{NS}/configmaps"
    status, body = request(api_client, "POST", path, {"metadata": {"name": "a"}, "data": {"k": 1}})
    assert (status, body["reason"]) == (400, "BadRequest")
    assert body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal '
        "number into Go struct field ConfigMap.data of type string")
    status, body = request(api_client, "POST", path, {"metadata": {"name": "a", "labels": ["x"]}})
    assert status == 400
    assert body["message"].endswith(
        "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type "
        "map[string]string")
    assert k8s.CoreV1Api(api_client).list_namespaced_config_map(NS).items == []
    status, body = request(api_client, "POST", f"/apis/apps/v1/namespaces/{NS}/deployments",
                           {"metadata": {"name": "d"}, "spec": {"replicas": "3"}})
    assert (status, body["message"]) == (400, (
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal '
        "string into Go struct field DeploymentSpec.spec.replicas of type int32"))


# -- custom objects ----------------------------------------------------------------------------


@pytest.fixture
def widgets(apiserver: FakeAPIServer) -> GroupVersionResource:
    apiserver.create(CRDS, crd(WIDGETS))
    return WIDGETS


def test_a_custom_object_of_another_kind_is_422_and_of_an_unserved_version_400(
    api_client: Any, widgets: GroupVersionResource,
) -> None:
    api = k8s.CustomObjectsApi(api_client)
    args = ("example.com", "v1", NS, "widgets")
    status, body = api_error(api.create_namespaced_custom_object, *args,
                             {"apiVersion": "example.com/v1", "kind": "Gadget",
                              "metadata": {"name": "w"}})
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["message"] == 'Widget.example.com "w" is invalid: kind: Invalid value: ' \
                              '"Gadget": must be Widget'
    assert body["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "kind",
                                          "message": 'Invalid value: "Gadget": must be Widget'}]
    status, body = api_error(api.create_namespaced_custom_object, *args,
                             {"apiVersion": "example.com/v9", "kind": "Widget",
                              "metadata": {"name": "w"}})
    assert (status, body["reason"]) == (400, "BadRequest")
    assert body["message"] == ("the API version in the data (example.com/v9) does not match "
                               "the expected API version (example.com/v1)")
    made = api.create_namespaced_custom_object(*args, {"apiVersion": "example.com/v1",
                                                       "kind": "Widget", "metadata": {"name": "w"}})
    assert made["kind"] == "Widget"


# -- 429 ---------------------------------------------------------------------------------------


def test_an_injected_429_carries_retry_after_and_the_official_client_honours_it(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    apiserver.fail_next(1, status=429)
    code, headers, data = http_exchange(apiserver, "GET", f"/api/v1/namespaces/{NS}/configmaps")
    assert code == 429
    assert headers["Retry-After"] == "1"
    body = json.loads(data)
    assert (body["reason"], body["details"]["retryAfterSeconds"]) == ("TooManyRequests", 1)
    api = k8s.CoreV1Api(api_client)
    apiserver.fail_next(1, status=429, verb="create")
    status, _ = api_error(api.create_namespaced_config_map, NS, cm_manifest("a"))
    assert status == 429  # a POST is not retried by the client
    apiserver.fail_next(1, status=429, verb="list")
    apiserver.clear_requests()
    assert api.list_namespaced_config_map(NS).items == []  # the client waited and retried
    assert [r[3] for r in apiserver.requests] == [429, 200]


def test_a_status_naming_a_retry_delay_sends_it_as_retry_after(apiserver: FakeAPIServer) -> None:
    future = int(apiserver.current_resource_version()) + 100
    code, headers, data = http_exchange(
        apiserver, "GET", f"/api/v1/namespaces/{NS}/configmaps?resourceVersion={future}")
    assert (code, json.loads(data)["details"]["retryAfterSeconds"]) == (504, 1)
    assert headers["Retry-After"] == "1"
    code, headers, _ = http_exchange(apiserver, "GET", f"/api/v1/namespaces/{NS}/configmaps/x")
    assert code == 404 and "Retry-After" not in headers


# -- DELETE ------------------------------------------------------------------------------------


def test_delete_answers_per_type_as_the_real_server(api_client: Any) -> None:
    core, apps = k8s.CoreV1Api(api_client), k8s.AppsV1Api(api_client)
    core.create_namespaced_service(NS, {"metadata": {"name": "web"},
                                        "spec": {"ports": [{"port": 80}]}})
    service = core.delete_namespaced_service("web", NS)
    assert isinstance(service, k8s.V1Service)
    assert service.metadata.name == "web" and service.spec.ports[0].port == 80
    core.create_namespaced_pod(NS, {"metadata": {"name": "p"},
                                    "spec": {"containers": [{"name": "c", "image": "i"}]}})
    assert core.delete_namespaced_pod("p", NS).kind == "Pod"
    uids = {
        "configmaps": core.create_namespaced_config_map(NS, cm_manifest("c")).metadata.uid,
        "secrets": core.create_namespaced_secret(NS, {"metadata": {"name": "c"}}).metadata.uid,
        "deployments": apps.create_namespaced_deployment(NS, {
            "metadata": {"name": "c"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}}}).metadata.uid,
    }
    paths = {"configmaps": f"/api/v1/namespaces/{NS}/configmaps/c",
             "secrets": f"/api/v1/namespaces/{NS}/secrets/c",
             "deployments": f"/apis/apps/v1/namespaces/{NS}/deployments/c"}
    for resource, path in paths.items():
        status, body = request(api_client, "DELETE", path)
        details = {"name": "c", "kind": resource, "uid": uids[resource]}
        if resource == "deployments":
            details = {"name": "c", "group": "apps", "kind": resource, "uid": uids[resource]}
        assert (status, body) == (200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                        "status": "Success", "details": details})


def test_an_object_held_by_a_finalizer_is_marked_and_goes_with_its_last_finalizer(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    api = k8s.CoreV1Api(api_client)
    manifest = cm_manifest("held")
    manifest["metadata"]["finalizers"] = ["example.com/cleanup"]
    api.create_namespaced_config_map(NS, manifest)
    status, marked = request(api_client, "DELETE", f"/api/v1/namespaces/{NS}/configmaps/held")
    assert status == 200 and marked["kind"] == "ConfigMap"
    assert marked["metadata"]["deletionTimestamp"]
    assert api.read_namespaced_config_map("held", NS).metadata.deletion_timestamp is not None
    last = api.patch_namespaced_config_map("held", NS, {"metadata": {"finalizers": None}})
    assert last.metadata.finalizers is None
    assert api_error(api.read_namespaced_config_map, "held", NS)[0] == 404


def test_a_collection_delete_answers_the_list_of_deleted_objects(api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    for name in ("a", "b"):
        api.create_namespaced_config_map(NS, cm_manifest(name, app="x"))
    api.create_namespaced_config_map(NS, cm_manifest("keep"))
    # the typed API reads this answer as a Status, so it goes through the request path
    status, deleted = request(api_client, "DELETE", f"/api/v1/namespaces/{NS}/configmaps",
                              query=[("labelSelector", "app=x")])
    assert (status, deleted["kind"]) == (200, "ConfigMapList")
    assert [i["metadata"]["name"] for i in deleted["items"]] == ["a", "b"]
    assert [c.metadata.name for c in api.list_namespaced_config_map(NS).items] == ["keep"]


# -- Status bytes ------------------------------------------------------------------------------


def test_status_bodies_are_byte_for_byte_the_real_servers(apiserver: FakeAPIServer) -> None:
    code, headers, data = http_exchange(apiserver, "GET", f"/api/v1/namespaces/{NS}/configmaps/x")
    assert code == 404 and headers["Content-Type"] == "application/json"
    assert data == (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                    b'"message":"configmaps \\"x\\" not found","reason":"NotFound",'
                    b'"details":{"name":"x","kind":"configmaps"},"code":404}\n')
    http_exchange(apiserver, "POST", f"/api/v1/namespaces/{NS}/configmaps",
                  json.dumps(cm_manifest("a")).encode())
    code, _, data = http_exchange(apiserver, "POST", f"/api/v1/namespaces/{NS}/configmaps",
                                  json.dumps(cm_manifest("a")).encode())
    assert data == (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                    b'"message":"configmaps \\"a\\" already exists","reason":"AlreadyExists",'
                    b'"details":{"name":"a","kind":"configmaps"},"code":409}\n')


# -- defaults and status on create -------------------------------------------------------------


def test_a_created_service_gets_its_cluster_ip_defaults_and_load_balancer_status(
    api_client: Any,
) -> None:
    api = k8s.CoreV1Api(api_client)
    first = api.create_namespaced_service(NS, {"metadata": {"name": "a"},
                                               "spec": {"ports": [{"port": 80}]}})
    spec = first.spec
    assert spec.type == "ClusterIP" and spec.session_affinity == "None"
    assert spec.cluster_ip.startswith("10.96.") and spec.cluster_ips == [spec.cluster_ip]
    assert (spec.ip_families, spec.ip_family_policy) == (["IPv4"], "SingleStack")
    assert (spec.ports[0].protocol, spec.ports[0].target_port) == ("TCP", 80)
    assert first.status.load_balancer.to_dict() == {"ingress": None}
    second = api.create_namespaced_service(NS, {"metadata": {"name": "b"},
                                                "spec": {"type": "NodePort",
                                                         "ports": [{"port": 80}]}})
    assert second.spec.cluster_ip != spec.cluster_ip
    assert 30000 <= second.spec.ports[0].node_port < 32768
    replaced = api.replace_namespaced_service("a", NS, {"metadata": {"name": "a"},
                                                        "spec": {"ports": [{"port": 81}]}})
    assert replaced.spec.cluster_ip == spec.cluster_ip  # allocated values survive a PUT


def test_a_created_pod_is_pending(api_client: Any) -> None:
    pod = k8s.CoreV1Api(api_client).create_namespaced_pod(NS, {
        "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    assert (pod.status.phase, pod.status.qos_class) == ("Pending", "BestEffort")
    assert (pod.spec.restart_policy, pod.spec.dns_policy) == ("Always", "ClusterFirst")


def test_every_namespace_has_its_default_service_account(api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    assert api.read_namespaced_service_account("default", NS).metadata.name == "default"
    api.create_namespace({"metadata": {"name": "team"}})
    accounts = api.list_namespaced_service_account("team").items
    assert [a.metadata.name for a in accounts] == ["default"]
    assert api.read_namespace("team").status.phase == "Active"


# -- the commonly used built-in types ----------------------------------------------------------


def test_the_commonly_used_built_in_types_are_discovered_and_served(api_client: Any) -> None:
    core, apps = k8s.CoreV1Api(api_client), k8s.AppsV1Api(api_client)
    batch, rbac = k8s.BatchV1Api(api_client), k8s.RbacAuthorizationV1Api(api_client)
    found = {r.name for api in (core, apps, batch, rbac) for r in api.get_api_resources().resources}
    assert {"replicationcontrollers", "daemonsets", "jobs", "cronjobs", "roles", "rolebindings",
            "clusterroles", "clusterrolebindings"} <= found
    registration = k8s.ApiregistrationV1Api(api_client)
    assert "apiservices" in {r.name for r in registration.get_api_resources().resources}
    template = {"metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}
    core.create_namespaced_replication_controller(NS, {
        "metadata": {"name": "rc"}, "spec": {"selector": {"app": "x"}, "template": template}})
    apps.create_namespaced_daemon_set(NS, {
        "metadata": {"name": "ds"},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": template}})
    batch.create_namespaced_job(NS, {"metadata": {"name": "j"}, "spec": {"template": template}})
    batch.create_namespaced_cron_job(NS, {"metadata": {"name": "cj"}, "spec": {
        "schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}}})
    rbac.create_namespaced_role(NS, {"metadata": {"name": "r"}, "rules": []})
    rbac.create_cluster_role({"metadata": {"name": "cr"}, "rules": []})
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cr"}
    rbac.create_namespaced_role_binding(NS, {"metadata": {"name": "rb"}, "roleRef": ref})
    rbac.create_cluster_role_binding({"metadata": {"name": "crb"}, "roleRef": ref})
    registration.create_api_service({"metadata": {"name": "v1.example.com"},
                                     "spec": {"group": "example.com", "version": "v1",
                                              "groupPriorityMinimum": 1000,
                                              "versionPriority": 15}})
    assert [d.metadata.name for d in apps.list_namespaced_daemon_set(NS).items] == ["ds"]
    assert batch.read_namespaced_cron_job("cj", NS).spec.schedule == "* * * * *"
    assert rbac.read_cluster_role_binding("crb").role_ref.name == "cr"
    assert [a.metadata.name for a in registration.list_api_service().items] == ["v1.example.com"]


# -- the scale subresource ---------------------------------------------------------------------


def deployment(name: str, replicas: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {
        "replicas": replicas, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


def test_the_scale_subresource_reads_and_writes_a_deployments_replicas(api_client: Any) -> None:
    apps = k8s.AppsV1Api(api_client)
    made = apps.create_namespaced_deployment(NS, deployment("web", 2))
    scale = apps.read_namespaced_deployment_scale("web", NS)
    assert (scale.spec.replicas, scale.status.selector) == (2, "app=web")
    assert scale.metadata.resource_version == made.metadata.resource_version
    scaled = apps.patch_namespaced_deployment_scale("web", NS, {"spec": {"replicas": 5}})
    assert scaled.spec.replicas == 5
    after = apps.read_namespaced_deployment("web", NS)
    assert (after.spec.replicas, after.metadata.generation) == (5, 2)
    stale = {"metadata": {"name": "web", "resourceVersion": made.metadata.resource_version},
             "spec": {"replicas": 1}}
    status, body = api_error(apps.replace_namespaced_deployment_scale, "web", NS, stale)
    assert (status, body["reason"]) == (409, "Conflict")
    status, body = api_error(apps.patch_namespaced_deployment_scale, "web", NS,
                             {"spec": {"replicas": -1}})
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["message"] == ('Scale.autoscaling "web" is invalid: spec.replicas: Invalid '
                               "value: -1: must be greater than or equal to 0")
    status, body = request(api_client, "GET", f"/apis/apps/v1/namespaces/{NS}/daemonsets/x/scale")
    assert (status, body["message"]) == (404, "the server could not find the requested resource")


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_scale_changes_a_deployments_replicas(
    apiserver: FakeAPIServer, api_client: Any, tmp_path: Path,
) -> None:
    k8s.AppsV1Api(api_client).create_namespaced_deployment(NS, deployment("web", 1))
    env = dict(os.environ, KUBECONFIG=apiserver.write_kubeconfig(tmp_path / "kubeconfig"))
    result = subprocess.run(["kubectl", "scale", "deployment", "web", "--replicas=3"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert k8s.AppsV1Api(api_client).read_namespaced_deployment("web", NS).spec.replicas == 3


# -- what kubectl looks at next: ReplicaSets, the kubernetes Service, pod logs ------------------


def test_replicasets_are_served_as_rs_with_their_defaults_and_scale(api_client: Any) -> None:
    apps = k8s.AppsV1Api(api_client)
    served = {r.name: r for r in apps.get_api_resources().resources}
    assert served["replicasets"].short_names == ["rs"]
    assert served["replicasets"].categories == ["all"]
    assert served["replicasets"].kind == "ReplicaSet"
    assert {"replicasets/scale", "replicasets/status"} <= set(served)
    spec = deployment("web", 1)["spec"]
    del spec["replicas"]
    made = apps.create_namespaced_replica_set(NS, {"metadata": {"name": "web-1"}, "spec": spec})
    assert (made.spec.replicas, made.status.replicas) == (1, 0)  # defaulted; no pods made
    assert made.spec.template.spec.restart_policy == "Always"  # the pod template's defaults
    assert [rs.metadata.name for rs in apps.list_namespaced_replica_set(NS).items] == ["web-1"]
    apps.patch_namespaced_replica_set_scale("web-1", NS, {"spec": {"replicas": 4}})
    assert apps.read_namespaced_replica_set_scale("web-1", NS).status.selector == "app=web"
    assert apps.read_namespaced_replica_set("web-1", NS).spec.replicas == 4


def test_a_deployment_makes_no_replica_sets_nor_pods_without_controllers(api_client: Any) -> None:
    apps = k8s.AppsV1Api(api_client)
    apps.create_namespaced_deployment(NS, deployment("web", 3))
    assert apps.list_namespaced_replica_set(NS).items == []
    assert k8s.CoreV1Api(api_client).list_namespaced_pod(NS).items == []
    assert apps.read_namespaced_deployment("web", NS).status.replicas is None


def test_default_holds_the_kubernetes_service_as_every_cluster_does(api_client: Any) -> None:
    service = k8s.CoreV1Api(api_client).read_namespaced_service("kubernetes", "default")
    assert service.metadata.labels == {"component": "apiserver", "provider": "kubernetes"}
    assert (service.spec.type, service.spec.cluster_ip) == ("ClusterIP", "10.96.0.1")
    [port] = service.spec.ports
    assert (port.name, port.port, port.protocol) == ("https", 443, "TCP")
    created = k8s.CoreV1Api(api_client).create_namespaced_service(NS, {
        "metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}})
    assert created.spec.cluster_ip != "10.96.0.1"  # never handed out again


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec}}


@pytest.mark.parametrize("follow", [False, True])
def test_the_log_of_a_pod_with_no_node_is_204_with_no_body(api_client: Any, follow: bool) -> None:
    core = k8s.CoreV1Api(api_client)
    core.create_namespaced_pod(NS, pod("p"))
    answer = core.read_namespaced_pod_log("p", NS, follow=follow, _preload_content=False)
    assert (answer.status, answer.data) == (204, b"")
    assert core.read_namespaced_pod_log("p", NS, follow=follow) is None  # no body to decode


def test_the_log_of_a_missing_pod_is_404_and_a_wrong_container_400(api_client: Any) -> None:
    core = k8s.CoreV1Api(api_client)
    status, body = api_error(core.read_namespaced_pod_log, "nope", NS)
    assert (status, body["reason"], body["message"]) == (404, "NotFound", 'pods "nope" not found')
    core.create_namespaced_pod(NS, pod("p"))
    status, body = api_error(core.read_namespaced_pod_log, "p", NS, container="other")
    assert (status, body["message"]) == (400, "container other is not valid for pod p")


def test_the_log_of_a_pod_on_a_node_is_the_error_of_a_kubelet_that_does_not_answer(
    api_client: Any,
) -> None:
    core = k8s.CoreV1Api(api_client)
    core.create_node({"metadata": {"name": "node-1"}, "status": {
        "addresses": [{"type": "Hostname", "address": "node-1"},
                      {"type": "InternalIP", "address": "172.18.0.2"}]}})
    core.create_namespaced_pod(NS, pod("p", nodeName="node-1"))
    status, body = api_error(core.read_namespaced_pod_log, "p", NS)
    assert status == 500
    assert body["message"] == ('Get "https://172.18.0.2:10250/containerLogs/default/p/c": '
                               "dial tcp 172.18.0.2:10250: connect: connection refused")
    core.create_namespaced_pod(NS, pod("q", nodeName="gone"))
    status, body = api_error(core.read_namespaced_pod_log, "q", NS)
    assert (status, body["message"]) == (404, 'nodes "gone" not found')


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_gets_rs_and_prints_nothing_for_the_log_of_a_pending_pod(
    apiserver: FakeAPIServer, api_client: Any, tmp_path: Path,
) -> None:
    spec = deployment("web", 2)["spec"]
    k8s.AppsV1Api(api_client).create_namespaced_replica_set(NS, {"metadata": {"name": "web-1"},
                                                                 "spec": spec})
    k8s.CoreV1Api(api_client).create_namespaced_pod(NS, pod("p"))
    env = dict(os.environ, KUBECONFIG=apiserver.write_kubeconfig(tmp_path / "kubeconfig"))

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True,
                              timeout=60)

    listed = kubectl("get", "rs", "-o", "wide")
    assert listed.returncode == 0, listed.stderr
    header, row = listed.stdout.splitlines()
    assert header.split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS",
                              "IMAGES", "SELECTOR"]
    assert row.split()[:4] + row.split()[5:] == ["web-1", "2", "0", "0", "c", "i", "app=web"]
    logs = kubectl("logs", "p")
    assert (logs.returncode, logs.stdout, logs.stderr) == (0, "", "")


def test_fail_discovery_fails_the_discovery_documents_asked_for_and_nothing_else(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    apiserver.fail_discovery(1, 503, path="/apis/apps/v1")
    assert request(api_client, "GET", "/api/v1/namespaces/default/configmaps")[0] == 200
    assert request(api_client, "GET", "/apis")[0] == 200
    status, body = request(api_client, "GET", "/apis/apps/v1")
    assert status == 503 and body["reason"] == "ServiceUnavailable"
    assert request(api_client, "GET", "/apis/apps/v1")[0] == 200  # once
    apiserver.fail_discovery(2, 500)
    assert [request(api_client, "GET", path)[0] for path in ("/api", "/apis/apps", "/api/v1")] == [
        500, 500, 200]
    apiserver.fail_discovery(5)
    apiserver.clear_faults()
    assert request(api_client, "GET", "/api")[0] == 200
    with pytest.raises(ConfigurationError):
        apiserver.fail_discovery(path="/version")

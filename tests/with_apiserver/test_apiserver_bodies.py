"""FakeAPIServer writes bodies as kube-apiserver 1.36 does (APISERVER-FACTS 33-36): a trailing
newline, ``kind``/``apiVersion``/``metadata`` first, list items without their kind,
``managedFields`` on every write, the defaults of pod specs and workloads, a Pod's DELETE
answer, and the 400s of ``exec``/``attach``/``portforward``.

Exact bytes and orders go over plain HTTP or the official client's raw request path (it
would re-order and re-type them); the rest through its typed APIs.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from typing import Any

from helpers import TIMEOUT, api_error, crd, request
from kubernetes import client as k8s

from kinformer.gvr import GroupVersionResource
from kinformer.testing import FakeAPIServer

NS = "default"
CM_PATH = f"/api/v1/namespaces/{NS}/configmaps"
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\Z")
PODS = GroupVersionResource("", "v1", "pods")
WIDGETS = GroupVersionResource("example.com", "v1", "widgets")


def send(server: FakeAPIServer, method: str, path: str, body: Any = None,
         user_agent: str = "python-urllib3/2.2.3",
         content_type: str = "application/json") -> tuple[int, bytes]:
    """One plain HTTP request with the given User-Agent: ``(status, body bytes)``."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(server.url + path, data=data, method=method,
                                 headers={"User-Agent": user_agent, "Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        with err:
            return err.code, err.read()


# -- shape -------------------------------------------------------------------------------------


def test_every_body_ends_with_a_newline_and_starts_kind_api_version_metadata(
    apiserver: FakeAPIServer,
) -> None:
    code, made = send(apiserver, "POST", CM_PATH, {"data": {"k": "v"}, "metadata": {
        "labels": {"a": "b"}, "name": "c"}, "apiVersion": "v1", "kind": "ConfigMap"})
    assert code == 201 and made.endswith(b"}\n") and made.count(b"\n") == 1
    assert made.startswith(b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c",')
    obj = json.loads(made)
    assert list(obj) == ["kind", "apiVersion", "metadata", "data"]
    assert list(obj["metadata"]) == ["name", "namespace", "uid", "resourceVersion",
                                     "creationTimestamp", "labels", "managedFields"]
    code, got = send(apiserver, "GET", f"{CM_PATH}/c")
    assert (code, got) == (200, made)
    code, listed = send(apiserver, "GET", CM_PATH)
    assert listed.endswith(b"]}\n")
    answer = json.loads(listed)
    assert list(answer) == ["kind", "apiVersion", "metadata", "items"]
    assert answer["items"] == [{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}]
    code, gone = send(apiserver, "DELETE", f"{CM_PATH}/c")
    assert code == 200 and gone.endswith(b"}\n")


def test_a_deployment_gets_generation_and_its_status_comes_last(apiserver: FakeAPIServer) -> None:
    body = {"status": {"replicas": 9}, "spec": {
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}},
                     "spec": {"containers": [{"name": "c", "image": "i"}]}}},
        "metadata": {"name": "d"}}
    code, made = send(apiserver, "POST", f"/apis/apps/v1/namespaces/{NS}/deployments", body)
    assert code == 201
    obj = json.loads(made)
    assert list(obj) == ["kind", "apiVersion", "metadata", "spec", "status"]
    assert list(obj["metadata"]) == ["name", "namespace", "uid", "resourceVersion", "generation",
                                     "creationTimestamp", "managedFields"]
    assert obj["status"] == {}  # what the client sent is dropped


def test_a_watch_event_carries_the_object_as_a_get_answers_it(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    k8s.CoreV1Api(api_client).create_namespaced_config_map(NS, {"metadata": {"name": "w"}})
    _, got = send(apiserver, "GET", f"{CM_PATH}/w")
    _, events = send(apiserver, "GET", f"{CM_PATH}?watch=true&timeoutSeconds=1")
    first = events.split(b"\n")[0]
    assert first == b'{"type":"ADDED","object":' + got.rstrip(b"\n") + b"}"


def test_a_custom_object_is_written_with_sorted_keys_and_keeps_its_kind_in_lists(
    apiserver: FakeAPIServer,
) -> None:
    apiserver.create(GroupVersionResource("apiextensions.k8s.io", "v1",
                                          "customresourcedefinitions"), crd(WIDGETS))
    path = f"/apis/example.com/v1/namespaces/{NS}/widgets"
    _, made = send(apiserver, "POST", path, {"spec": {"b": 1, "a": 2}, "metadata": {"name": "w"},
                                              "kind": "Widget", "apiVersion": "example.com/v1"})
    assert made.startswith(b'{"apiVersion":"example.com/v1","kind":"Widget","metadata":'
                           b'{"creationTimestamp":')
    obj = json.loads(made)
    assert list(obj["metadata"]) == sorted(obj["metadata"]) and list(obj["spec"]) == ["a", "b"]
    _, listed = send(apiserver, "GET", path)
    answer = json.loads(listed)
    assert list(answer) == ["apiVersion", "items", "kind", "metadata"]
    assert answer["items"] == [obj]
    assert answer["metadata"] == {"continue": "", "resourceVersion": obj["metadata"][
        "resourceVersion"]}


def test_html_characters_are_escaped_as_go_writes_them(apiserver: FakeAPIServer) -> None:
    _, made = send(apiserver, "POST", CM_PATH,
                   {"metadata": {"name": "h"}, "data": {"page": "<a href='x'>&</a>"}})
    assert b'"page":"\\u003ca href=\'x\'\\u003e\\u0026\\u003c/a\\u003e"' in made
    assert json.loads(made)["data"]["page"] == "<a href='x'>&</a>"


# -- managedFields -----------------------------------------------------------------------------


def test_a_create_records_one_managed_fields_entry_as_the_real_server(
    apiserver: FakeAPIServer,
) -> None:
    _, made = send(apiserver, "POST", CM_PATH, {
        "metadata": {"name": "m", "labels": {"a": "b"}}, "data": {"k": "v"}})
    [entry] = json.loads(made)["metadata"]["managedFields"]
    assert list(entry) == ["manager", "operation", "apiVersion", "time", "fieldsType",
                           "fieldsV1"]
    assert TIME.match(entry.pop("time"))
    assert entry == {"manager": "python-urllib3", "operation": "Update", "apiVersion": "v1",
                     "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:data": {".": {}, "f:k": {}},
                                  "f:metadata": {"f:labels": {".": {}, "f:a": {}}}}}
    assert b'"fieldsV1":{"f:data":{".":{},"f:k":{}},"f:metadata":{"f:labels":{".":{},' \
           b'"f:a":{}}}}}]' in made


def test_later_writes_update_their_managers_entry_and_others_get_their_own(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    api = k8s.CoreV1Api(api_client)
    api.create_namespaced_config_map(NS, {"metadata": {"name": "m"}, "data": {"k": "v"}})
    api.patch_namespaced_config_map("m", NS, {"data": {"j": "w"}})
    [entry] = api.read_namespaced_config_map("m", NS).metadata.managed_fields
    assert entry.manager == "OpenAPI-Generator"  # the official client's User-Agent
    assert entry.fields_v1 == {"f:data": {".": {}, "f:j": {}, "f:k": {}}}
    code, _ = send(apiserver, "PATCH", f"{CM_PATH}/m?fieldManager=editor", {"data": {"k": "x"}},
                   content_type="application/merge-patch+json")
    assert code == 200
    entries = api.read_namespaced_config_map("m", NS).metadata.managed_fields
    owners = {e.manager: e.fields_v1 for e in entries}
    # the changed field changed hands; the untouched one stayed
    assert owners == {"OpenAPI-Generator": {"f:data": {".": {}, "f:j": {}}},
                      "editor": {"f:data": {"f:k": {}}}}
    current = api.read_namespaced_config_map("m", NS)
    current.data = {"k": "x"}  # sent back with its managedFields, their times as +00:00
    api.replace_namespaced_config_map("m", NS, current)
    owners = {e.manager: e.fields_v1
              for e in api.read_namespaced_config_map("m", NS).metadata.managed_fields}
    # j is gone: its manager keeps only the map it made
    assert owners == {"OpenAPI-Generator": {"f:data": {}}, "editor": {"f:data": {"f:k": {}}}}
    _, raw = send(apiserver, "GET", f"{CM_PATH}/m")
    assert all(TIME.match(e["time"]) for e in json.loads(raw)["metadata"]["managedFields"])


def test_server_side_apply_is_recorded_as_apply(apiserver: FakeAPIServer) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s\ndata:\n  k: v\n"
    req = urllib.request.Request(f"{apiserver.url}{CM_PATH}/s?fieldManager=tool", data=body,
                                 method="PATCH",
                                 headers={"Content-Type": "application/apply-patch+yaml"})
    with urllib.request.urlopen(req, timeout=TIMEOUT) as response:
        entry = json.loads(response.read())["metadata"]["managedFields"][0]
    assert (entry["manager"], entry["operation"], entry["fieldsV1"]) == (
        "tool", "Apply", {"f:data": {"f:k": {}}})


def test_server_side_helpers_write_as_the_server_itself(apiserver: FakeAPIServer) -> None:
    made = apiserver.create(PODS, {"metadata": {"name": "p", "namespace": NS},
                                   "spec": {"containers": [{"name": "c", "image": "i"}]},
                                   "status": {"phase": "Running"}})
    assert "managedFields" not in made["metadata"]
    assert made["status"] == {"phase": "Running", "qosClass": "BestEffort"}  # seeded status


# -- defaults ----------------------------------------------------------------------------------


def test_a_pod_gets_the_spec_defaults_and_a_pending_status(api_client: Any) -> None:
    status, pod = request(api_client, "POST", f"/api/v1/namespaces/{NS}/pods", {
        "metadata": {"name": "p"}, "status": {"phase": "Running"},
        "spec": {"containers": [
            {"name": "a", "image": "nginx:1.25", "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "busybox"},
            {"name": "c", "image": "registry:5000/x@sha256:" + "0" * 64}]}})
    assert status == 201
    a, b, c = pod["spec"]["containers"]
    assert a == {"name": "a", "image": "nginx:1.25",
                 "ports": [{"containerPort": 80, "protocol": "TCP"}], "resources": {},
                 "terminationMessagePath": "/dev/termination-log",
                 "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}
    assert (b["imagePullPolicy"], c["imagePullPolicy"]) == ("Always", "IfNotPresent")
    assert {k: v for k, v in pod["spec"].items() if k != "containers"} == {
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst", "securityContext": {}, "schedulerName": "default-scheduler",
        "enableServiceLinks": True}
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert pod["metadata"]["generation"] == 1


def test_workloads_get_their_defaults_and_templates_the_pod_defaults(api_client: Any) -> None:
    template = {"metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": "i:latest"}]}}
    _, deploy = request(api_client, "POST", f"/apis/apps/v1/namespaces/{NS}/deployments", {
        "metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"app": "x"}},
                                            "template": template}})
    spec = deploy["spec"]
    assert (spec["replicas"], spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) \
        == (1, 10, 600)
    assert spec["strategy"] == {"type": "RollingUpdate",
                                "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert spec["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    assert spec["template"]["spec"]["schedulerName"] == "default-scheduler"
    assert deploy["status"] == {}
    _, job = request(api_client, "POST", f"/apis/batch/v1/namespaces/{NS}/jobs", {
        "metadata": {"name": "j"}, "spec": {"template": {
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}})
    uid = job["metadata"]["uid"]
    owned = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "j",
             "controller-uid": uid, "job-name": "j"}
    assert {k: v for k, v in job["spec"].items() if k != "template"} == {
        "parallelism": 1, "completions": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
        "suspend": False, "manualSelector": False,
        "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}}
    assert job["spec"]["template"]["metadata"]["labels"] == owned
    assert job["metadata"]["labels"] == owned
    _, rc = request(api_client, "POST", f"/api/v1/namespaces/{NS}/replicationcontrollers", {
        "metadata": {"name": "rc"}, "spec": {"template": template}})
    assert rc["metadata"]["labels"] == rc["spec"]["selector"] == {"app": "x"}
    assert (rc["spec"]["replicas"], rc["status"]) == (1, {"replicas": 0})


def test_a_service_has_no_generation(api_client: Any) -> None:
    _, service = request(api_client, "POST", f"/api/v1/namespaces/{NS}/services", {
        "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}})
    assert "generation" not in service["metadata"]
    assert service["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert service["status"] == {"loadBalancer": {}}


# -- pods: delete and connect ------------------------------------------------------------------


def test_deleting_a_pod_without_a_node_answers_it_marked_and_it_is_gone(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    api = k8s.CoreV1Api(api_client)
    api.create_namespaced_pod(NS, {"metadata": {"name": "p"},
                                   "spec": {"containers": [{"name": "c", "image": "i"}]}})
    status, gone = request(api_client, "DELETE", f"/api/v1/namespaces/{NS}/pods/p")
    assert (status, gone["kind"]) == (200, "Pod")
    meta = gone["metadata"]
    assert TIME.match(meta["deletionTimestamp"])
    assert (meta["deletionGracePeriodSeconds"], meta["generation"]) == (0, 2)
    assert api_error(api.read_namespaced_pod, "p", NS)[0] == 404


def test_exec_attach_and_portforward_without_a_node_are_400(api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    api.create_namespaced_pod(NS, {"metadata": {"name": "one"},
                                   "spec": {"containers": [{"name": "c", "image": "i"}]}})
    api.create_namespaced_pod(NS, {"metadata": {"name": "three"}, "spec": {"containers": [
        {"name": n, "image": "i"} for n in ("a", "b", "c")]}})
    base = f"/api/v1/namespaces/{NS}/pods"
    for method, sub in (("GET", "exec"), ("POST", "exec"), ("POST", "attach"),
                        ("GET", "portforward")):
        status, body = request(api_client, method, f"{base}/one/{sub}",
                               query=[("command", "ls")] if sub == "exec" else None)
        assert (status, body["reason"], body["message"]) == (
            400, "BadRequest", "pod one does not have a host assigned"), sub
    status, body = request(api_client, "POST", f"{base}/three/exec", query=[("command", "ls")])
    assert (status, body["message"]) == (
        400, "a container name must be specified for pod three, choose one of: [a b c]")
    status, body = request(api_client, "POST", f"{base}/three/exec",
                           query=[("command", "ls"), ("container", "b")])
    assert body["message"] == "pod three does not have a host assigned"
    status, body = request(api_client, "POST", f"{base}/missing/exec")
    assert (status, body["reason"]) == (404, "NotFound")

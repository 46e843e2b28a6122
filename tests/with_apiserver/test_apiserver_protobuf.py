"""FakeAPIServer's protobuf codec: bodies built here byte by byte, and kubectl's own.

Kubernetes objects travel as ``k8s\\0`` + a ``runtime.Unknown`` envelope around the object's
message. The bytes below are built with a few lines of protobuf wire format, so the decoder is
covered without kubectl; where kubectl is installed, every ``kubectl create`` subcommand for a
built-in type (and ``kubectl create token``) runs against the server too.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import api_error, http_exchange
from kubernetes import client as k8s

from kinformer.testing import FakeAPIServer
from kinformer.testing._apiserver.wire import protobuf

PROTOBUF = "application/vnd.kubernetes.protobuf"
NS = "default"


# -- protobuf wire format, just enough to build bodies -----------------------------------------


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative numbers as two's complement, ten bytes
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def f(number: int, value: int | bool | str | bytes) -> bytes:
    """One field: a varint for ints and bools, length-delimited for text and bytes."""
    if isinstance(value, (bool, int)):
        return varint(number << 3) + varint(int(value))
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def m(*fields: bytes) -> bytes:
    return b"".join(fields)


def entry(number: int, key: str, value: str | bytes) -> bytes:
    """One map entry (key = 1, value = 2)."""
    return f(number, m(f(1, key), f(2, value)))


def envelope(api_version: str, kind: str, raw: bytes, encoding: str = "") -> bytes:
    type_meta = m(f(1, api_version), f(2, kind))
    return b"k8s\x00" + m(f(1, type_meta), f(2, raw), f(3, encoding), f(4, ""))


def meta(name: str, **labels: str) -> bytes:
    # empty strings and an empty creationTimestamp, as Go's encoder writes non-pointer fields
    return m(f(1, name), f(2, ""), f(3, ""), f(5, ""), f(6, ""), f(7, 0), f(8, b""),
             *(entry(11, k, v) for k, v in labels.items()))


def post(server: FakeAPIServer, path: str, body: bytes) -> tuple[int, Any]:
    code, _, data = http_exchange(server, "POST", path, body, PROTOBUF)
    return code, json.loads(data)


# -- bodies built here -------------------------------------------------------------------------


def deployment(name: str, replicas: int) -> bytes:
    selector = m(entry(1, "app", name))
    port = m(f(1, ""), f(2, 0), f(3, 80), f(4, ""), f(5, ""))
    container = m(f(1, "web"), f(2, "nginx"), f(3, "nginx"), f(3, "-g"), f(5, ""),
                  f(6, port), f(8, b""), f(16, False))
    template = m(f(1, meta("", app=name)), f(2, m(f(2, container), f(3, ""))))
    spec = m(f(1, replicas), f(2, selector), f(3, template), f(4, m(f(1, ""))), f(5, 0),
             f(7, False))
    return envelope("apps/v1", "Deployment", m(f(1, meta(name, app=name)), f(2, spec),
                                                f(3, m(f(1, 0)))))


def test_a_protobuf_deployment_is_created_as_its_json_form(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    code, made = post(apiserver, f"/apis/apps/v1/namespaces/{NS}/deployments",
                      deployment("web", 3))
    assert code == 201, made
    # the decoded fields, then the defaults a real server fills in (the empty strategy too)
    assert made["spec"] == {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "web", "image": "nginx",
                                              "command": ["nginx", "-g"],
                                              "ports": [{"containerPort": 80,
                                                         "protocol": "TCP"}],
                                              "resources": {},
                                              "terminationMessagePath": "/dev/termination-log",
                                              "terminationMessagePolicy": "File",
                                              "imagePullPolicy": "Always"}],
                              "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                              "dnsPolicy": "ClusterFirst", "securityContext": {},
                              "schedulerName": "default-scheduler"}},
        "strategy": {"type": "RollingUpdate",
                     "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
        "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600,
    }
    read = k8s.AppsV1Api(api_client).read_namespaced_deployment("web", NS)
    assert read.metadata.labels == {"app": "web"}
    assert read.metadata.generation == 1


def test_a_protobuf_replica_set_is_created_as_its_json_form(apiserver: FakeAPIServer) -> None:
    container = m(f(1, "web"), f(2, "nginx"), f(8, b""), f(16, False))
    template = m(f(1, meta("", app="web")), f(2, m(f(2, container), f(3, ""))))
    spec = m(f(1, 2), f(2, m(entry(1, "app", "web"))), f(3, template), f(4, 0))
    body = envelope("apps/v1", "ReplicaSet", m(f(1, meta("web-1", app="web")), f(2, spec),
                                                f(3, m(f(1, 0)))))
    code, made = post(apiserver, f"/apis/apps/v1/namespaces/{NS}/replicasets", body)
    assert code == 201, made
    assert (made["spec"]["replicas"], made["spec"]["selector"]) == (2, {"matchLabels": {"app": "web"}})
    assert made["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx"
    assert made["status"] == {"replicas": 0}


def test_a_pointer_field_keeps_its_zero_while_plain_zero_fields_are_left_out(
    apiserver: FakeAPIServer,
) -> None:
    code, made = post(apiserver, f"/apis/apps/v1/namespaces/{NS}/deployments",
                      deployment("idle", 0))
    assert code == 201, made
    assert made["spec"]["replicas"] == 0  # replicas is a pointer: an explicit 0 stays
    assert "minReadySeconds" not in made["spec"] and "paused" not in made["spec"]
    assert "generateName" not in made["metadata"]


def test_a_protobuf_service_gets_int_or_string_ports_and_the_server_defaults(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    by_number = m(f(1, "http"), f(2, "TCP"), f(3, 80), f(4, m(f(1, 0), f(2, 8080), f(3, ""))))
    by_name = m(f(1, "admin"), f(3, 9000), f(4, m(f(1, 1), f(2, 0), f(3, "admin-port"))))
    spec = m(f(1, by_number), f(1, by_name), entry(2, "app", "web"), f(3, ""),
             f(4, "ClusterIP"), f(7, ""))
    body = envelope("v1", "Service", m(f(1, meta("web")), f(2, spec), f(3, m(f(1, b"")))))
    code, made = post(apiserver, f"/api/v1/namespaces/{NS}/services", body)
    assert code == 201, made
    ports = made["spec"]["ports"]
    assert ports[0] == {"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080}
    assert ports[1] == {"name": "admin", "protocol": "TCP", "port": 9000,
                        "targetPort": "admin-port"}
    service = k8s.CoreV1Api(api_client).read_namespaced_service("web", NS)
    assert service.spec.selector == {"app": "web"}
    assert service.spec.cluster_ip and service.spec.session_affinity == "None"


def test_maps_of_bytes_quantities_and_inlined_messages_decode_to_their_json_forms() -> None:
    secret = protobuf.decode(envelope("v1", "Secret", m(
        f(1, meta("s")), entry(2, "bin", b"\x00\xff"), entry(2, "empty", b""), f(3, "Opaque"))))
    assert secret["data"] == {"bin": "AP8=", "empty": ""}
    assert secret["type"] == "Opaque"
    quota = protobuf.decode(envelope("v1", "ResourceQuota", m(
        f(1, meta("q")), f(2, m(f(1, m(f(1, "cpu"), f(2, m(f(1, "500m"))))), f(2, "BestEffort"))))))
    assert quota["spec"] == {"hard": {"cpu": "500m"}, "scopes": ["BestEffort"]}
    backend = m(f(4, m(f(1, "svc"), f(2, m(f(1, ""), f(2, 8080))))))
    rule = m(f(1, "example.com"), f(2, m(f(1, m(f(1, m(f(1, "/"), f(2, backend), f(3, "Prefix"))))))))
    ingress = protobuf.decode(envelope("networking.k8s.io/v1", "Ingress",
                                       m(f(1, meta("i")), f(2, m(f(3, rule))))))
    assert ingress["spec"]["rules"] == [{"host": "example.com", "http": {"paths": [
        {"path": "/", "backend": {"service": {"name": "svc", "port": {"number": 8080}}},
         "pathType": "Prefix"}]}}]


def test_negative_numbers_times_owner_references_and_unknown_fields() -> None:
    owner = m(f(5, "batch/v1"), f(1, "CronJob"), f(3, "nightly"), f(4, "u-1"), f(6, True),
              f(7, True))
    metadata = m(f(1, "j"), f(8, m(f(1, 1_767_323_045), f(2, 0))), f(13, owner),
                 f(99, "a field this table does not know"))
    job = protobuf.decode(envelope("batch/v1", "Job", m(
        f(1, metadata), f(2, m(f(3, -1), f(7, 0), f(10, False))))))
    assert job["metadata"]["creationTimestamp"] == "2026-01-02T03:04:05Z"
    assert job["metadata"]["ownerReferences"] == [{"apiVersion": "batch/v1", "kind": "CronJob",
                                                   "name": "nightly", "uid": "u-1",
                                                   "controller": True,
                                                   "blockOwnerDeletion": True}]
    assert job["spec"] == {"activeDeadlineSeconds": -1, "backoffLimit": 0, "suspend": False}


def test_a_malformed_body_is_400_and_a_type_without_a_table_is_415(
    apiserver: FakeAPIServer,
) -> None:
    truncated = envelope("v1", "ConfigMap", m(f(1, meta("c"))))[:-6]
    code, answer = post(apiserver, f"/api/v1/namespaces/{NS}/configmaps", truncated)
    assert (code, answer["reason"]) == (400, "BadRequest")
    assert answer["message"].startswith("the body of the request could not be decoded")
    wrong_wire = envelope("v1", "ConfigMap", m(f(1, meta("c")), f(4, "not a bool")))
    assert post(apiserver, f"/api/v1/namespaces/{NS}/configmaps", wrong_wire)[0] == 400
    unknown = envelope("v1", "Node", m(f(1, meta("n"))))
    code, answer = post(apiserver, "/api/v1/nodes", unknown)
    assert (code, answer["reason"]) == (415, "UnsupportedMediaType")
    gzipped = envelope("v1", "ConfigMap", m(f(1, meta("c"))), encoding="gzip")
    assert post(apiserver, f"/api/v1/namespaces/{NS}/configmaps", gzipped)[0] == 415


# -- every verb that takes a body ---------------------------------------------------------------

# client-go sends this with every Delete of a typed clientset: k8s\0 + runtime.Unknown naming v1
# DeleteOptions around an empty message (and empty contentEncoding and contentType)
DELETE_OPTIONS = envelope("v1", "DeleteOptions", b"")


def exchange(server: FakeAPIServer, method: str, path: str, body: bytes) -> tuple[int, Any]:
    code, _, data = http_exchange(server, method, path, body, PROTOBUF)
    return code, json.loads(data)


def test_client_gos_delete_options_body_is_accepted_on_every_delete(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    assert len(DELETE_OPTIONS) == 31
    api = k8s.CoreV1Api(api_client)
    api.create_namespaced_config_map(NS, {"metadata": {"name": "c"}})
    code, answer = exchange(apiserver, "DELETE", f"/api/v1/namespaces/{NS}/configmaps/c",
                            DELETE_OPTIONS)
    assert (code, answer["kind"], answer["status"]) == (200, "Status", "Success")
    assert answer["details"]["name"] == "c"
    api.create_namespaced_pod(NS, {"metadata": {"name": "p"},
                                   "spec": {"containers": [{"name": "c", "image": "i"}]}})
    code, answer = exchange(apiserver, "DELETE", f"/api/v1/namespaces/{NS}/pods/p",
                            DELETE_OPTIONS)
    assert (code, answer["kind"]) == (200, "Pod")
    api.create_namespaced_config_map(NS, {"metadata": {"name": "d"}})
    code, answer = exchange(apiserver, "DELETE", f"/api/v1/namespaces/{NS}/configmaps",
                            envelope("meta.k8s.io/v1", "DeleteOptions", b""))
    assert (code, answer["kind"]) == (200, "ConfigMapList")
    assert api.list_namespaced_config_map(NS).items == []


def test_protobuf_delete_options_carry_preconditions_and_dry_run(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    api = k8s.CoreV1Api(api_client)
    made = api.create_namespaced_config_map(NS, {"metadata": {"name": "c"}})
    dry = envelope("v1", "DeleteOptions", m(f(5, "All")))
    code, answer = exchange(apiserver, "DELETE", f"/api/v1/namespaces/{NS}/configmaps/c", dry)
    assert code == 200
    assert api.read_namespaced_config_map("c", NS).metadata.uid == made.metadata.uid
    stale = envelope("v1", "DeleteOptions", m(f(2, m(f(1, "another-uid")))))
    code, answer = exchange(apiserver, "DELETE", f"/api/v1/namespaces/{NS}/configmaps/c", stale)
    assert (code, answer["reason"]) == (409, "Conflict")


def lease(holder: str, renew_seconds: int, rv: str = "") -> bytes:
    metadata = m(f(1, "leader"), f(6, rv)) if rv else m(f(1, "leader"))
    renew = m(f(1, renew_seconds), f(2, 123_456_000))
    return envelope("coordination.k8s.io/v1", "Lease", m(
        f(1, metadata), f(2, m(f(1, holder), f(2, 15), f(4, renew), f(5, 0)))))


def test_go_leader_election_writes_leases_as_protobuf(apiserver: FakeAPIServer) -> None:
    path = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"
    code, made = exchange(apiserver, "POST", path, lease("a", 1_767_323_045))
    assert code == 201, made
    assert made["spec"] == {"holderIdentity": "a", "leaseDurationSeconds": 15,
                            "renewTime": "2026-01-02T03:04:05.123456Z", "leaseTransitions": 0}
    rv = made["metadata"]["resourceVersion"]
    code, updated = exchange(apiserver, "PUT", f"{path}/leader", lease("b", 1_767_323_050, rv))
    assert code == 200 and updated["spec"]["holderIdentity"] == "b"
    code, answer = exchange(apiserver, "PUT", f"{path}/leader", lease("c", 1_767_323_055, rv))
    assert (code, answer["reason"]) == (409, "Conflict")


# -- kubectl itself ----------------------------------------------------------------------------

KUBECTL_CREATES = [
    # (arguments after "kubectl create", path to read the object back, what it must hold)
    (["configmap", "cm", "--from-literal=a=b"], "/api/v1/namespaces/default/configmaps/cm",
     {"data": {"a": "b"}}),
    (["secret", "generic", "s", "--from-literal=a=b"], "/api/v1/namespaces/default/secrets/s",
     {"data": {"a": "Yg=="}, "type": "Opaque"}),
    (["secret", "docker-registry", "reg", "--docker-server=x", "--docker-username=u",
      "--docker-password=p"], "/api/v1/namespaces/default/secrets/reg",
     {"type": "kubernetes.io/dockerconfigjson"}),
    (["namespace", "team"], "/api/v1/namespaces/team", {"status": {"phase": "Active"}}),
    (["serviceaccount", "robot"], "/api/v1/namespaces/default/serviceaccounts/robot", {}),
    (["service", "clusterip", "web", "--tcp=80:8080"], "/api/v1/namespaces/default/services/web",
     {"spec": {"type": "ClusterIP", "selector": {"app": "web"}, "ports": [
         {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}]}}),
    (["service", "nodeport", "np", "--tcp=80:8080"], "/api/v1/namespaces/default/services/np",
     {"spec": {"type": "NodePort"}}),
    (["service", "loadbalancer", "lb", "--tcp=80:8080"], "/api/v1/namespaces/default/services/lb",
     {"spec": {"type": "LoadBalancer"}}),
    (["service", "externalname", "ext", "--external-name=example.com"],
     "/api/v1/namespaces/default/services/ext",
     {"spec": {"type": "ExternalName", "externalName": "example.com"}}),
    (["quota", "q", "--hard=cpu=1,pods=2"], "/api/v1/namespaces/default/resourcequotas/q",
     {"spec": {"hard": {"cpu": "1", "pods": "2"}}}),
    (["deployment", "web", "--image=nginx", "--port=80", "--replicas=2"],
     "/apis/apps/v1/namespaces/default/deployments/web",
     {"spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}}}),
    (["job", "once", "--image=busybox", "--", "echo", "hi"],
     "/apis/batch/v1/namespaces/default/jobs/once",
     {"spec": {"template": {"spec": {"restartPolicy": "Never"}}}}),
    (["cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *"],
     "/apis/batch/v1/namespaces/default/cronjobs/nightly", {"spec": {"schedule": "0 3 * * *"}}),
    (["role", "reader", "--verb=get", "--resource=pods"],
     "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/reader",
     {"rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}),
    (["clusterrole", "creader", "--verb=list", "--resource=configmaps"],
     "/apis/rbac.authorization.k8s.io/v1/clusterroles/creader",
     {"rules": [{"verbs": ["list"], "apiGroups": [""], "resources": ["configmaps"]}]}),
    (["rolebinding", "rb", "--clusterrole=creader", "--user=alice"],
     "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings/rb",
     {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                  "name": "creader"},
      "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]}),
    (["clusterrolebinding", "crb", "--clusterrole=creader", "--serviceaccount=default:robot"],
     "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/crb",
     {"subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}]}),
    (["ingress", "ing", "--rule=foo.com/bar=svc1:8080"],
     "/apis/networking.k8s.io/v1/namespaces/default/ingresses/ing",
     {"spec": {"rules": [{"host": "foo.com", "http": {"paths": [
         {"path": "/bar", "pathType": "Exact",
          "backend": {"service": {"name": "svc1", "port": {"number": 8080}}}}]}}]}}),
    (["poddisruptionbudget", "pdb", "--selector=app=web", "--min-available=50%"],
     "/apis/policy/v1/namespaces/default/poddisruptionbudgets/pdb",
     {"spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}}),
    (["priorityclass", "high", "--value=1000", "--description=important"],
     "/apis/scheduling.k8s.io/v1/priorityclasses/high",
     {"value": 1000, "description": "important", "preemptionPolicy": "PreemptLowerPriority"}),
]


def contains(whole: Any, part: Any) -> bool:
    """Whether ``part`` is ``whole`` with some keys left out (lists compared item by item)."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(k in whole and contains(whole[k], v)
                                               for k, v in part.items())
    if isinstance(part, list):
        return (isinstance(whole, list) and len(whole) == len(part)
                and all(contains(w, p) for w, p in zip(whole, part, strict=True)))
    return bool(whole == part)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_every_kubectl_create_subcommand_for_a_built_in_type_works(
    apiserver: FakeAPIServer, tmp_path: Path,
) -> None:
    env = dict(os.environ, KUBECONFIG=apiserver.write_kubeconfig(tmp_path / "kubeconfig"))
    failures = []
    for args, path, expected in KUBECTL_CREATES:
        result = subprocess.run(["kubectl", "create", *args], env=env, capture_output=True,
                                text=True, timeout=60)
        code, _, data = http_exchange(apiserver, "GET", path)
        stored = json.loads(data)
        if result.returncode != 0 or code != 200 or not contains(stored, expected):
            failures.append((args, result.stderr.strip(), stored))
    protobuf_posts = [r for r in apiserver.requests if r[0] == "POST"]
    assert not failures, failures
    assert len(protobuf_posts) == len(KUBECTL_CREATES)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_creates_a_job_from_a_cronjob_with_its_owner_reference(
    apiserver: FakeAPIServer, tmp_path: Path,
) -> None:
    env = dict(os.environ, KUBECONFIG=apiserver.write_kubeconfig(tmp_path / "kubeconfig"))
    for args in (["cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *"],
                 ["job", "manual", "--from=cronjob/nightly"]):
        result = subprocess.run(["kubectl", "create", *args], env=env, capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 0, result.stderr
    _, _, data = http_exchange(apiserver, "GET", "/apis/batch/v1/namespaces/default/jobs/manual")
    job = json.loads(data)
    _, _, data = http_exchange(apiserver, "GET",
                               "/apis/batch/v1/namespaces/default/cronjobs/nightly")
    owner = job["metadata"]["ownerReferences"][0]
    assert owner["kind"] == "CronJob" and owner["name"] == "nightly"
    assert owner["uid"] == json.loads(data)["metadata"]["uid"] and owner["controller"] is True
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"


def test_a_token_request_answers_a_service_account_token(api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    answer = api.create_namespaced_service_account_token(
        "default", NS, {"spec": {"audiences": ["vault"], "expirationSeconds": 900}})
    assert answer.spec.audiences == ["vault"] and answer.spec.expiration_seconds == 900
    claims = jwt_claims(answer.status.token)
    assert claims["sub"] == "system:serviceaccount:default:default"
    assert claims["aud"] == ["vault"] and claims["exp"] - claims["iat"] == 900
    status, body = api_error(api.create_namespaced_service_account_token, "nobody", NS,
                             {"spec": {}})
    assert (status, body["message"]) == (404, 'serviceaccounts "nobody" not found')
    status, body = api_error(api.create_namespaced_service_account_token, "default", NS,
                             {"spec": {"expirationSeconds": 60}})
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["message"].endswith("may not specify a duration less than 10 minutes")


def jwt_claims(token: str) -> Any:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_create_token_prints_a_token_for_the_service_account(
    apiserver: FakeAPIServer, tmp_path: Path,
) -> None:
    env = dict(os.environ, KUBECONFIG=apiserver.write_kubeconfig(tmp_path / "kubeconfig"))
    result = subprocess.run(["kubectl", "create", "token", "default", "--duration=20m"],
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    claims = jwt_claims(result.stdout.strip())
    assert claims["sub"] == "system:serviceaccount:default:default"
    assert claims["exp"] - claims["iat"] == 1200

"""FakeAPIServer CRUD through the official client: versions, metadata, errors and deletes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import CONFIGMAPS, api_error, cm_manifest
from kubernetes import client as k8s

from kinformer.errors import ConfigurationError, ServerError
from kinformer.testing import FakeAPIServer

NS = "default"
DATA = {"k": "v"}


def test_created_object_gets_uid_timestamp_and_a_fresh_resource_version(api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    before = int(api.list_namespaced_config_map(NS).metadata.resource_version)
    made = api.create_namespaced_config_map(NS, cm_manifest("a", DATA))
    assert made.metadata.uid
    assert made.metadata.creation_timestamp is not None
    assert int(made.metadata.resource_version) > before
    assert api.read_namespaced_config_map("a", NS).data == {"k": "v"}


def test_one_resource_version_counts_writes_of_every_type(api_client: Any) -> None:
    core = k8s.CoreV1Api(api_client)
    leases = k8s.CoordinationV1Api(api_client)
    first = int(core.create_namespaced_config_map(NS, cm_manifest("a", DATA)).metadata.resource_version)
    second = int(leases.create_namespaced_lease(
        NS, {"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}}).metadata.resource_version)
    third = int(core.create_namespaced_secret(
        NS, {"metadata": {"name": "s"}, "stringData": {"x": "y"}}).metadata.resource_version)
    assert first < second < third
    assert int(core.list_namespaced_config_map(NS).metadata.resource_version) == third


def test_reading_a_missing_object_is_404_with_the_real_message(api_client: Any) -> None:
    status, body = api_error(k8s.CoreV1Api(api_client).read_namespaced_config_map, "x", NS)
    assert status == 404
    assert body["reason"] == "NotFound"
    assert body["message"] == 'configmaps "x" not found'
    assert body["details"] == {"name": "x", "kind": "configmaps"}


def test_creating_an_existing_name_is_409_already_exists(api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    api.create_namespaced_config_map(NS, cm_manifest("a", DATA))
    status, body = api_error(api.create_namespaced_config_map, NS, cm_manifest("a", DATA))
    assert (status, body["reason"]) == (409, "AlreadyExists")
    assert body["message"] == 'configmaps "a" already exists'


def test_update_with_a_stale_version_conflicts_and_without_one_is_unconditional(
    api_client: Any,
) -> None:
    api = k8s.CoreV1Api(api_client)
    old = api.create_namespaced_config_map(NS, cm_manifest("a", DATA)).metadata.resource_version
    api.patch_namespaced_config_map("a", NS, {"data": {"k": "2"}})
    stale = {"metadata": {"name": "a", "resourceVersion": old}, "data": {"k": "3"}}
    status, body = api_error(api.replace_namespaced_config_map, "a", NS, stale)
    assert (status, body["reason"]) == (409, "Conflict")
    assert body["message"].startswith('Operation cannot be fulfilled on configmaps "a"')
    blind = api.replace_namespaced_config_map("a", NS, {"metadata": {"name": "a"},
                                                        "data": {"k": "4"}})
    assert blind.data == {"k": "4"}


def test_replacing_a_missing_object_is_404(api_client: Any) -> None:
    status, _ = api_error(k8s.CoreV1Api(api_client).replace_namespaced_config_map, "nope", NS,
                          cm_manifest("nope", DATA))
    assert status == 404


def test_patches_merge_apply_json_operations_and_reject_stale_versions(api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    old = api.create_namespaced_config_map(NS, cm_manifest("a", DATA, app="web")).metadata.resource_version
    merged = api.patch_namespaced_config_map("a", NS, {"metadata": {"labels": {"tier": "x"}},
                                                       "data": {"k": None, "n": "1"}})
    assert merged.metadata.labels == {"app": "web", "tier": "x"}
    assert merged.data == {"n": "1"}
    patched = api.patch_namespaced_config_map(
        "a", NS, [{"op": "add", "path": "/data/m", "value": "2"},
                  {"op": "remove", "path": "/metadata/labels/app"}])
    assert patched.data == {"n": "1", "m": "2"}
    assert patched.metadata.labels == {"tier": "x"}
    status, body = api_error(api.patch_namespaced_config_map, "a", NS,
                             {"metadata": {"resourceVersion": old}, "data": {"z": "1"}})
    assert (status, body["reason"]) == (409, "Conflict")


def test_objects_without_a_name_or_with_a_bad_name_are_422_invalid(api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    status, body = api_error(api.create_namespaced_config_map, NS, {"data": {}})
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["details"]["kind"] == "ConfigMap"
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    status, body = api_error(api.create_namespaced_config_map, NS, cm_manifest("Bad_Name", DATA))
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["details"]["name"] == "Bad_Name"


def test_generate_name_makes_a_unique_name(api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    made = api.create_namespaced_config_map(NS, {"metadata": {"generateName": "job-"}})
    assert made.metadata.name.startswith("job-") and len(made.metadata.name) == 9


def test_missing_namespace_is_404_for_create_and_an_empty_list(api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    status, body = api_error(api.create_namespaced_config_map, "ghost", cm_manifest("a", DATA))
    assert status == 404
    assert body["message"] == 'namespaces "ghost" not found'
    assert api.list_namespaced_config_map("ghost").items == []


def test_bad_bodies_and_selectors_are_400_never_500(raw: Any, api_client: Any) -> None:
    status, body = raw("POST", "/api/v1/namespaces/default/configmaps", body="{not json")
    assert (status, body["reason"]) == (400, "BadRequest")
    status, body = raw("POST", "/api/v1/namespaces/default/configmaps", body=[1, 2])
    assert status == 400
    status, body = raw("POST", "/api/v1/namespaces/default/configmaps",
                       body={"metadata": {"name": "a", "labels": {"x": 1}}})
    assert status == 400
    api = k8s.CoreV1Api(api_client)
    assert api_error(api.list_namespaced_config_map, NS, label_selector="a in (")[0] == 400
    status, body = api_error(api.list_namespaced_config_map, NS, field_selector="spec.x=1")
    assert (status, body["reason"]) == (400, "BadRequest")


def test_a_verb_the_resource_does_not_have_is_405(raw: Any) -> None:
    status, body = raw("POST", "/api/v1/namespaces/default/configmaps/a", body={})
    assert (status, body["reason"]) == (405, "MethodNotAllowed")
    status, _ = raw("PUT", "/api/v1/namespaces/default/configmaps", body={})
    assert status == 405


def test_unknown_paths_are_404(raw: Any) -> None:
    assert raw("GET", "/api/v1/widgets")[0] == 404
    assert raw("GET", "/apis/nope.example.com/v1")[0] == 404


def test_deleting_a_configmap_returns_a_success_status_with_its_uid(api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    uid = api.create_namespaced_config_map(NS, cm_manifest("a", DATA)).metadata.uid
    result = api.delete_namespaced_config_map("a", NS)
    reply = result if isinstance(result, dict) else result.to_dict()
    assert reply["status"] == "Success"
    assert reply["details"]["name"] == "a"
    assert reply["details"]["kind"] == "configmaps"
    assert reply["details"]["uid"] == uid
    assert api_error(api.delete_namespaced_config_map, "a", NS)[0] == 404


def test_deleting_a_namespace_returns_it_terminating_and_removes_what_it_held(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    api = k8s.CoreV1Api(api_client)
    api.create_namespace({"metadata": {"name": "team"}})
    api.create_namespaced_config_map("team", cm_manifest("a", DATA))
    api.create_namespaced_config_map(NS, cm_manifest("kept", DATA))
    since = api.list_namespaced_config_map("team").metadata.resource_version
    result = api.delete_namespace("team")
    gone = result if isinstance(result, dict) else result.to_dict()
    assert gone["kind"] == "Namespace"
    assert gone["status"]["phase"] == "Terminating"
    assert gone["metadata"]["deletionTimestamp"]
    assert [c["metadata"]["name"] for c in apiserver.list_objects(CONFIGMAPS)] == ["kept"]
    assert api_error(api.read_namespace, "team")[0] == 404
    stream = api.list_config_map_for_all_namespaces(
        watch=True, resource_version=since, timeout_seconds=1, _preload_content=False)
    first = json.loads(next(iter(stream.stream(1 << 16))).splitlines()[0])
    stream.release_conn()
    assert first["type"] == "DELETED"
    assert first["object"]["metadata"]["name"] == "a"


def test_generation_grows_on_spec_changes_only(api_client: Any) -> None:
    apps = k8s.AppsV1Api(api_client)
    spec = {"replicas": 1, "selector": {"matchLabels": {"app": "w"}},
            "template": {"metadata": {"labels": {"app": "w"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    made = apps.create_namespaced_deployment(NS, {"metadata": {"name": "d"}, "spec": spec})
    assert made.metadata.generation == 1
    labelled = apps.patch_namespaced_deployment("d", NS, {"metadata": {"labels": {"x": "y"}}})
    assert labelled.metadata.generation == 1
    scaled = apps.patch_namespaced_deployment("d", NS, {"spec": {"replicas": 3}})
    assert scaled.metadata.generation == 2
    assert scaled.spec.replicas == 3


def test_a_no_op_update_keeps_the_resource_version(api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    made = api.create_namespaced_config_map(NS, cm_manifest("a", DATA))
    same = api.patch_namespaced_config_map("a", NS, {"data": {"k": "v"}})
    assert same.metadata.resource_version == made.metadata.resource_version


def test_forbid_answers_403_until_allowed(apiserver: FakeAPIServer, api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    apiserver.forbid("configmaps", "list")
    status, body = api_error(api.list_namespaced_config_map, NS)
    assert (status, body["reason"]) == (403, "Forbidden")
    api.create_namespaced_config_map(NS, cm_manifest("a", DATA))
    apiserver.allow("configmaps", "list")
    assert len(api.list_namespaced_config_map(NS).items) == 1


def test_fail_next_fails_exactly_the_matching_requests(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    api = k8s.CoreV1Api(api_client)
    apiserver.fail_next(2, status=500, verb="create", resource="configmaps")
    api.list_namespaced_config_map(NS)
    assert api_error(api.create_namespaced_config_map, NS, cm_manifest("a", DATA))[0] == 500
    status, body = api_error(api.create_namespaced_config_map, NS, cm_manifest("a", DATA))
    assert (status, body["reason"]) == (500, "InternalError")
    api.create_namespaced_config_map(NS, cm_manifest("a", DATA))
    apiserver.fail_next(1, status=429)  # the client retries a GET after a 429 itself
    assert api_error(api.create_namespaced_config_map, NS, cm_manifest("b", DATA))[0] == 429
    assert api.create_namespaced_config_map(NS, cm_manifest("b", DATA)).metadata.name == "b"


def test_clear_faults_undoes_every_switch_still_in_force(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    api = k8s.CoreV1Api(api_client)
    apiserver.fail_next(5, status=500, verb="create")
    apiserver.corrupt_next(b"not json", 5, verb="list")
    apiserver.set_delay(60, verb="get")
    apiserver.forbid("configmaps")
    apiserver.clear_faults()
    api.create_namespaced_config_map(NS, cm_manifest("a", DATA))
    assert [cm.metadata.name for cm in api.list_namespaced_config_map(NS).items] == ["a"]
    assert api.read_namespaced_config_map("a", NS).metadata.name == "a"


def test_requests_are_recorded_with_their_status(apiserver: FakeAPIServer, api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    api.list_namespaced_config_map(NS, limit=5)
    api_error(api.read_namespaced_config_map, "x", NS)
    recorded = apiserver.requests[-2:]
    assert recorded[0] == ("GET", "/api/v1/namespaces/default/configmaps", {"limit": "5"}, 200)
    assert recorded[1][3] == 404


def test_server_side_helpers_see_and_make_the_same_objects(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    apiserver.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": NS}})
    api = k8s.CoreV1Api(api_client)
    assert api.read_namespaced_config_map("a", NS).metadata.name == "a"
    api.create_namespaced_config_map(NS, cm_manifest("b", DATA))
    assert apiserver.get(CONFIGMAPS, NS, "b")["data"] == {"k": "v"}
    last = apiserver.bulk_create(CONFIGMAPS, [{"metadata": {"name": f"n{i}", "namespace": NS}}
                                              for i in range(50)])
    assert last == apiserver.current_resource_version()
    assert len(api.list_namespaced_config_map(NS).items) == 52
    apiserver.delete(CONFIGMAPS, NS, "a")
    assert len(apiserver.list_objects(CONFIGMAPS)) == 51


def test_a_server_side_dry_run_checks_everything_and_stores_nothing(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    api = k8s.CoreV1Api(api_client)
    before = apiserver.current_resource_version()
    preview = api.create_namespaced_config_map(NS, cm_manifest("a", DATA), dry_run="All")
    assert preview.metadata.uid
    assert api.list_namespaced_config_map(NS).items == []
    bad = cm_manifest("Bad_Name", DATA)
    assert api_error(api.create_namespaced_config_map, NS, bad, dry_run="All")[0] == 422
    api.create_namespaced_config_map(NS, cm_manifest("a", DATA))
    api.delete_namespaced_config_map("a", NS, dry_run="All")
    changed = api.patch_namespaced_config_map("a", NS, {"data": {"k": "new"}}, dry_run="All")
    assert changed.data == {"k": "new"}
    assert api.read_namespaced_config_map("a", NS).data == {"k": "v"}
    assert int(apiserver.current_resource_version()) == int(before) + 1


def test_strategic_merge_patches_merge_containers_by_name(api_client: Any) -> None:
    apps = k8s.AppsV1Api(api_client)
    containers = [{"name": "a", "image": "nginx:1", "env": [{"name": "X", "value": "1"}]},
                  {"name": "b", "image": "busybox"}]
    apps.create_namespaced_deployment(NS, {"metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"app": "w"}},
        "template": {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": containers}}}})
    patched = apps.patch_namespaced_deployment("d", NS, {"spec": {"template": {"spec": {
        "containers": [{"name": "a", "image": "nginx:2"},
                       {"name": "b", "$patch": "delete"},
                       {"name": "c", "image": "redis"}]}}}})
    result = [(c.name, c.image, [e.name for e in c.env or []])
              for c in patched.spec.template.spec.containers]
    assert result == [("a", "nginx:2", ["X"]), ("c", "redis", [])]


def test_server_side_apply_creates_then_merges_the_applied_fields(raw: Any) -> None:
    path = "/api/v1/namespaces/default/configmaps/applied"
    query = [("fieldManager", "tests")]
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: '1'\n"
    status, made = raw("PATCH", path, body=body, content_type="application/apply-patch+yaml",
                       query=query)
    assert (status, made["data"]) == (201, {"a": "1"})
    status, changed = raw("PATCH", path, body=body.replace("a: '1'", "b: '2'"),
                          content_type="application/apply-patch+yaml", query=query)
    assert (status, changed["data"]) == (200, {"a": "1", "b": "2"})
    status, _ = raw("PATCH", path, body=body, content_type="application/apply-patch+yaml")
    assert status == 422


def test_a_put_carrying_another_uid_fails_its_uid_precondition(api_client: Any) -> None:
    # a copy read before the object was deleted and created again names the old uid: the
    # real server takes a PUT body's uid as a precondition, even with no resourceVersion
    api = k8s.CoreV1Api(api_client)
    old = api.create_namespaced_config_map(NS, cm_manifest("a", {"v": "old"}))
    api.delete_namespaced_config_map("a", NS)
    new = api.create_namespaced_config_map(NS, cm_manifest("a", {"v": "new"}))
    stale = api_client.sanitize_for_serialization(old)
    stale["metadata"].pop("resourceVersion")
    stale["data"] = {"v": "from the stale copy"}
    status, body = api_error(api.replace_namespaced_config_map, "a", NS, stale)
    assert (status, body["reason"]) == (409, "Conflict")
    assert body["message"] == (
        f'Operation cannot be fulfilled on configmaps "a": Precondition failed: UID in '
        f"precondition: {old.metadata.uid}, UID in object meta: {new.metadata.uid}")
    assert api.read_namespaced_config_map("a", NS).data == {"v": "new"}
    stale["metadata"]["uid"] = new.metadata.uid
    assert api.replace_namespaced_config_map("a", NS, stale).data == {"v": "from the stale copy"}


def test_no_finalizer_can_be_added_to_an_object_being_deleted(api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    api.create_namespaced_config_map(NS, {"metadata": {"name": "f",
                                                       "finalizers": ["example.com/x"]}})
    api.delete_namespaced_config_map("f", NS)
    added = {"metadata": {"finalizers": ["example.com/x", "example.com/z", "example.com/y"]}}
    status, body = api_error(api.patch_namespaced_config_map, "f", NS, added)
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["message"] == (
        'ConfigMap "f" is invalid: metadata.finalizers: Forbidden: no new finalizers can be '
        "added if the object is being deleted, found new finalizers "
        '[]string{"example.com/y", "example.com/z"}')
    assert body["details"]["causes"][0]["field"] == "metadata.finalizers"
    current = api.read_namespaced_config_map("f", NS)
    assert current.metadata.finalizers == ["example.com/x"]
    current.metadata.finalizers = ["example.com/x", "example.com/y"]
    assert api_error(api.replace_namespaced_config_map, "f", NS, current)[0] == 422
    # taking one away is what finalizers are for: then the object goes
    current.metadata.finalizers = []
    api.replace_namespaced_config_map("f", NS, current)
    assert api.list_namespaced_config_map(NS).items == []


@pytest.mark.parametrize(("how", "finalizer"), [
    ({"propagation_policy": "Foreground"}, "foregroundDeletion"),
    ({"propagation_policy": "Orphan"}, "orphan"),
    ({"body": k8s.V1DeleteOptions(propagation_policy="Orphan")}, "orphan"),
    ({"body": k8s.V1DeleteOptions(orphan_dependents=True)}, "orphan"),
    ({"propagation_policy": "Background"}, None),
], ids=["foreground", "orphan", "orphan-in-body", "orphan-dependents", "background"])
def test_a_delete_that_propagates_through_the_garbage_collector_leaves_its_finalizer(
    api_client: Any, how: dict[str, Any], finalizer: str | None,
) -> None:
    """As kube-apiserver with no controller-manager beside it (envtest): Foreground and Orphan
    add the garbage collector's finalizer and only mark the object; nothing here collects it,
    so it stays until an update takes the finalizer away."""
    api = k8s.CoreV1Api(api_client)
    api.create_namespaced_config_map(NS, {"metadata": {"name": "owner",
                                                       "finalizers": ["example.com/x"]}})
    api.delete_namespaced_config_map("owner", NS, **how)
    current = api.read_namespaced_config_map("owner", NS)
    assert current.metadata.deletion_timestamp is not None
    expected = ["example.com/x"] if finalizer is None else ["example.com/x", finalizer]
    assert current.metadata.finalizers == expected
    current.metadata.finalizers = []
    api.replace_namespaced_config_map("owner", NS, current)
    assert api.list_namespaced_config_map(NS).items == []


def test_propagation_options_are_checked_as_the_real_server_checks_them(api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    api.create_namespaced_config_map(NS, {"metadata": {"name": "a"}})
    status, body = api_error(api.delete_namespaced_config_map, "a", NS, propagation_policy="Sideways")
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["message"] == (
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
        '"Sideways": supported values: "Foreground", "Background", "Orphan", "nil"')
    both = k8s.V1DeleteOptions(orphan_dependents=False, propagation_policy="Background")
    status, body = api_error(api.delete_namespaced_config_map, "a", NS, body=both)
    assert status == 422 and "orphanDependents and deletionPropagation cannot be both set" in body["message"]
    assert [cm.metadata.name for cm in api.list_namespaced_config_map(NS).items] == ["a"]
    api.delete_namespaced_config_map("a", NS, propagation_policy="Foreground")  # no finalizers yet
    marked = api.read_namespaced_config_map("a", NS)
    assert marked.metadata.finalizers == ["foregroundDeletion"]


def test_the_delete_helper_takes_a_propagation_policy(apiserver: FakeAPIServer) -> None:
    apiserver.create(CONFIGMAPS, cm_manifest("a") | {"metadata": {"name": "a", "namespace": NS}})
    final = apiserver.delete(CONFIGMAPS, NS, "a", propagation_policy="Orphan")
    assert final["metadata"]["finalizers"] == ["orphan"]
    assert apiserver.get(CONFIGMAPS, NS, "a")["metadata"]["deletionTimestamp"]
    with pytest.raises(ConfigurationError):
        apiserver.delete(CONFIGMAPS, NS, "a", propagation_policy="orphan")


def test_a_create_carrying_a_resource_version_is_refused_as_etcd_refuses_it(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    # a copy of an object read from a server, sent back to be created: a client must drop
    # its resourceVersion first
    api = k8s.CoreV1Api(api_client)
    made = api.create_namespaced_config_map(NS, cm_manifest("a", DATA))
    api.delete_namespaced_config_map("a", NS)
    copy = api_client.sanitize_for_serialization(made)
    status, body = api_error(api.create_namespaced_config_map, NS, copy)
    assert status == 500
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "resourceVersion should not be set on objects to be created",
                    "code": 500}
    # a dry run does not reach storage, and "0" or what is no number is no version
    assert api.create_namespaced_config_map(NS, copy, dry_run="All").metadata.name == "a"
    for version in ("0", "-1"):
        copy["metadata"]["resourceVersion"] = version
        again = api.create_namespaced_config_map(NS, copy)
        assert again.metadata.resource_version != version
        api.delete_namespaced_config_map("a", NS)
    # the server-side helper refuses it as the server does
    copy["metadata"]["resourceVersion"] = made.metadata.resource_version
    with pytest.raises(ServerError) as info:
        apiserver.create(CONFIGMAPS, copy)
    assert info.value.status == 500
    assert apiserver.list_objects(CONFIGMAPS, NS) == []


def test_a_secret_takes_its_string_data_into_data_and_refuses_data_not_in_base64(
    api_client: Any, raw: Any,
) -> None:
    api = k8s.CoreV1Api(api_client)
    made = api.create_namespaced_secret(NS, {
        "metadata": {"name": "s"}, "data": {"a": "b2xk", "b": "Yg=="},
        "stringData": {"a": "x", "c": "ünï"}})
    assert made.data == {"a": "eA==", "b": "Yg==", "c": "w7xuw68="}
    assert made.string_data is None
    status, stored = raw("GET", f"/api/v1/namespaces/{NS}/secrets/s")
    assert "stringData" not in stored and stored["data"]["a"] == "eA=="
    patched = api.patch_namespaced_secret("s", NS, {"stringData": {"b": "new"}})
    assert patched.data == {"a": "eA==", "b": "bmV3", "c": "w7xuw68="}
    # the typed client would encode bytes itself: send the text as it is
    for value, at in [("not base64!!", 3), ("eA=", 3), ("eHl6eA", 4), ("eA==x", 4)]:
        status, body = raw("POST", f"/api/v1/namespaces/{NS}/secrets",
                           {"metadata": {"name": "bad"}, "data": {"k": value}})
        assert (status, body["reason"]) == (400, "BadRequest"), value
        assert body["message"] == (
            f'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at '
            f"input byte {at}")
    status, body = raw("PUT", f"/api/v1/namespaces/{NS}/secrets/s",
                       {"metadata": {"name": "s"}, "data": {"k": "%%%%"}})
    assert (status, body["message"].endswith("illegal base64 data at input byte 0")) == (400, True)
    # line breaks inside the text are skipped, as Go's decoder skips them
    status, body = raw("POST", f"/api/v1/namespaces/{NS}/secrets",
                       {"metadata": {"name": "wrapped"}, "data": {"k": "eHl6\neA=="}})
    assert status == 201, body


def test_labels_and_annotations_are_validated_as_the_real_server_validates_them(
    api_client: Any,
) -> None:
    api = k8s.CoreV1Api(api_client)
    value_msg = (
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
        "'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
    name_msg = (
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
        "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
        "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
    for meta, field, message in [
        ({"labels": {"a": "bad value!"}}, "metadata.labels",
         f'Invalid value: "bad value!": {value_msg}'),
        ({"labels": {"cluster": "root:org"}}, "metadata.labels",
         f'Invalid value: "root:org": {value_msg}'),
        ({"labels": {"a": "x" * 64}}, "metadata.labels",
         f'Invalid value: "{"x" * 64}": must be no more than 63 characters'),
        ({"labels": {"bad key!": "v"}}, "metadata.labels", f'Invalid value: "bad key!": {name_msg}'),
        ({"labels": {"Example.com/a": "v"}}, "metadata.labels", "Invalid value: "
         '"Example.com/a": prefix part a lowercase RFC 1123 subdomain must consist of'),
        ({"annotations": {"bad key!": "v"}}, "metadata.annotations",
         f'Invalid value: "bad key!": {name_msg}'),
        ({"annotations": {"a": "x" * (256 * 1024)}}, "metadata.annotations",
         "Too long: may not be more than 262144 bytes"),
    ]:
        status, body = api_error(api.create_namespaced_config_map, NS,
                                 {"metadata": {"name": "c", **meta}})
        assert (status, body["reason"]) == (422, "Invalid"), meta
        cause = body["details"]["causes"][0]
        assert cause["field"] == field
        assert cause["message"].startswith(message), cause["message"]
    fine = {"labels": {"example.com/My_Name.1": "", "app": "Web-1.x_y"},
            "annotations": {"Example.com/Anything": "any value at all: ok!"}}
    api.create_namespaced_config_map(NS, {"metadata": {"name": "c", **fine}})
    status, body = api_error(api.patch_namespaced_config_map, "c", NS,
                             {"metadata": {"labels": {"app": "no/slash"}}})
    assert (status, body["details"]["causes"][0]["field"]) == (422, "metadata.labels")


def test_an_immutable_configmap_or_secret_keeps_its_data_and_a_secret_its_type(api_client: Any) -> None:
    """kube-apiserver refuses, 422, to change the data of a ConfigMap or Secret marked
    immutable, or to unmark it, and a Secret's type ever; its metadata may change."""
    core = k8s.CoreV1Api(api_client)
    core.create_namespaced_config_map(NS, {"metadata": {"name": "frozen"}, "data": DATA, "immutable": True})
    cm = core.read_namespaced_config_map("frozen", NS)
    cm.data = {"k": "changed"}
    with pytest.raises(k8s.ApiException) as raised:
        core.replace_namespaced_config_map("frozen", NS, cm)
    assert raised.value.status == 422
    assert json.loads(raised.value.body)["message"] == (
        'ConfigMap "frozen" is invalid: data: Forbidden: field is immutable when `immutable` is set')
    with pytest.raises(k8s.ApiException) as raised:
        core.patch_namespaced_config_map("frozen", NS, {"immutable": False})
    assert raised.value.status == 422
    core.patch_namespaced_config_map("frozen", NS, {"metadata": {"labels": {"seen": "yes"}}})
    assert core.read_namespaced_config_map("frozen", NS).data == DATA

    core.create_namespaced_secret(NS, {"metadata": {"name": "s"}, "stringData": DATA, "immutable": True})
    with pytest.raises(k8s.ApiException) as raised:
        core.patch_namespaced_secret("s", NS, {"stringData": {"k": "changed"}})
    assert raised.value.status == 422
    core.create_namespaced_secret(NS, {"metadata": {"name": "t"}, "stringData": DATA})
    with pytest.raises(k8s.ApiException) as raised:
        core.patch_namespaced_secret("t", NS, {"type": "example.com/other"})
    assert raised.value.status == 422
    assert "type: Invalid value" in json.loads(raised.value.body)["message"]
    core.patch_namespaced_secret("t", NS, {"stringData": {"k": "changed"}})  # not immutable

"""FakeAPIServer serves coordination.k8s.io/v1 Leases as kube-apiserver does: MicroTimes with
exactly six fraction digits (printed back in UTC), optimistic updates with the real 409 Status,
and a PUT that changes nothing keeps the resourceVersion and sends no watch event."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from helpers import request, write

from kinformer import GroupVersionResource
from kinformer.testing import FakeAPIServer

LEASES = GroupVersionResource("coordination.k8s.io", "v1", "leases")
PATH = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


def lease(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name}, "spec": spec}


def test_microtimes_keep_six_digits_and_offsets_come_back_in_utc(api_client: Any) -> None:
    made = write(api_client, "POST", PATH, lease(
        "a", holderIdentity="me", leaseDurationSeconds=15,
        acquireTime="2026-12-03T08:15:02.000000Z", renewTime="2026-12-03T09:15:02.123456+01:00"))
    assert made["spec"]["acquireTime"] == "2026-12-03T08:15:02.000000Z"
    assert made["spec"]["renewTime"] == "2026-12-03T08:15:02.123456Z"
    assert "generation" not in made["metadata"]


@pytest.mark.parametrize(("value", "where"), [
    ("2026-12-03T08:15:02Z", 'cannot parse "Z" as ".000000"'),
    ("2026-12-03T08:15:02.05Z", 'cannot parse ".05Z" as ".000000"'),
    ("2026-12-03T08:15:02.1234567Z", 'cannot parse "7Z" as "Z07:00"'),
])
def test_a_microtime_without_exactly_six_fraction_digits_is_400(
    api_client: Any, value: str, where: str,
) -> None:
    status, body = request(api_client, "POST", PATH, lease("a", holderIdentity="me", renewTime=value))
    assert (status, body["reason"]) == (400, "BadRequest")
    assert body["message"] == (
        f'Lease in version "v1" cannot be handled as a Lease: parsing time "{value}" as '
        f'"2006-01-02T15:04:05.000000Z07:00": {where}')
    assert request(api_client, "GET", f"{PATH}/a")[0] == 404


def test_the_official_clients_own_datetime_on_a_whole_second_is_refused(api_client: Any) -> None:
    whole_second = datetime.datetime(2026, 12, 3, 8, 15, 2, tzinfo=datetime.timezone.utc)
    printed = api_client.sanitize_for_serialization(whole_second)
    status, _ = request(api_client, "POST", PATH, lease("a", renewTime=printed))
    assert status == 400


def test_wrongly_typed_spec_fields_are_400(api_client: Any) -> None:
    status, body = request(api_client, "POST", PATH, lease("a", leaseDurationSeconds="15"))
    assert status == 400
    assert "LeaseSpec.spec.leaseDurationSeconds of type int32" in body["message"]


def test_a_stale_update_is_409_conflict_with_the_real_status(api_client: Any) -> None:
    first = write(api_client, "POST", PATH, lease("a", holderIdentity="one"))
    second = dict(first, spec={"holderIdentity": "two"})
    write(api_client, "PUT", f"{PATH}/a", second)
    stale = dict(first, spec={"holderIdentity": "three"})
    status, body = request(api_client, "PUT", f"{PATH}/a", stale)
    assert status == 409
    assert body == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'Operation cannot be fulfilled on leases.coordination.k8s.io "a": the object '
                   "has been modified; please apply your changes to the latest version and try again",
        "reason": "Conflict",
        "details": {"name": "a", "group": "coordination.k8s.io", "kind": "leases"},
        "code": 409,
    }
    assert write(api_client, "GET", f"{PATH}/a")["spec"]["holderIdentity"] == "two"


def test_a_put_that_changes_nothing_keeps_the_resource_version(
    api_client: Any, apiserver: FakeAPIServer,
) -> None:
    made = write(api_client, "POST", PATH, lease("a", holderIdentity="me",
                                                 renewTime="2026-12-03T08:15:02.100000Z"))
    before = apiserver.current_resource_version()
    same_instant = dict(made, spec=dict(made["spec"], renewTime="2026-12-03T09:15:02.100000+01:00"))
    again = write(api_client, "PUT", f"{PATH}/a", same_instant)
    assert again["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
    assert apiserver.current_resource_version() == before
    renewed = dict(made, spec=dict(made["spec"], renewTime="2026-12-03T08:15:03.100000Z"))
    assert write(api_client, "PUT", f"{PATH}/a", renewed)["metadata"]["resourceVersion"] != before

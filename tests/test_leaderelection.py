"""Leader election values: the config's checks, the record's Lease form and MicroTime printing."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from kubernetes import client as k8s

from kinformer import (
    ConfigurationError,
    DecodeError,
    LeaderElectionConfig,
    LeaderElectionRecord,
    LeaderElector,
    LeaseLock,
)
from kinformer.leaderelection.record import format_micro_time, lease_seconds, parse_micro_time

UTC = datetime.timezone.utc


@pytest.fixture
def lock() -> LeaseLock:
    return LeaseLock(k8s.ApiClient(k8s.Configuration()), "default", "lock", "me")


def test_the_defaults_are_client_gos(lock: LeaseLock) -> None:
    config = LeaderElectionConfig(lock)
    assert (config.lease_duration, config.renew_deadline, config.retry_period) == (15.0, 10.0, 2.0)
    assert config.election_name == "default/lock"
    assert LeaderElectionConfig(lock, name="ha").election_name == "ha"


@pytest.mark.parametrize(("options", "complaint"), [
    ({"lease_duration": 10.0, "renew_deadline": 10.0}, "lease_duration .* greater than renew_deadline"),
    ({"renew_deadline": 2.4, "retry_period": 2.0}, r"greater than 1.2 \* retry_period"),
    ({"retry_period": 0.0}, "retry_period must be positive"),
    ({"lease_duration": float("nan")}, "finite"),
    ({"on_started_leading": "run"}, "on_started_leading must be callable"),
    ({"on_new_leader": 3}, "on_new_leader must be callable"),
])
def test_a_bad_config_is_a_configuration_error_at_construction(
    lock: LeaseLock, options: dict[str, Any], complaint: str,
) -> None:
    with pytest.raises(ConfigurationError, match=complaint):
        LeaderElectionConfig(lock, **options)


def test_a_missing_lock_or_identity_is_a_configuration_error(lock: LeaseLock) -> None:
    with pytest.raises(ConfigurationError, match="needs a lock"):
        LeaderElectionConfig(None)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="identity"):
        LeaseLock(k8s.ApiClient(k8s.Configuration()), "default", "lock", "")
    with pytest.raises(ConfigurationError):
        LeaderElector(lock)  # type: ignore[arg-type]


def test_sub_second_durations_are_allowed_and_the_lease_says_at_least_one_second(lock: LeaseLock) -> None:
    LeaderElectionConfig(lock, lease_duration=0.6, renew_deadline=0.4, retry_period=0.1)
    assert (lease_seconds(0.6), lease_seconds(15.0), lease_seconds(15.2)) == (1, 15, 16)


def test_microtimes_always_have_six_fraction_digits_in_utc() -> None:
    whole = datetime.datetime(2026, 12, 3, 8, 15, 2, tzinfo=UTC)
    assert format_micro_time(whole) == "2026-12-03T08:15:02.000000Z"
    plus_one = datetime.timezone(datetime.timedelta(hours=1))
    assert format_micro_time(datetime.datetime(2026, 12, 3, 9, 15, 2, 5, tzinfo=plus_one)) == (
        "2026-12-03T08:15:02.000005Z")


def test_microtimes_parse_with_any_fraction_and_offset() -> None:
    expected = datetime.datetime(2026, 12, 3, 8, 15, 2, 123456, tzinfo=UTC)
    assert parse_micro_time("2026-12-03T08:15:02.123456Z") == expected
    assert parse_micro_time("2026-12-03T09:15:02.123456789+01:00") == expected
    assert parse_micro_time("2026-12-03T08:15:02Z") == expected.replace(microsecond=0)
    with pytest.raises(DecodeError):
        parse_micro_time("yesterday")


def test_a_record_round_trips_through_a_lease_spec() -> None:
    now = datetime.datetime(2026, 12, 3, 8, 15, 2, tzinfo=UTC)
    record = LeaderElectionRecord("me", 15, now, now, 4)
    spec = record.to_lease_spec()
    assert spec == {"holderIdentity": "me", "leaseDurationSeconds": 15, "leaseTransitions": 4,
                    "acquireTime": "2026-12-03T08:15:02.000000Z",
                    "renewTime": "2026-12-03T08:15:02.000000Z"}
    assert LeaderElectionRecord.from_lease_spec(spec) == record
    assert LeaderElectionRecord.from_lease_spec(None) == LeaderElectionRecord("", 0, None, None, 0)
    with pytest.raises(DecodeError, match="leaseTransitions"):
        LeaderElectionRecord.from_lease_spec({"leaseTransitions": "4"})

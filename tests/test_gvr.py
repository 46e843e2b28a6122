"""Resource identities print the way client-go prints them and behave as values."""

from __future__ import annotations

import dataclasses

import pytest

from kinformer import APIResourceMeta, GroupVersionKind, GroupVersionResource
from kinformer.gvr import split_group_version


def test_gvr_prints_like_client_go() -> None:
    assert str(GroupVersionResource("apps", "v1", "deployments")) == "apps/v1, Resource=deployments"
    assert str(GroupVersionResource("", "v1", "configmaps")) == "/v1, Resource=configmaps"
    assert str(GroupVersionKind("apps", "v1", "Deployment")) == "apps/v1, Kind=Deployment"


def test_gvr_is_a_frozen_hashable_value() -> None:
    a = GroupVersionResource("apps", "v1", "deployments")
    b = GroupVersionResource("apps", "v1", "deployments")
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert {a: 1}[b] == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.resource = "x"  # type: ignore[misc]
    kind = GroupVersionKind("apps", "v1", "Deployment")
    assert kind == GroupVersionKind("apps", "v1", "Deployment")
    assert hash(kind) == hash(GroupVersionKind("apps", "v1", "Deployment"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        kind.kind = "x"  # type: ignore[misc]


def test_api_resource_meta_takes_api_md_field_names_and_is_namespaced_by_default() -> None:
    deployments = GroupVersionResource("apps", "v1", "deployments")
    meta = APIResourceMeta(
        group_version_kind=GroupVersionKind("apps", "v1", "Deployment"), group_version_resource=deployments
    )
    assert meta.is_cluster_scoped is False
    assert (meta.group_version_kind.kind, meta.group_version_resource) == ("Deployment", deployments)
    namespaces = GroupVersionResource("", "v1", "namespaces")
    cluster = APIResourceMeta(GroupVersionKind("", "v1", "Namespace"), namespaces, is_cluster_scoped=True)
    assert cluster.is_cluster_scoped is True


def test_group_version_strings() -> None:
    assert GroupVersionResource("", "v1", "pods").group_version == "v1"
    assert GroupVersionResource("apps", "v1", "deployments").group_version == "apps/v1"
    assert GroupVersionResource("apps", "v1", "deployments").group_resource == "deployments.apps"
    assert split_group_version("v1") == ("", "v1")
    assert split_group_version("example.com/v1beta1") == ("example.com", "v1beta1")
    assert GroupVersionResource.from_api_version("apps/v1", "deployments").group == "apps"

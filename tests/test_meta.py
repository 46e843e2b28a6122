"""kinformer.meta: every reader on decoded JSON, on the official client's models and on malformed
objects, and the strict check every object from the server passes before it can be cached."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import V1ConfigMap, V1ObjectMeta

from kinformer import errors, meta


def decoded(**metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}


FULL = dict(
    name="web",
    namespace="prod",
    uid="0c1d-2e3f",
    resourceVersion="42",
    labels={"app": "web"},
    annotations={"note": "x"},
)


def model(**fields: Any) -> V1ConfigMap:
    return V1ConfigMap(metadata=V1ObjectMeta(**fields))


MODEL_FULL = dict(
    name="web",
    namespace="prod",
    uid="0c1d-2e3f",
    resource_version="42",
    labels={"app": "web"},
    annotations={"note": "x"},
)


class NoMetadata:
    """An object that is neither decoded JSON nor a model with metadata."""


# -- readers -----------------------------------------------------------------------------------


@pytest.mark.parametrize("obj", [decoded(**FULL), model(**MODEL_FULL)], ids=["dict", "model"])
def test_every_reader_reads_a_full_object_of_either_shape(obj: Any) -> None:
    assert meta.metadata(obj) is (obj["metadata"] if isinstance(obj, dict) else obj.metadata)
    assert meta.name(obj) == "web"
    assert meta.namespace(obj) == "prod"
    assert meta.uid(obj) == "0c1d-2e3f"
    assert meta.resource_version(obj) == "42"
    assert meta.labels(obj) == {"app": "web"}
    assert meta.annotations(obj) == {"note": "x"}
    assert meta.namespace_and_name(obj) == ("prod", "web")
    assert meta.has_name(obj)
    assert meta.has_metadata(obj)


@pytest.mark.parametrize("obj", [decoded(name="node-1"), model(name="node-1")], ids=["dict", "model"])
def test_absent_fields_read_as_empty(obj: Any) -> None:
    assert meta.name(obj) == "node-1"
    assert meta.namespace(obj) == ""
    assert meta.uid(obj) == ""
    assert meta.resource_version(obj) == ""  # metadata without a version: not None
    assert meta.labels(obj) == {}
    assert meta.annotations(obj) == {}
    assert meta.namespace_and_name(obj) == ("", "node-1")


def test_a_non_string_resource_version_reads_as_its_string() -> None:
    assert meta.resource_version(decoded(name="a", resourceVersion=7)) == "7"


def test_a_mapping_that_is_not_a_dict_is_read_like_decoded_json() -> None:
    from types import MappingProxyType

    obj = MappingProxyType({"metadata": MappingProxyType({"name": "a", "resourceVersion": "3"})})
    assert meta.name(obj) == "a"
    assert meta.resource_version(obj) == "3"
    assert meta.namespace_and_name(obj) == ("", "a")


@pytest.mark.parametrize(
    "obj",
    [{"kind": "ConfigMap"}, {"metadata": None}, V1ConfigMap(), NoMetadata(), 42, "plain"],
    ids=["dict-without-metadata", "dict-metadata-null", "model-without-metadata", "object", "int", "str"],
)
def test_an_object_without_metadata_reads_as_empty_and_has_no_key(obj: Any) -> None:
    assert meta.metadata(obj) is None
    assert meta.name(obj) == ""
    assert meta.namespace(obj) == ""
    assert meta.uid(obj) == ""
    assert meta.resource_version(obj) is None  # told apart from an absent field
    assert meta.labels(obj) == {}
    assert meta.annotations(obj) == {}
    assert not meta.has_name(obj)
    assert not meta.has_metadata(obj)
    with pytest.raises(errors.KeyFuncError, match=r"^object has no meta: "):
        meta.namespace_and_name(obj)


def test_metadata_that_is_not_a_dict_reads_as_empty_and_has_no_key() -> None:
    obj = {"metadata": "nope"}
    assert meta.metadata(obj) == "nope"
    assert meta.name(obj) == ""
    assert meta.namespace(obj) == ""
    assert meta.labels(obj) == {}
    assert meta.annotations(obj) == {}
    assert not meta.has_metadata(obj)
    with pytest.raises(errors.KeyFuncError, match=r"^object has no meta: dict "):
        meta.namespace_and_name(obj)


def test_fields_of_the_wrong_type_read_as_empty() -> None:
    obj = decoded(name=5, namespace=["x"], uid=1, labels="app=web", annotations=["note"])
    assert meta.name(obj) == ""
    assert meta.namespace(obj) == ""
    assert meta.uid(obj) == ""
    assert meta.labels(obj) == {}
    assert meta.annotations(obj) == {}
    assert not meta.has_name(obj)
    assert meta.has_metadata(obj)  # it has metadata, only not a usable name


def test_an_empty_name_is_no_name() -> None:
    for obj in (decoded(name=""), model(name=""), decoded(namespace="ns")):
        assert meta.name(obj) == ""
        assert not meta.has_name(obj)


def test_the_no_metadata_error_names_the_type_and_shows_the_object_briefly() -> None:
    err = meta.no_metadata({"spec": "x" * 500})
    assert isinstance(err, errors.KeyFuncError)
    assert str(err).startswith("object has no meta: dict {'spec': 'xxx")
    assert len(str(err)) < 250


# -- the strict check --------------------------------------------------------------------------


def test_a_well_formed_object_passes_and_check_returns_it() -> None:
    for obj in (decoded(name="a"), decoded(name="a", namespace="ns", resourceVersion="1")):
        assert meta.is_well_formed(obj)
        assert meta.check(obj, "list v1, Resource=configmaps") is obj


@pytest.mark.parametrize(
    ("obj", "reason"),
    [
        ([], "expected an object, got list"),
        ("text", "expected an object, got str"),
        (None, "expected an object, got NoneType"),
        (model(name="a"), "expected an object, got V1ConfigMap"),
        ({"kind": "ConfigMap"}, "object has no metadata.name"),
        ({"metadata": "nope"}, "object has no metadata.name"),
        (decoded(), "object has no metadata.name"),
        (decoded(name=""), "object has no metadata.name"),
        (decoded(name=5), "metadata.name is not a string"),
        (decoded(name="a", namespace=3), "metadata.namespace is not a string"),
        (decoded(name="a", resourceVersion=10), "metadata.resourceVersion is not a string"),
    ],
    ids=[
        "list",
        "str",
        "null",
        "model",
        "no-metadata",
        "metadata-not-a-dict",
        "no-name",
        "empty-name",
        "name-not-a-string",
        "namespace-not-a-string",
        "resource-version-not-a-string",
    ],
)
def test_a_malformed_object_fails_the_check_saying_why(obj: Any, reason: str) -> None:
    assert not meta.is_well_formed(obj)
    with pytest.raises(errors.DecodeError) as info:
        meta.check(obj, "watch v1, Resource=configmaps: ADDED")
    assert str(info.value) == f"watch v1, Resource=configmaps: ADDED: {reason}"


def test_a_null_namespace_or_resource_version_fails_only_the_fast_test() -> None:
    """``is_well_formed`` wants a string where the field is present; ``check`` lets null through."""
    for obj in (decoded(name="a", namespace=None), decoded(name="a", resourceVersion=None)):
        assert not meta.is_well_formed(obj)
        assert meta.check(obj, "list") is obj

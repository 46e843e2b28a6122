"""Helpers shared by the HTTP tests: CustomResourceDefinition bodies and loading docs/examples."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

from kinformer.gvr import GroupVersionResource

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def crd(gvr: GroupVersionResource, scope: str = "Namespaced") -> dict[str, Any]:
    """A CRD serving ``gvr`` (one served, stored version; kind and singular from the plural)."""
    kind = gvr.resource[:-1].capitalize()
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": gvr.group_resource},
        "spec": {
            "group": gvr.group,
            "scope": scope,
            "names": {"plural": gvr.resource, "singular": gvr.resource[:-1], "kind": kind},
            "versions": [
                {
                    "name": gvr.version,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }


def load_example(name: str) -> ModuleType:
    """Import ``docs/examples/<name>.py`` as a module named ``name``."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

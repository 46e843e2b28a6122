"""Sphinx configuration: Markdown pages through MyST, the API reference through autodoc."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "kinformer"
author = "the kinformer authors"
copyright = "the kinformer authors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "examples", "**/__pycache__"]

myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "show-inheritance": True}

# annotations such as ``object`` or ``type`` would otherwise match the NamedTuple fields of the
# same names (Delta.object, WatchEvent.type) and warn about the ambiguity
suppress_warnings = ["ref.python"]

html_theme = "alabaster"
html_title = "kinformer"


def _hide_private_bases(app: object, name: str, obj: object, options: object, bases: list[type]) -> None:
    """Show only public bases: the Reflector's parts live in private modules and are not API."""
    public = [
        base
        for base in bases
        if not any(part.startswith("_") for part in getattr(base, "__module__", "").split("."))
    ]
    bases[:] = public or [object]


def setup(app: object) -> None:
    app.connect("autodoc-process-bases", _hide_private_bases)  # type: ignore[attr-defined]

"""The examples in kinformer's docstrings: each is a real code block, and the ``>>>`` ones run.

Examples that need an API server are ``::`` blocks; tests/with_apiserver/test_entry_point_examples.py
runs those against a FakeAPIServer.
"""

from __future__ import annotations

import ast
import doctest
import importlib
from pathlib import Path

import pytest

import kinformer

PACKAGE = Path(kinformer.__file__).parent
ROOT = PACKAGE.parent


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def docstrings(path: Path) -> list[tuple[str, str]]:
    """``(where, docstring)`` of the module and of every class and function in it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            if doc:
                found.append((f"{module_name(path)}:{getattr(node, 'name', '<module>')}", doc))
    return found


SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if "_apiserver" not in p.parts)
WITH_DOCTESTS = [module_name(p) for p in SOURCES if ">>> " in p.read_text(encoding="utf-8")]


@pytest.mark.parametrize("name", WITH_DOCTESTS)
def test_the_doctests_of_a_module_pass(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False, report=True)
    assert result.attempted > 0
    assert result.failed == 0


def test_the_entry_points_have_runnable_examples() -> None:
    assert {"kinformer.context", "kinformer.gvr", "kinformer.errors", "kinformer.cache.store",
            "kinformer.cache.labels", "kinformer.workqueue.queue",
            "kinformer.workqueue.rate_limiting"} <= set(WITH_DOCTESTS)


def test_no_docstring_example_renders_as_prose() -> None:
    """An indented block set off by a blank line is a block quote in the reference, with curly
    quotes; an example must follow ``::`` (or a directive) or be a ``>>>`` doctest. (A definition
    list's definition follows its term without a blank line.)"""
    prose = []
    for path in SOURCES:
        for where, doc in docstrings(path):
            previous = ""  # the last unindented line
            blank_before = False
            in_block = False
            for line in doc.splitlines():
                if not line.strip():
                    blank_before = True
                    continue
                indented = line.startswith("    ")
                if indented and not in_block:
                    in_block = True
                    introduced = previous.endswith("::") or previous.lstrip().startswith(".. ")
                    if blank_before and not introduced and not line.lstrip().startswith(">>>"):
                        prose.append(f"{where}: {line.strip()}")
                elif not indented:
                    in_block = False
                    previous = line.rstrip()
                blank_before = False
    assert prose == []

"""The package's shape: what ``import kinformer`` loads, and where requests are sent from.

The import layers themselves (each layer imports only those below it, no cycles) are checked by
import-linter in ``tox -e lint`` from the contracts in setup.cfg.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import kinformer

PACKAGE = Path(kinformer.__file__).parent


def test_import_kinformer_loads_neither_side_wing() -> None:
    code = (
        "import sys, kinformer\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('kinformer'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.split()
    assert "kinformer.informer" in loaded
    assert [m for m in loaded if m.split(".")[:2] in (["kinformer", "cli"], ["kinformer", "testing"])] == []


def test_every_public_name_is_exported_once_and_resolves() -> None:
    assert len(kinformer.__all__) == len(set(kinformer.__all__))
    missing = [name for name in kinformer.__all__ if not hasattr(kinformer, name)]
    assert missing == []


def _modules_calling(attribute: str) -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        if any(
            isinstance(node, ast.Attribute) and node.attr == attribute for node in ast.walk(tree)
        ):
            found.append(path.relative_to(PACKAGE).as_posix())
    return found


def test_one_module_sends_requests_through_the_official_client() -> None:
    assert _modules_calling("call_api") == ["client/rest.py"]

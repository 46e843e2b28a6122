"""The package's shape: what ``import kinformer`` loads, and where requests are sent from.

The import layers themselves (each layer imports only those below it, no cycles) are checked by
import-linter in ``tox -e lint`` from the contracts in setup.cfg.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import kinformer

PACKAGE = Path(kinformer.__file__).parent
CHECKOUT = Path(__file__).resolve().parents[1]


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


def test_ci_runs_exactly_the_test_command_of_the_readme() -> None:
    section = (CHECKOUT / "README.md").read_text(encoding="utf-8").split("## Run the tests", 1)[1]
    match = re.search(r"```\n(.*?)```", section, re.DOTALL)
    assert match is not None
    commands = match.group(1).splitlines()
    script = (CHECKOUT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    steps = [line for line in script if line.strip() and not line.lstrip().startswith("#")]
    assert steps == ["set -euo pipefail", 'cd "$(dirname "$0")/.."', *commands]

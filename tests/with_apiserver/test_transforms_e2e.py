"""docs/concepts.md's transform example, run as written: an informer over FakeAPIServer caches
Pods without managedFields and without the annotation its chained transform drops."""

from __future__ import annotations

import re
from pathlib import Path

CONCEPTS = Path(__file__).resolve().parents[2] / "docs" / "concepts.md"


def test_the_chained_transform_example_caches_what_it_promises() -> None:
    section = CONCEPTS.read_text(encoding="utf-8").split("## Transforms: cache less", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None
    code = match.group(1)
    assert "chain(strip_managed_fields" in code
    exec(compile(code, str(CONCEPTS), "exec"), {"__name__": "example"})

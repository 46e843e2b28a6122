"""The guide's short examples that no worked example covers, run as written: docs/testing.md's
fixtures of your own, ScriptedSource test, leak fixture, logical clusters and FakeClock blocks,
docs/multicluster.md's cluster-aware keys and cluster handler and docs/sharding.md's selector, with the output
their comments promise.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


def python_blocks(page: str, heading: str) -> list[str]:
    """The ```python blocks of ``page``'s section under ``heading``, up to the next heading."""
    text = (DOCS / page).read_text(encoding="utf-8")
    section = text.split(f"\n{heading}\n", 1)[1]
    section = re.split(r"\n#{2,3} ", section, maxsplit=1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


def run_block(page: str, code: str) -> str:
    """Run ``code`` as a script of its own; what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOCS / page), "exec"), {"__name__": "__main__"})
    return out.getvalue()


def printed_comments(code: str) -> list[str]:
    """What the block's comments say it prints: ``print(...)  # shown`` and ``# shown`` lines
    right after a print."""
    shown = []
    lines = code.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("print(") and "  # " in line:
            shown.append(line.split("  # ", 1)[1])
        elif line.startswith("print(") and i + 1 < len(lines) and lines[i + 1].startswith("# "):
            shown.append(lines[i + 1][2:])
    return shown


def test_the_testing_guides_fixtures_scripted_source_and_leak_check_pass(
    pytester: pytest.Pytester,
) -> None:
    fixtures, uses_them = python_blocks("testing.md", "## Fixtures of your own")
    (scripted,) = python_blocks("testing.md", "## Without a server: ScriptedSource and Recorder")
    (leak_check,) = python_blocks("testing.md", "## No leaked threads")
    pytester.makeconftest(fixtures + "\n\n" + leak_check)
    pytester.makepyfile(test_fixtures_of_your_own=uses_them, test_scripted_source=scripted)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_the_testing_guides_logical_clusters_example_runs() -> None:
    (code,) = python_blocks("testing.md", "## Logical clusters")
    run_block("testing.md", code)


def test_the_testing_guides_fake_clock_example_runs() -> None:
    (code,) = python_blocks("testing.md", "## Time without sleeping")
    run_block("testing.md", code)


def test_the_cluster_aware_keys_example_prints_what_it_says() -> None:
    code, handler = python_blocks("multicluster.md", "## Keys, indexes and listers that carry the cluster")
    expected = printed_comments(code)
    assert expected == ["['root:a|default/app', 'root:b|default/app']"]
    assert run_block("multicluster.md", code).splitlines() == expected
    run_block("multicluster.md", handler)


def test_the_shard_selector_example_prints_what_it_says() -> None:
    (code,) = python_blocks("sharding.md", "## How objects are split")
    expected = printed_comments(code)
    assert len(expected) == 1
    assert run_block("sharding.md", code).splitlines() == expected

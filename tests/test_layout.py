"""The package's shape: what ``import kinformer`` loads, and where requests are sent from.

The import layers themselves (each layer imports only those below it, no cycles) are checked by
import-linter in ``tox -e lint`` from the contracts in setup.cfg.
"""

from __future__ import annotations

import ast
import configparser
import importlib
import importlib.metadata
import inspect
import itertools
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

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


def test_internals_left_the_public_face_and_still_resolve_with_a_warning() -> None:
    for name, module in kinformer.MOVED.items():
        assert name not in kinformer.__all__
        with pytest.warns(DeprecationWarning, match=module.replace(".", r"\.")):
            found = getattr(kinformer, name)
        assert found is getattr(importlib.import_module(module), name)
    with pytest.raises(AttributeError):
        kinformer.no_such_name  # noqa: B018


def test_the_errors_users_meet_are_exported() -> None:
    from kinformer import errors

    tree = {name for name in dir(errors)
            if isinstance(getattr(errors, name), type) and issubclass(getattr(errors, name), Exception)
            and getattr(errors, name).__module__ == errors.__name__}
    assert tree - set(kinformer.__all__) == set()


def _modules_calling(attribute: str) -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        if any(
            isinstance(node, ast.Attribute) and node.attr == attribute for node in ast.walk(tree)
        ):
            found.append(path.relative_to(PACKAGE).as_posix())
    return found


def test_one_module_builds_requests_and_one_pool_sends_them() -> None:
    assert _modules_calling("param_serialize") == ["client/rest.py"]
    assert _modules_calling("urlopen") == ["client/pool.py"]
    assert _modules_calling("call_api") == []  # the caller's ApiClient never carries them


def test_every_module_logging_a_traceback_redacts_its_records() -> None:
    """A traceback quotes whatever its exceptions carry (the official client's ApiException
    quotes the server's answer, which may echo the request's token): each module that logs one
    has its logger redact what it logs (kinformer.errors.RedactingFilter)."""
    unredacted = [path.relative_to(PACKAGE).as_posix() for path in sorted(PACKAGE.rglob("*.py"))
                  if re.search(r"\blog\.exception\(|exc_info=True", text := path.read_text(encoding="utf-8"))
                  and "log.addFilter(errors.REDACTING)" not in text]
    assert unredacted == []


def test_ci_runs_exactly_the_test_command_of_the_readme() -> None:
    section = (CHECKOUT / "README.md").read_text(encoding="utf-8").split("## Run the tests", 1)[1]
    match = re.search(r"```\n(.*?)```", section, re.DOTALL)
    assert match is not None
    commands = match.group(1).splitlines()
    script = (CHECKOUT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    steps = [line for line in script if line.strip() and not line.lstrip().startswith("#")]
    assert steps == ["set -euo pipefail", 'cd "$(dirname "$0")/.."', *commands]


# -- the docs build ------------------------------------------------------------------------------


def _requirement_names(lines: str | list[str]) -> list[str]:
    """The distribution names of requirement lines (``pytest>=7`` -> ``pytest``), markers ignored."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    found = (re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", line.strip()) for line in lines)
    return [m.group(0).lower().replace("_", "-") for m in found if m]


def _with_dependencies(names: list[str]) -> set[str]:
    """``names`` and every distribution they require, as far as the installed metadata tells."""
    found: set[str] = set()
    pending = list(names)
    while pending:
        name = pending.pop()
        if name in found:
            continue
        found.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        pending += _requirement_names([r for r in requires if "extra ==" not in r])
    return found


def _module_level_imports(module: str, seen: set[str]) -> set[str]:
    """Top-level names of the packages ``module`` imports when it loads, following kinformer's own
    modules: what importing it needs installed. Imports inside functions are not followed."""
    if module in seen:
        return set()
    seen.add(module)
    base = CHECKOUT.joinpath(*module.split("."))
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    if not path.exists():
        return set()
    found: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        imported: list[str] = []
        if isinstance(node, ast.Import):
            imported = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        for name in imported:
            parts = name.split(".")
            if parts[0] != "kinformer":
                found.add(parts[0])
                continue
            for end in range(1, len(parts) + 1):  # a package's __init__ loads first
                found |= _module_level_imports(".".join(parts[:end]), seen)
    return found


def test_the_docs_environment_installs_what_autodoc_imports_and_ci_builds_the_docs() -> None:
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(CHECKOUT / "tox.ini", encoding="utf-8")
    assert "docs" in [env.strip() for env in tox["tox"]["envlist"].split(",")]  # `tox` builds them
    setup = configparser.ConfigParser(interpolation=None)
    setup.read(CHECKOUT / "setup.cfg", encoding="utf-8")
    docs = tox["testenv:docs"]
    wanted = _requirement_names(setup["options"]["install_requires"])
    wanted += _requirement_names(docs.get("deps", ""))
    for extra in docs.get("extras", "").split():
        wanted += _requirement_names(setup["options.extras_require"][extra])
    installed = _with_dependencies(wanted)
    provided_by = importlib.metadata.packages_distributions()
    documented = set()
    for page in (CHECKOUT / "docs" / "api").glob("*.rst"):
        documented |= set(re.findall(r"^\.\. automodule:: (\S+)", page.read_text(encoding="utf-8"), re.M))
    seen: set[str] = set()
    needed = set().union(*(_module_level_imports(module, seen) for module in documented))
    missing = sorted(
        name for name in needed - set(sys.stdlib_module_names) - {"__future__"}
        if not {d.lower().replace("_", "-") for d in provided_by.get(name, [name])} & installed
    )
    assert missing == [], f"tox -e docs would not install what autodoc imports: {missing}"


def _documented_modules() -> set[str]:
    found: set[str] = set()
    for page in (CHECKOUT / "docs" / "api").glob("*.rst"):
        found |= set(re.findall(r"^\.\. automodule:: (\S+)", page.read_text(encoding="utf-8"), re.M))
    return found


def _with_attribute_docstrings(module: str) -> set[str]:
    """The module-level names of ``module`` assigned with a string right after (what autodoc
    reads as their docstring)."""
    body = ast.parse(inspect.getsource(importlib.import_module(module))).body
    names: set[str] = set()
    for node, after in itertools.pairwise(body):
        if not (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        names |= {target.id for target in targets if isinstance(target, ast.Name)}
    return names


def test_every_exported_name_is_in_the_api_reference() -> None:
    # autodoc (members, not undoc-members) shows a module's names of its __all__ that have a
    # docstring: a class's or function's own, or a string right after a constant's assignment
    imported_from = {
        alias.asname or alias.name: node.module
        for node in ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8")).body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    documented = _documented_modules()
    missing = []
    for name in kinformer.__all__:
        obj = getattr(kinformer, name)
        # a type alias such as dict[str, Any] passes for a class on Python 3.10
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and not isinstance(obj, types.GenericAlias):
            module, has_doc = obj.__module__, bool(inspect.getdoc(obj))
        else:  # a constant or a type alias: documented where it is assigned
            module = imported_from[name]
            has_doc = name in _with_attribute_docstrings(module)
        listed = getattr(importlib.import_module(module), "__all__", None)
        if module not in documented or not has_doc or (listed is not None and name not in listed):
            missing.append(f"{module}.{name}")
    assert missing == [], f"exported but not in docs/api: {missing}"

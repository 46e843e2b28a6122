"""The pytest plugin, as a project that installed kinformer uses it: fixtures in its own pytest run.

Each test writes a small test suite with pytester and runs it in a pytest subprocess, which loads
the plugin through its ``pytest11`` entry point, as any project's run does.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kinformer.testing.pytest_plugin import namespace_name

TESTING_DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"

# the inner session reports what is left of its server once every fixture was torn down
REPORTING_CONFTEST = """
import threading

def pytest_sessionfinish(session):
    alive = sorted(t.name for t in threading.enumerate() if t.name.startswith("kinformer-"))
    print("kinformer threads after the session:", alive or "none")
"""


def test_the_fixtures_give_one_server_a_client_per_test_and_a_namespace_per_test(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(REPORTING_CONFTEST)
    pytester.makepyfile("""
        from kubernetes import client

        from kinformer import GroupVersionResource
        from kinformer.testing import FakeAPIServer

        CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
        NAMESPACES = GroupVersionResource("", "v1", "namespaces")
        seen = []

        def test_first(kube_apiserver, kube_client, kube_namespace):
            assert isinstance(kube_apiserver, FakeAPIServer) and kube_apiserver.running
            assert kube_client.configuration.host == kube_apiserver.url
            client.CoreV1Api(kube_client).create_namespaced_config_map(
                kube_namespace, {"metadata": {"name": "a"}})
            stored = kube_apiserver.list_objects(CONFIGMAPS, kube_namespace)
            assert [c["metadata"]["name"] for c in stored] == ["a"]
            seen.append((kube_apiserver, kube_namespace))

        def test_second(kube_apiserver, kube_namespace):
            server, first_namespace = seen[0]
            assert kube_apiserver is server  # one server for the session
            assert kube_namespace != first_namespace
            names = [n["metadata"]["name"] for n in kube_apiserver.list_objects(NAMESPACES)]
            assert kube_namespace in names and first_namespace not in names  # deleted after its test
            assert kube_apiserver.list_objects(CONFIGMAPS, first_namespace) == []  # with its objects
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*kinformer threads after the session: none*"])


def test_a_run_that_uses_no_fixture_starts_no_server(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import threading

        def test_plain(request):
            assert request.config.pluginmanager.has_plugin("kinformer")
            assert not [t for t in threading.enumerate() if t.name.startswith("kinformer-")]
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_the_example_in_the_testing_guide_passes(pytester: pytest.Pytester) -> None:
    section = TESTING_DOC.read_text().split("## The pytest plugin", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None
    pytester.makepyfile(test_example=match.group(1))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_namespace_names_are_dns_labels_naming_the_test() -> None:
    assert namespace_name("test_reconciles[web-1]", 7) == "test-7-reconciles-web-1"
    long = namespace_name("test_" + "x" * 100, 12)
    assert len(long) == 63 and long.startswith("test-12-xxx")

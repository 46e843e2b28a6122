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


def test_kube_fleet_gives_each_test_three_members_of_its_own_stopped_after_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(REPORTING_CONFTEST)
    pytester.makepyfile("""
        from kubernetes import client

        from kinformer import GroupVersionResource
        from kinformer.testing import FakeAPIServer

        CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
        earlier = []

        def test_first(kube_fleet):
            assert list(kube_fleet) == ["member-1", "member-2", "member-3"]
            assert all(isinstance(s, FakeAPIServer) and s.running for s in kube_fleet.values())
            assert len({s.url for s in kube_fleet.values()}) == 3
            api_client = kube_fleet["member-2"].api_client()
            try:
                client.CoreV1Api(api_client).create_namespaced_config_map(
                    "default", {"metadata": {"name": "only-here"}})
            finally:
                api_client.close()
            found = {name: [c["metadata"]["name"] for c in s.list_objects(CONFIGMAPS)]
                     for name, s in kube_fleet.items()}
            assert found == {"member-1": [], "member-2": ["only-here"], "member-3": []}
            kube_fleet["member-3"].stop()  # a member gone for good: the fixture copes
            earlier.extend(kube_fleet.values())

        def test_second(kube_fleet):
            assert not any(s.running for s in earlier)  # stopped after their test
            assert not set(kube_fleet.values()) & set(earlier)
            assert kube_fleet["member-2"].list_objects(CONFIGMAPS) == []
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


def test_the_examples_in_the_testing_guide_pass(pytester: pytest.Pytester) -> None:
    section = TESTING_DOC.read_text().split("## The pytest plugin", 1)[1].split("\n## ", 1)[0]
    examples = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert len(examples) == 2  # kube_apiserver and its friends; kube_fleet
    pytester.makepyfile(**{f"test_example_{i}": text for i, text in enumerate(examples)})
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_namespace_names_are_dns_labels_naming_the_test() -> None:
    assert namespace_name("test_reconciles[web-1]", 7) == "test-7-reconciles-web-1"
    long = namespace_name("test_" + "x" * 100, 12)
    assert len(long) == 63 and long.startswith("test-12-xxx")

"""Test helpers shipped with kinformer: a fake clock, a Kubernetes API server on loopback."""

from kinformer.testing.apiserver import FakeAPIServer
from kinformer.testing.clock import FakeClock
from kinformer.testing.waiting import wait_for

__all__ = ["FakeAPIServer", "FakeClock", "wait_for"]

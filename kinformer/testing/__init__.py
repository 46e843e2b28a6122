"""Test helpers shipped with kinformer: a Kubernetes API server on loopback, a fake clock, a
scripted ListerWatcher, the hand-fed watch it opens and a recording event handler."""

from kinformer.testing.apiserver import FakeAPIServer
from kinformer.testing.channel_watch import ChannelWatch
from kinformer.testing.clock import FakeClock
from kinformer.testing.recorder import Recorder
from kinformer.testing.scripted_source import ScriptedSource
from kinformer.testing.waiting import wait_for

__all__ = ["ChannelWatch", "FakeAPIServer", "FakeClock", "Recorder", "ScriptedSource", "wait_for"]

"""What every connection of the fake API server shares: storage, credentials, fault switches.

:class:`ServerState` is built by :class:`~kinformer.testing.apiserver.FakeAPIServer`, which sets
its fault switches (injected failures, raw answers, delays, forbidden verbs); each
:class:`~kinformer.testing._apiserver.wire.handler.Handler` reads them once per request and
appends to the bounded request log.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass

from kinformer.testing._apiserver.resources import ResourceType
from kinformer.testing._apiserver.storage import storage as store

REQUEST_LOG_SIZE = 100_000  # requests remembered; a long-running ``kinformer serve`` stays bounded
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


@dataclass
class _Failure:
    count: int
    code: int
    verb: str | None
    resource: str | None
    retry_after: int | None = None  # the 429's Retry-After seconds (None: the server's default)


@dataclass
class _RawAnswer:
    count: int
    body: bytes
    verb: str
    resource: str | None


class ServerState:
    """What every connection shares: storage, credentials, fault switches and the request log.

    Thread-safe; the switches are read once per request under ``lock``.
    """

    def __init__(
        self,
        storage: store.Storage,
        token: str | None,
        bookmark_interval: float,
        feature_gates: dict[str, bool] | None = None,
    ) -> None:
        self.storage = storage
        self.feature_gates = dict(feature_gates or {})  # fixed at construction
        self.token = token.encode() if token is not None else None
        self.bookmark_interval = bookmark_interval
        self.address = "127.0.0.1:0"
        self.stopping = threading.Event()
        self.lock = threading.Lock()  # guards the switches below, and requests
        self.failures: list[_Failure] = []
        self.discovery_failures: list[_Failure] = []  # verb unused; resource: a path, or None
        self.raw_answers: list[_RawAnswer] = []
        self.delays: dict[str | None, float] = {}
        self.forbidden: set[tuple[str, str | None]] = set()
        self.initial_pacing = (0.0, True)  # seconds between initial events; their end bookmark sent
        self.requests: collections.deque[tuple[str, str, dict[str, str], int]] = (
            collections.deque(maxlen=REQUEST_LOG_SIZE))

    def take_failure(self, verb: str, resource: str) -> _Failure | None:
        with self.lock:
            for failure in self.failures:
                if failure.verb not in (None, verb) or failure.resource not in (None, resource):
                    continue
                failure.count -= 1
                if failure.count <= 0:
                    self.failures.remove(failure)
                return failure
        return None

    def take_discovery_failure(self, path: str) -> _Failure | None:
        with self.lock:
            for failure in self.discovery_failures:
                if failure.resource not in (None, path):
                    continue
                failure.count -= 1
                if failure.count <= 0:
                    self.discovery_failures.remove(failure)
                return failure
        return None

    def take_raw_answer(self, verb: str, resource: str) -> bytes | None:
        with self.lock:
            for answer in self.raw_answers:
                if answer.verb != verb or answer.resource not in (None, resource):
                    continue
                answer.count -= 1
                if answer.count <= 0:
                    self.raw_answers.remove(answer)
                return answer.body
        return None

    def pacing(self) -> tuple[float, bool]:
        with self.lock:
            return self.initial_pacing

    def delay_for(self, verb: str) -> float:
        with self.lock:
            return self.delays.get(verb, self.delays.get(None, 0.0))

    def is_forbidden(self, verb: str, rt: ResourceType) -> bool:
        with self.lock:
            return bool({(rt.resource, verb), (rt.resource, None),
                         (rt.group_resource, verb), (rt.group_resource, None)} & self.forbidden)

    def record(self, method: str, path: str, query: dict[str, str], code: int) -> None:
        with self.lock:
            self.requests.append((method, path, query, code))

"""_json: both decoders behave alike, and gc_paused always restores the collector."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator

import pytest

from kinformer import _gc, _json


@pytest.fixture(params=["orjson", "stdlib"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "orjson":
        pytest.importorskip("orjson")
    _json.use_stdlib(request.param == "stdlib")
    yield request.param
    _json.use_stdlib(False)


def test_loads_decodes_bytes_and_str_with_the_selected_backend(backend: str) -> None:
    assert _json.backend() == backend
    assert _json.loads(b'{"a": [1, "x", null]}') == {"a": [1, "x", None]}
    assert _json.loads('{"b": true}') == {"b": True}


def test_malformed_input_raises_value_error(backend: str) -> None:
    with pytest.raises(ValueError):
        _json.loads(b'{"a": ')


def test_dumps_round_trips_unicode(backend: str) -> None:
    obj = {"name": "caf\u00e9", "n": 3}
    assert _json.loads(_json.dumps(obj)) == obj


def test_dumps_to_keep_gives_the_same_json_in_no_more_memory_than_its_length(backend: str) -> None:
    obj = {"metadata": {"name": "x" * 40}, "data": {f"k{i}": "v" * 50 for i in range(100)}}
    _json.dumps_to_keep(obj)  # whatever an encoder makes once and keeps is made before counting
    tracemalloc.start()
    try:
        kept = _json.dumps_to_keep(obj)
        allocated = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert kept == _json.dumps(obj) and type(kept) is bytes
    assert allocated < len(kept) + 200  # the bytes object's header, not an encoder's buffer


def test_gc_paused_disables_the_collector_and_restores_it() -> None:
    assert gc.isenabled()
    with _gc.paused():
        assert not gc.isenabled()
        with _gc.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_gc_paused_restores_the_collector_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), _gc.paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_gc_paused_leaves_a_disabled_collector_disabled() -> None:
    gc.disable()
    try:
        with _gc.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()

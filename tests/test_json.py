"""_json: both decoders behave alike, and gc_paused always restores the collector."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator

import pytest

from kinformer import _gc, _json


@pytest.fixture(params=["orjson", "stdlib"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "orjson":
        pytest.importorskip("orjson")
    monkeypatch.setattr(_json, "_use_orjson", _json._use_orjson)  # put back as it was after
    _json.use_stdlib(request.param == "stdlib")
    yield request.param


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


def big_list(count: int) -> dict[str, object]:
    """A list body of ``count`` items, some of whose strings and nested arrays read like a
    boundary between two items (``},{``)."""
    items: list[dict[str, object]] = [
        {"metadata": {"name": f"cm-{i}", "namespace": "default"}, "data": {"k": "v" * 300}}
        for i in range(count)]
    items[5]["data"] = {"x": '},{"a":1}', "y": "},{"}
    items[count // 2]["spec"] = {"items": [{"a": 1}, {"b": [{"c": "},{"}]}]}
    return {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"},
            "items": items}


def test_loads_bulk_with_a_check_between_chunks_decodes_a_big_list_as_one_decode_does(
    backend: str
) -> None:
    body = big_list(30_000)
    data = _json.dumps(body)
    assert len(data) > 4 * _json.CHUNK_BYTES
    checks: list[int] = []
    assert _json.loads_bulk(data, lambda: checks.append(1)) == body
    assert len(checks) > 4  # one before each chunk: the decoder let go between them


@pytest.mark.parametrize("body", [
    {"items": [{"n": "x" * 300, "i": i} for i in range(30_000)], "kind": "L", "metadata": {}},
    {"metadata": {"items": [{"a": 1}, {"b": 2}]}, "items": [{"i": i, "s": "x" * 300} for i in range(30_000)]},
    {"kind": "L", "items": [], "metadata": {"pad": "},{" * 3_000_000}},
], ids=["items-first", "nested-items-key-first", "no-items"])
def test_loads_bulk_in_chunks_gives_what_one_decode_gives_whatever_the_key_order(
    backend: str, body: dict[str, object]
) -> None:
    data = _json.dumps(body)
    assert _json.loads_bulk(data, lambda: None) == _json.loads(data)


def test_a_check_that_raises_breaks_off_a_big_decode(backend: str) -> None:
    data = _json.dumps(big_list(30_000))
    calls: list[int] = []

    def stop_at_the_third() -> None:
        calls.append(1)
        if len(calls) == 3:
            raise ConnectionError("stopped")

    with pytest.raises(ConnectionError, match="stopped"):
        _json.loads_bulk(data, stop_at_the_third)
    assert len(calls) == 3


def test_a_truncated_big_list_is_still_a_value_error(backend: str) -> None:
    data = _json.dumps(big_list(30_000))
    with pytest.raises(ValueError):
        _json.loads_bulk(data[:-3], lambda: None)


def test_a_list_stopped_before_its_decode_is_not_decoded_nor_its_hook_called(backend: str) -> None:
    hooked: list[int] = []

    def stopped() -> None:
        raise ConnectionError("stopped")

    with _json.before_bulk_decodes(lambda: hooked.append(1)), pytest.raises(ConnectionError):
        _json.loads_bulk(b'{"items": []}', stopped)
    assert hooked == []  # the informer's collector pause (and its collection) never began


def test_exiting_keeps_the_collector_off_through_pauses_and_stopped_informers() -> None:
    # in a child process: exiting() is for good, as the process it is called in ends next
    import subprocess
    import sys
    script = """if True:
        import gc
        from kinformer import _gc
        gc.enable()
        _gc.pause()
        _gc.freeze()
        _gc.resume()
        _gc.exiting()
        class Cache:
            pass
        cache = Cache()
        _gc.informer_stopped(cache)
        _gc.pause()
        _gc.resume()
        assert not gc.isenabled()
        assert gc.get_freeze_count() > 0, "given back to the collector"
        print("ok")
    """
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "ok", result.stderr

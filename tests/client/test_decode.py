from __future__ import annotations

import gc
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, TypedDict

import msgspec
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcontrol._gc import SETTLE_MIN_OBJECTS, gc_paused, set_gc_freeze_after_sync
from kcontrol.client import FieldsV1
from kcontrol.client import _decode as _decode_module
from kcontrol.client._decode import (
    GC_PAUSE_THRESHOLD,
    MAX_FALSE_ENDS,
    ItemHook,
    LineSplitter,
    ListDecoder,
    decode_json,
    decode_list,
    encode_json,
    list_items_decoded_by,
)
from kcontrol.client._watch import parse_event
from kcontrol.errors import ApiConnectionError, Gone, InternalError, TooManyRequests


@pytest.mark.parametrize(
    ("chunks", "lines", "tail"),
    [
        pytest.param([b'{"a":1}\n'], [b'{"a":1}'], None, id="one-line"),
        pytest.param([b"a\nb\n"], [b"a", b"b"], None, id="two-lines-one-chunk"),
        pytest.param([b"ab", b"c\nd", b"e\n"], [b"abc", b"de"], None, id="split-lines"),
        pytest.param([b"a\n\n\r\n", b"b\n"], [b"a", b"b"], None, id="blank-lines-skipped"),
        pytest.param([b"a\nbc"], [b"a"], b"bc", id="unterminated-tail"),
        pytest.param([b"\n", b"x", b"", b"y"], [], b"xy", id="empty-chunk"),
    ],
)
def test_line_splitter(chunks: list[bytes], lines: list[bytes], tail: bytes | None) -> None:
    splitter = LineSplitter()
    got: list[bytes] = []
    for chunk in chunks:
        got.extend(splitter.feed(chunk))
    assert got == lines
    assert splitter.flush() == tail


def test_line_splitter_has_no_length_limit() -> None:
    big = b"x" * (1 << 20)
    splitter = LineSplitter()
    out: list[bytes] = []
    for i in range(0, len(big), 1000):
        out.extend(splitter.feed(big[i : i + 1000]))
    assert out == []
    assert splitter.pending() == len(big)
    assert splitter.feed(b"\n") == [big]


@pytest.mark.parametrize("size", [10, GC_PAUSE_THRESHOLD + 10], ids=["small", "large"])
def test_decode_json_restores_gc(size: int) -> None:
    doc = {"items": [{"name": "x" * 50}] * (size // 60 + 1)}
    data = orjson.dumps(doc)
    assert gc.isenabled()
    assert decode_json(data) == doc
    assert gc.isenabled()


def test_decode_json_keeps_gc_disabled_if_it_was() -> None:
    gc.disable()
    try:
        decode_json(orjson.dumps({"a": "b" * GC_PAUSE_THRESHOLD}))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_gc_paused_is_reentrant_across_overlapping_users() -> None:
    first, second = gc_paused(), gc_paused()
    first.__enter__()
    assert not gc.isenabled()
    second.__enter__()
    first.__exit__(None, None, None)  # not nested: the first user leaves before the second
    assert not gc.isenabled(), "one user leaving must not re-enable the GC under another"
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_gc_paused_leaves_a_disabled_gc_disabled() -> None:
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_settling_pause_ends_with_one_full_collection(monkeypatch: pytest.MonkeyPatch) -> None:
    passes: list[str] = []
    monkeypatch.setattr(gc, "collect", lambda *a: passes.append("collect") or 0)
    monkeypatch.setattr(gc, "freeze", lambda: passes.append("freeze"))
    monkeypatch.setattr(gc, "get_count", lambda: (SETTLE_MIN_OBJECTS, 0, 0))
    with gc_paused():
        pass
    assert passes == [], "a plain pause (a decode) leaves the collector to its heuristics"
    outer = gc_paused()
    outer.__enter__()
    with gc_paused(settle=True):
        pass
    assert passes == [], "nothing happens while another user still holds the pause"
    outer.__exit__(None, None, None)
    assert passes == ["collect"]
    assert gc.isenabled()


def test_settling_pause_skips_the_collection_after_few_new_objects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    passes: list[str] = []
    monkeypatch.setattr(gc, "collect", lambda *a: passes.append("collect") or 0)
    monkeypatch.setattr(gc, "get_count", lambda: (SETTLE_MIN_OBJECTS - 1, 0, 0))
    with gc_paused(settle=True):
        pass
    assert passes == [], "a small relist must not walk a big heap"
    assert gc.isenabled()


def test_settling_pause_counts_real_allocations() -> None:
    before = gc.get_freeze_count()
    with gc_paused(settle=True):
        keep = [[i] for i in range(SETTLE_MIN_OBJECTS)]
        assert gc.get_count()[0] >= SETTLE_MIN_OBJECTS, "the trigger reads real gen0 counts"
    assert gc.get_count()[0] < 1000, "the full collection ran and emptied the young generation"
    assert gc.get_freeze_count() == before
    del keep


def test_settling_pause_freezes_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    passes: list[str] = []
    monkeypatch.setattr(gc, "collect", lambda *a: passes.append("collect") or 0)
    monkeypatch.setattr(gc, "freeze", lambda: passes.append("freeze"))
    previous = set_gc_freeze_after_sync(True)
    try:
        with gc_paused(settle=True):
            pass
        with pytest.raises(RuntimeError), gc_paused(settle=True):
            raise RuntimeError("the list failed")
    finally:
        assert set_gc_freeze_after_sync(previous) is True
    assert passes == ["freeze"], "a failed block has nothing to settle"
    assert gc.isenabled()


LIST_DOC = {
    "kind": "PodList",
    "apiVersion": "v1",
    "metadata": {"resourceVersion": "42", "continue": "tok"},
    "items": [
        {"metadata": {"name": "a", "managedFields": [{"manager": "m"}]}, "spec": {"x": [1, 2.5]}},
        {"metadata": {"name": "b"}, "status": {"phase": "Pending", "ok": True, "none": None}},
    ],
}


def test_decode_list_matches_decode_json_and_hooks_every_item() -> None:
    seen: list[str] = []
    gc_states: list[bool] = []

    def hook(item: dict[str, object]) -> dict[str, object]:
        seen.append(item["metadata"]["name"])  # type: ignore[index]
        gc_states.append(gc.isenabled())
        return {**item, "hooked": True}

    result = decode_list(orjson.dumps(LIST_DOC), hook)
    expected = {**LIST_DOC, "items": [{**i, "hooked": True} for i in LIST_DOC["items"]]}  # type: ignore[attr-defined]
    assert result == expected
    assert seen == ["a", "b"]
    assert gc_states == [False, False]
    assert gc.isenabled()


@pytest.mark.parametrize(
    ("body", "shape"),
    [
        pytest.param(b'{"items": null, "metadata": {"resourceVersion": "1"}}', [], id="null"),
        pytest.param(b'{"metadata": {"resourceVersion": "1"}}', [], id="missing"),
    ],
)
def test_decode_list_without_items(body: bytes, shape: list[object]) -> None:
    assert decode_list(body, lambda i: i) == {"metadata": {"resourceVersion": "1"}, "items": shape}


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"<html>", id="not-json"),
        pytest.param(b"[1, 2]", id="not-an-object"),
        pytest.param(b'{"items": {"a": 1}}', id="items-not-a-list"),
        pytest.param(b'{"items": [1]}', id="item-not-an-object"),
        pytest.param(b'{"items": [{"a": }]}', id="broken-item"),
    ],
)
def test_decode_list_rejects_what_is_not_a_list(body: bytes) -> None:
    with pytest.raises(ValueError):
        decode_list(body, lambda i: i)
    assert gc.isenabled()


def test_encode_json_accepts_mappings_and_datetimes() -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    naive = datetime(2026, 1, 2, 3, 4, 5)
    body = {"meta": MappingProxyType({"a": 1}), "t": when, "n": naive, "tags": ("x",)}
    assert orjson.loads(encode_json(body)) == {
        "meta": {"a": 1},
        "t": "2026-01-02T03:04:05.123456Z",
        "n": "2026-01-02T03:04:05Z",
        "tags": ["x"],
    }
    with pytest.raises(TypeError):
        encode_json({"x": object()})


def test_parse_event_ok() -> None:
    ev = parse_event(b'{"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"a"}}}')
    assert ev.type == "MODIFIED"
    assert ev.object == {"kind": "Pod", "metadata": {"name": "a"}}


@pytest.mark.parametrize(
    ("status", "error"),
    [
        pytest.param(
            {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"},
            Gone,
            id="410-expired",
        ),
        pytest.param({"kind": "Status", "code": 410, "reason": "Gone"}, Gone, id="410-gone"),
        pytest.param({"kind": "Status", "code": 429}, TooManyRequests, id="429"),
        pytest.param({"kind": "Status"}, InternalError, id="no-code"),
    ],
)
def test_parse_event_error_frames(status: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        parse_event(orjson.dumps({"type": "ERROR", "object": status}))


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(b'{"type":"ADDED","obj', id="truncated"),
        pytest.param(b"[1,2]", id="not-an-object"),
        pytest.param(b'{"type":"SPLIT","object":{}}', id="unknown-type"),
        pytest.param(b'{"type":"ADDED","object":"x"}', id="object-not-a-dict"),
    ],
)
def test_parse_event_rejects_garbage(line: bytes) -> None:
    with pytest.raises(ApiConnectionError):
        parse_event(line)


# -- ListDecoder: the same result as decode_list, fed in pieces ---------------------------------


def _pod(name: str) -> dict[str, object]:
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "managedFields": [
                {"manager": "m", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}},
            ],
        },
        "spec": {"containers": [{"name": "a", "ports": [{"port": 1}, {"port": 2}]}]},
        "status": {"phase": "Running", "nested": {"x": '},{"metadata":'}},
    }


def _stateful_set(name: str) -> dict[str, object]:
    # Two volumeClaimTemplates: '},{"metadata":' closes the first inside the item.
    return {
        "metadata": {"name": name},
        "spec": {
            "volumeClaimTemplates": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]
        },
    }


def _custom(name: str) -> dict[str, object]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}}


BODIES = {
    "pods": orjson.dumps(
        {
            "kind": "PodList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "7"},
            "items": [_pod(f"p{i}") for i in range(30)],
        }
    ),
    "statefulsets": orjson.dumps(
        {
            "kind": "StatefulSetList",
            "apiVersion": "apps/v1",
            "metadata": {"resourceVersion": "8", "continue": "abc"},
            "items": [_stateful_set(f"s{i}") for i in range(5)],
        }
    ),
    # keys sorted, as the API server writes unstructured lists: items before kind and metadata
    "custom": orjson.dumps(
        {
            "apiVersion": "example.com/v1",
            "items": [_custom(f"w{i}") for i in range(7)],
            "kind": "WidgetList",
            "metadata": {"resourceVersion": "9"},
        }
    ),
    "empty": b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}',
    "null": b'{"items": null, "metadata": {"resourceVersion": "1"}}',
    "pretty": orjson.dumps(
        {"metadata": {"resourceVersion": "2"}, "items": [_pod("a"), _pod("b")]},
        option=orjson.OPT_INDENT_2,
    ),
}


def _fed(body: bytes, cuts: list[int], hook: ItemHook) -> dict[str, object]:
    decoder = ListDecoder(hook)
    start = 0
    for cut in sorted(cuts):
        decoder.feed(body[start:cut])
        start = cut
    decoder.feed(body[start:])
    assert decoder.fed == len(body)
    return decoder.finish()


@pytest.mark.parametrize("name", sorted(BODIES))
@given(data=st.data())
@settings(max_examples=60, deadline=None)
def test_list_decoder_fed_in_any_pieces_equals_decode_list(name: str, data: st.DataObject) -> None:
    body = BODIES[name]
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=12))
    seen: list[object] = []

    def hook(item: dict[str, Any]) -> dict[str, Any]:
        seen.append(item.get("metadata"))
        return {**item, "hooked": True}

    expected = decode_list(body, lambda item: {**item, "hooked": True})
    assert _fed(body, cuts, hook) == expected
    assert len(seen) == len(expected["items"]), "each item hooked once"
    assert gc.isenabled()


def test_list_decoder_decodes_items_before_the_body_ends() -> None:
    body = BODIES["pods"]
    decoder = ListDecoder(lambda item: item)
    decoder.feed(body[: len(body) // 2])
    decoded = len(decoder._items)
    assert 10 <= decoded < 15, "the complete items of the first half are decoded already"
    decoder.feed(body[len(body) // 2 :])
    result = decoder.finish()
    assert [i["metadata"]["name"] for i in result["items"]] == [f"p{i}" for i in range(30)]
    assert isinstance(result["items"][0]["metadata"]["managedFields"][0]["fieldsV1"], FieldsV1)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"<html>", id="not-json"),
        pytest.param(b'{"items":[{"a":1},{"a":2},1]}', id="item-not-an-object"),
        pytest.param(b'{"items":[{"a":1},{"a": }]}', id="broken-item"),
        pytest.param(b'{"items":[{"a":1},{"a":2}', id="cut-short"),
    ],
)
def test_list_decoder_rejects_what_is_not_a_list(body: bytes) -> None:
    decoder = ListDecoder(lambda i: i)
    with pytest.raises(ValueError):
        for byte in range(len(body)):
            decoder.feed(body[byte : byte + 1])
        decoder.finish()
    assert gc.isenabled()


def test_list_decoder_gives_up_streaming_an_item_full_of_false_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Custom resources (sorted keys: every item starts with "apiVersion") each embedding 200
    # manifests that start with "apiVersion" too: '},{"apiVersion":' inside every item.
    manifests = [{"apiVersion": "v1", "kind": "ConfigMap", "n": i} for i in range(200)]
    body = orjson.dumps(
        {
            "apiVersion": "example.com/v1",
            "items": [
                {"apiVersion": "example.com/v1", "kind": "Bundle", "spec": {"m": manifests}}
                for _ in range(5)
            ],
            "kind": "BundleList",
            "metadata": {"resourceVersion": "3"},
        }
    )
    attempts = 0
    real = _decode_module.decode_keeping_fields

    def counting(data: bytes) -> Any:
        nonlocal attempts
        attempts += 1
        return real(data)

    monkeypatch.setattr(_decode_module, "decode_keeping_fields", counting)
    decoder = ListDecoder(lambda i: i)
    for start in range(0, len(body), 4096):
        decoder.feed(body[start : start + 4096])
    result = decoder.finish()
    # MAX_FALSE_ENDS tries in the first item, then finish() decodes the five items once each
    assert attempts == MAX_FALSE_ENDS + 5, "bounded: not one attempt per nested manifest"
    assert result == decode_list(body, lambda i: i)


class _NameOnly(TypedDict, total=False):
    name: str


class _ItemNameOnly(TypedDict, total=False):
    metadata: _NameOnly


_NAME_ONLY = msgspec.json.Decoder(_ItemNameOnly)


@pytest.mark.parametrize("name", sorted(BODIES))
@given(data=st.data())
@settings(max_examples=30, deadline=None)
def test_list_items_decoded_by_a_narrow_decoder_in_any_pieces(
    name: str, data: st.DataObject
) -> None:
    # A decoder that builds only metadata.name, raising msgspec's DecodeError (a ValueError)
    # on a false end: the streaming decoder still finds every item end, and the list's own
    # fields are decoded as always.
    body = BODIES[name]
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=12))
    with list_items_decoded_by(_NAME_ONLY.decode):
        fed = _fed(body, cuts, lambda item: item)
        whole = decode_list(body, lambda item: item)
    assert fed == whole
    expected = decode_list(body, lambda item: item)
    assert fed["metadata"] == expected["metadata"]
    assert fed["items"] == [
        {"metadata": {"name": i["metadata"]["name"]}} for i in expected["items"]
    ]


def test_list_items_decoded_by_leaves_other_bodies_and_later_lists_alone() -> None:
    body = BODIES["pods"]
    with list_items_decoded_by(_NAME_ONLY.decode):
        assert decode_json(b'{"metadata": {"name": "a", "uid": "u"}}')["metadata"]["uid"] == "u"
        inside = decode_list(body, lambda item: item)["items"][0]["metadata"]
    assert inside == {"name": "p0"}
    outside = decode_list(body, lambda item: item)["items"][0]["metadata"]
    assert outside["namespace"] == "default", "after the block, items decode whole again"

"""managedFields' fieldsV1 kept raw (kcontrol.client._fields) through every decode path."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcontrol.client import FieldsV1, encode_json
from kcontrol.client._decode import decode_json, decode_list
from kcontrol.client._fields import field_sets_dropped
from kcontrol.client._watch import parse_event

SET_A = {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:data": {'k:{"x":1}': {}}}
SET_B = {"f:spec": {"f:replicas": {}}}


def managed(*field_sets: Any) -> list[dict[str, Any]]:
    return [
        {
            "manager": f"m{i}",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-11-23T10:00:00Z",
            "fieldsType": "FieldsV1",
            **({"fieldsV1": fields} if fields is not ... else {}),
        }
        for i, fields in enumerate(field_sets)
    ]


def obj(*field_sets: Any, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"app": "x"}, "managedFields": managed(*field_sets)},
        "data": {"x": "1"},
        **extra,
    }


def field_sets(decoded: dict[str, Any]) -> list[Any]:
    return [entry.get("fieldsV1") for entry in decoded["metadata"]["managedFields"]]


def test_field_sets_stay_raw_and_everything_else_is_decoded() -> None:
    source = obj(SET_A, SET_B)
    decoded = decode_json(orjson.dumps(source))
    sets = field_sets(decoded)
    assert all(type(s) is FieldsV1 for s in sets)
    assert [s.to_dict() for s in sets] == [SET_A, SET_B]
    assert sets[0] == orjson.dumps(SET_A), "the exact bytes the server sent"
    expected = copy.deepcopy(source)
    for entry in expected["metadata"]["managedFields"]:
        entry.pop("fieldsV1")
    for entry in decoded["metadata"]["managedFields"]:
        entry.pop("fieldsV1")
    assert decoded == expected


def test_round_trip_through_encode_json_is_lossless() -> None:
    body = orjson.dumps(obj(SET_A, SET_B))
    decoded = decode_json(body)
    assert encode_json(decoded) == body
    assert orjson.loads(encode_json({"wrapped": decoded})) == {"wrapped": orjson.loads(body)}


def test_fields_v1_copies_pickles_and_compares_as_bytes() -> None:
    decoded = decode_json(orjson.dumps(obj(SET_A)))
    copied = copy.deepcopy(decoded)
    assert copied == decoded
    assert type(field_sets(copied)[0]) is FieldsV1
    restored = pickle.loads(pickle.dumps(decoded))
    assert restored == decoded and type(field_sets(restored)[0]) is FieldsV1
    assert repr(field_sets(decoded)[0]).startswith("FieldsV1(b'{")


@pytest.mark.parametrize(
    ("sets", "expected_types"),
    [
        pytest.param((None, SET_A), [type(None), FieldsV1], id="null-field-set"),
        pytest.param((..., SET_B), [type(None), FieldsV1], id="entry-without-field-set"),
        pytest.param(({},), [FieldsV1], id="empty-field-set"),
    ],
)
def test_entries_without_an_object_field_set_decode_as_usual(
    sets: tuple[Any, ...], expected_types: list[type]
) -> None:
    source = obj(*sets)
    decoded = decode_json(orjson.dumps(source))
    assert [type(s) for s in field_sets(decoded)] == expected_types
    assert orjson.loads(encode_json(decoded)) == source


def test_an_identical_object_earlier_in_the_document_is_left_alone() -> None:
    source = {"aaa": SET_A, **obj(SET_A)}
    body = orjson.dumps(source)
    assert body.index(orjson.dumps(SET_A)) < body.index(b'"metadata"')
    decoded = decode_json(body)
    assert decoded["aaa"] == SET_A and type(decoded["aaa"]) is dict
    assert field_sets(decoded) == [orjson.dumps(SET_A)]
    assert type(field_sets(decoded)[0]) is FieldsV1
    assert orjson.loads(encode_json(decoded)) == source


def test_an_identical_fields_v1_key_earlier_falls_back_to_a_plain_decode() -> None:
    # The splice cuts the first "fieldsV1" it finds; the real one is then still an object.
    source = {"aaa": {"fieldsV1": SET_A}, **obj(SET_A)}
    body = orjson.dumps(source)
    assert body.index(b'"fieldsV1"') < body.index(b'"metadata"')
    decoded = decode_json(body)
    assert decoded == source, "nothing lost or misplaced; fieldsV1 decoded normally"
    assert type(field_sets(decoded)[0]) is dict


@pytest.mark.parametrize(
    "source",
    [
        pytest.param({"metadata": "not an object", "fieldsV1": {}}, id="metadata-not-object"),
        pytest.param({"metadata": {"managedFields": {"fieldsV1": {}}}}, id="not-a-list"),
        pytest.param({"metadata": {"managedFields": ["x", {"fieldsV1": {}}]}}, id="odd-entry"),
        pytest.param([{"metadata": {"managedFields": [{"fieldsV1": {}}]}}], id="top-level-list"),
    ],
)
def test_unexpected_shapes_decode_plainly(source: Any) -> None:
    assert decode_json(orjson.dumps(source)) == source


def test_invalid_json_still_raises() -> None:
    with pytest.raises(orjson.JSONDecodeError):
        decode_json(b'{"metadata":{"managedFields":[{"fieldsV1":{"f:a":{}}}]}')


def test_list_items_and_watch_objects_keep_field_sets_raw() -> None:
    body = orjson.dumps({"kind": "ConfigMapList", "metadata": {}, "items": [obj(SET_A), obj()]})
    listed = decode_list(body, lambda item: item)
    assert type(field_sets(listed["items"][0])[0]) is FieldsV1
    assert field_sets(listed["items"][1]) == []
    event = parse_event(orjson.dumps({"type": "MODIFIED", "object": obj(SET_B)}))
    assert event.type == "MODIFIED"
    assert field_sets(event.object) == [orjson.dumps(SET_B)]
    assert type(field_sets(event.object)[0]) is FieldsV1


def test_where_field_sets_are_dropped_everything_decodes_plainly() -> None:
    """Inside field_sets_dropped() (a reflector whose transform drops managedFields) objects,
    list items and watch objects decode as orjson.loads would; the block's end restores."""
    source = obj(SET_A)
    body = orjson.dumps({"kind": "ConfigMapList", "metadata": {}, "items": [source]})
    frame = orjson.dumps({"type": "ADDED", "object": source})
    with field_sets_dropped():
        assert decode_json(orjson.dumps(source)) == source
        assert type(field_sets(decode_json(orjson.dumps(source)))[0]) is dict
        assert type(field_sets(decode_list(body, lambda item: item)["items"][0])[0]) is dict
        assert type(field_sets(parse_event(frame).object)[0]) is dict
    assert type(field_sets(decode_json(orjson.dumps(source)))[0]) is FieldsV1
    assert type(field_sets(parse_event(frame).object)[0]) is FieldsV1


def test_indented_json_is_spliced_too() -> None:
    source = obj(SET_A, SET_B)
    decoded = decode_json(orjson.dumps(source, option=orjson.OPT_INDENT_2))
    assert [type(s) for s in field_sets(decoded)] == [FieldsV1, FieldsV1]
    assert [s.to_dict() for s in field_sets(decoded)] == [SET_A, SET_B]
    assert orjson.loads(encode_json(decoded)) == source


def _plain(value: Any) -> Any:
    """``value`` with every FieldsV1 decoded: what orjson.loads alone would give."""
    if isinstance(value, FieldsV1):
        return value.to_dict()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
_field_set = st.dictionaries(st.text(max_size=6), _json, max_size=3)
_entry = st.fixed_dictionaries(
    {},
    optional={
        "manager": st.text(max_size=6),
        "fieldsV1": _field_set | _json,
        'k:{"x":1}': _json,
        "time": _json,
    },
)
_document = st.fixed_dictionaries(
    {
        "metadata": st.fixed_dictionaries(
            {}, optional={"managedFields": st.lists(_entry, max_size=3)}
        )
    },
    optional={"spec": _json, "fieldsV1": _json, "a": st.fixed_dictionaries({"fieldsV1": _json})},
)


@settings(max_examples=300)
@given(document=_document, indent=st.booleans(), as_event=st.booleans())
def test_any_document_decodes_to_what_orjson_gives(
    document: dict[str, Any], indent: bool, as_event: bool
) -> None:
    payload: Any = {"type": "ADDED", "object": document} if as_event else document
    body = orjson.dumps(payload, option=orjson.OPT_INDENT_2 if indent else 0)
    decoded = parse_event(body).object if as_event else decode_json(body)
    assert _plain(decoded) == document
    assert orjson.loads(encode_json(decoded)) == document
    for entry in decoded["metadata"].get("managedFields", []):
        if isinstance(entry, dict) and isinstance(entry.get("fieldsV1"), FieldsV1):
            assert entry["fieldsV1"].to_dict() == _plain(entry["fieldsV1"])

"""deep_copy: copy.deepcopy's answer for decoded objects, without its machinery."""

from __future__ import annotations

import copy
import datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kcontrol.client import FieldsV1, deep_copy, encode_json
from kcontrol.client._fields import decode_keeping_fields

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=30,
)


@given(_JSON)
def test_equal_to_deepcopy(value: Any) -> None:
    assert deep_copy(value) == copy.deepcopy(value)


def _deployment() -> dict[str, Any]:
    body = {
        "metadata": {
            "name": "d",
            "labels": {"app": "d"},
            "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {"f:replicas": {}}}}],
        },
        "spec": {"template": {"spec": {"containers": [{"name": "app", "args": ["a", "b"]}]}}},
        "status": {"conditions": [{"type": "Available", "status": "True"}]},
    }
    decoded: dict[str, Any] = decode_keeping_fields(encode_json(body))
    return decoded


def test_the_copy_shares_no_container_with_the_original() -> None:
    original = _deployment()
    duplicate = deep_copy(original)
    assert duplicate == original
    duplicate["metadata"]["labels"]["app"] = "changed"
    duplicate["spec"]["template"]["spec"]["containers"][0]["args"].append("c")
    duplicate["status"]["conditions"][0]["status"] = "False"
    assert original == _deployment()


def test_immutable_leaves_are_shared() -> None:
    original = _deployment()
    fields = original["metadata"]["managedFields"][0]["fieldsV1"]
    assert isinstance(fields, FieldsV1)
    assert deep_copy(original)["metadata"]["managedFields"][0]["fieldsV1"] is fields


def test_other_values_go_through_deepcopy() -> None:
    when = datetime.datetime(2026, 11, 27)
    nested = {"a": [{"b": {1, 2}}], "when": when}
    duplicate = deep_copy(nested)
    assert duplicate == nested
    assert duplicate["a"][0]["b"] is not nested["a"][0]["b"]
    assert deep_copy([1, [2]]) == [1, [2]]
    assert deep_copy("text") == "text"

"""Revision names and hashes: FNV-1 reference vectors, values pinned against Go's
``HashControllerRevision`` (computed with Go's hash/fnv and encoding/json), and the name
prefix limit of upstream's ControllerRevisionName."""

from __future__ import annotations

import orjson
import pytest

from kcontrol_controllers.hashing import canonical_json, fnv32, fnv32a, go_json
from kcontrol_controllers.history import (
    controller_revision_name,
    hash_controller_revision,
)

STS_PATCH = (
    '{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},'
    '"spec":{"containers":[{"name":"nginx","image":"nginx:1.27"}],'
    '"terminationGracePeriodSeconds":30}}}}'
)
"""What the StatefulSet controller stores: a patch replacing the template."""


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(b"", 0x811C9DC5, id="empty is the offset basis"),
        pytest.param(b"a", 0x050C5D7E, id="a"),
        pytest.param(b"foobar", 0x31F0B262, id="foobar"),
    ],
)
def test_fnv32_is_fnv1(data: bytes, expected: int) -> None:
    assert fnv32(data) == expected


def test_fnv1_and_fnv1a_differ() -> None:
    # The ControllerRevision hash is FNV-1 (Go's fnv.New32), the pod-template-hash FNV-1a.
    assert fnv32(b"foobar") != fnv32a(b"foobar")


def test_fnv32_seed_continues_a_hash() -> None:
    assert fnv32(b"bar", seed=fnv32(b"foo")) == fnv32(b"foobar")


@pytest.mark.parametrize(
    ("data_json", "probe", "expected"),
    [
        pytest.param("{}", None, "5894b84845", id="empty object, no probe"),
        pytest.param("{}", 0, "cccc864bc", id="empty object, probe 0"),
        pytest.param("{}", 1, "cccc864bb", id="empty object, probe 1"),
        pytest.param("{}", -1, "7df4859cc5", id="empty object, probe -1"),
        pytest.param(STS_PATCH, None, "54cd99fb5c", id="statefulset patch, no probe"),
        pytest.param(STS_PATCH, 0, "74764dfb79", id="statefulset patch, probe 0"),
        pytest.param(STS_PATCH, 1, "74764dfb78", id="statefulset patch, probe 1"),
        pytest.param(STS_PATCH, -1, "7645b4f575", id="statefulset patch, probe -1"),
    ],
)
def test_hash_matches_kube_controller_manager(
    data_json: str, probe: int | None, expected: str
) -> None:
    # Expected values from Go: json.Marshal of the decoded value, then upstream's hash.
    revision = {"data": orjson.loads(data_json)}
    assert hash_controller_revision(revision, probe) == expected


def test_hash_of_html_characters_is_go_s() -> None:
    # Go writes "a\u003cb\u0026c" and hashes to 86dbf8f595 (the canonical JSON keeps the
    # characters, and hashed to 8545d75dd9 before Go's escapes were applied).
    revision = {"data": {"spec": {"template": {"metadata": {"annotations": {"note": "a<b&c"}}}}}}
    assert b"a<b&c" in canonical_json(revision["data"])
    assert hash_controller_revision(revision, None) == "86dbf8f595"


# What Go 1.26's json.Marshal writes for the same value decoded into an interface{}
# (checked with a Go program): HTML characters and the JS line separators escaped, short
# escapes for \b and \f, DEL and other non-ASCII characters as UTF-8.
GO_ENCODED = (
    b'{"a":"x\\u003cy\\u003e\\u0026z\\u2028\\u2029\xc3\xa9\\b\\f\\u0001\x7f\\"\\\\/",'
    b'"b":1,"c":[100,12345678,-3]}'
)


def test_go_json_writes_go_s_bytes() -> None:
    value = {
        "b": 1,
        "a": 'x<y>&z\u2028\u2029\u00e9\b\f\u0001\u007f"\\/',
        "c": [100, 12345678, -3],
    }
    assert go_json(value) == GO_ENCODED
    assert orjson.loads(go_json(value)) == value


def test_revision_without_data_hashes_no_bytes() -> None:
    assert hash_controller_revision({}, None) == "65bb57b6b5"  # Go: fnv.New32() of nothing
    assert hash_controller_revision({}, None) != hash_controller_revision({"data": {}}, None)


def test_hash_changes_with_probe() -> None:
    revision = {"data": orjson.loads(STS_PATCH)}
    hashes = {hash_controller_revision(revision, probe) for probe in (None, 0, 1, 2, 10, 11)}
    assert len(hashes) == 6


def test_hash_ignores_key_order_and_other_fields() -> None:
    one = {"data": orjson.loads('{"b": 1, "a": {"y": [1, 2], "x": "s"}}'), "revision": 1}
    other = {
        "metadata": {"name": "other", "labels": {"x": "y"}},
        "data": orjson.loads('{"a": {"x": "s", "y": [1, 2]}, "b": 1}'),
        "revision": 7,
    }
    assert hash_controller_revision(one, 3) == hash_controller_revision(other, 3)


def test_hash_sees_list_order() -> None:
    assert hash_controller_revision({"data": [1, 2]}, None) != hash_controller_revision(
        {"data": [2, 1]}, None
    )


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        pytest.param("web", "web-abc", id="short prefix kept"),
        pytest.param("p" * 223, "p" * 223 + "-abc", id="223 characters kept"),
        pytest.param("p" * 224, "p" * 223 + "-abc", id="224 characters cut to 223"),
        pytest.param("q" * 300, "q" * 223 + "-abc", id="300 characters cut to 223"),
    ],
)
def test_controller_revision_name(prefix: str, expected: str) -> None:
    assert controller_revision_name(prefix, "abc") == expected

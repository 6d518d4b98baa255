"""Keyed checksums over canonical data, and the Secret transform."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from kcontrol.errors import OptionsError
from kcontrol_controllers.configrestart import CHECKSUM_FIELD, HmacKey
from kcontrol_controllers.configrestart._checksums import LAST_APPLIED_ANNOTATION, canonical_data

KEY = HmacKey(b"0123456789abcdef0123456789abcdef")
OTHER = HmacKey(b"fedcba9876543210fedcba9876543210")


def test_checksum_is_over_data_not_order_or_metadata() -> None:
    one = {"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"a": "1", "b": "2"}}
    two = {"metadata": {"name": "a", "resourceVersion": "9"}, "data": {"b": "2", "a": "1"}}
    assert KEY.configmap_checksum(one) == KEY.configmap_checksum(two)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ({"data": {"a": "1"}}, {"data": {"a": "2"}}),
        ({"data": {"a": "1"}}, {"data": {"a": "1"}, "binaryData": {"b": "AA=="}}),
        ({"binaryData": {"b": "AA=="}}, {"binaryData": {"b": "AQ=="}}),
        ({"data": {"a": "1"}}, {"binaryData": {"a": "1"}}),
    ],
    ids=["value", "binaryData added", "binaryData value", "data vs binaryData"],
)
def test_checksum_sees_data_and_binary_data(
    left: dict[str, object], right: dict[str, object]
) -> None:
    assert KEY.configmap_checksum(left) != KEY.configmap_checksum(right)


def test_missing_and_empty_data_are_the_same() -> None:
    assert KEY.configmap_checksum({}) == KEY.configmap_checksum({"data": {}, "binaryData": {}})


def test_checksum_is_keyed_and_kind_separated() -> None:
    data = {"password": base64.b64encode(b"hunter2").decode()}
    mine = KEY.checksum("secret", data)
    assert mine != OTHER.checksum("secret", data)
    assert mine != KEY.checksum("configmap", data)
    bare = hashlib.sha256(canonical_data("secret", data, None)).hexdigest()
    assert bare[:32] not in mine


def test_format_and_ownership() -> None:
    value = KEY.checksum("configmap", {"a": "1"})
    prefix, key_id, mac = value.split(":")
    assert prefix == "hmac-sha256"
    assert key_id == KEY.key_id and len(key_id) == 8
    assert len(mac) == 32
    assert KEY.is_own(value)
    assert not OTHER.is_own(value)
    assert not KEY.is_own("189832cc316e7594")  # xing's format
    assert not KEY.is_own(None)


def test_key_is_never_shown() -> None:
    assert "0123456789abcdef" not in repr(KEY)


@pytest.mark.parametrize("raw", [b"", b"short", b"  fifteen-bytes \n"], ids=["empty", "5", "15"])
def test_short_keys_are_refused(raw: bytes) -> None:
    with pytest.raises(OptionsError, match="at least 16 bytes"):
        HmacKey(raw)


def test_key_file(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_bytes(b"0123456789abcdef0123456789abcdef\n")
    assert HmacKey.from_file(str(path)).key_id == KEY.key_id  # trailing newline ignored
    with pytest.raises(OptionsError, match="--configrestart-hmac-key-file is required"):
        HmacKey.from_file("")
    with pytest.raises(OptionsError, match=r"--configrestart-hmac-key-file .*missing"):
        HmacKey.from_file(str(tmp_path / "missing"))


def test_secret_transform_keeps_no_value() -> None:
    canary = "canary-0d6f7e"
    secret = {
        "kind": "Secret",
        "metadata": {
            "name": "s",
            "namespace": "ns",
            "managedFields": [{"manager": "kubectl"}],
            "annotations": {LAST_APPLIED_ANNOTATION: f'{{"stringData":{{"p":"{canary}"}}}}'},
        },
        "type": "Opaque",
        "data": {"p": base64.b64encode(canary.encode()).decode()},
    }
    expected = KEY.checksum("secret", secret["data"])  # type: ignore[arg-type]
    transform = KEY.secret_transform()
    out = transform(secret)
    assert out[CHECKSUM_FIELD] == expected
    assert "data" not in out and "stringData" not in out
    assert "managedFields" not in out["metadata"]
    assert canary not in repr(out)
    assert base64.b64encode(canary.encode()).decode() not in repr(out)
    assert transform(out)[CHECKSUM_FIELD] == expected, "idempotent"


def test_secret_transform_hashes_string_data_as_the_server_stores_it() -> None:
    transform = KEY.secret_transform()
    written = transform({"stringData": {"p": "v"}})
    stored = transform({"data": {"p": base64.b64encode(b"v").decode()}})
    assert written[CHECKSUM_FIELD] == stored[CHECKSUM_FIELD]

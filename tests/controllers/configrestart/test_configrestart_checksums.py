"""Keyed checksums over a config's identity and canonical data, and the transform of the
ConfigMap and Secret informers."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest

from kcontrol.errors import OptionsError
from kcontrol_controllers.configrestart import CHECKSUM_FIELD, HmacKey
from kcontrol_controllers.configrestart._checksums import CACHED_METADATA, canonical_data

KEY_BYTES = b"0123456789abcdef0123456789abcdef"
KEY = HmacKey(KEY_BYTES)
OTHER = HmacKey(b"fedcba9876543210fedcba9876543210")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def legacy_checksum(
    kind: str, data: dict[str, Any] | None, binary_data: dict[str, Any] | None = None
) -> str:
    """What kcontrol wrote before checksums were bound to the config's name: the HMAC of the
    kind and the data only, ``hmac-sha256:<key id>:<mac>`` (written out here, as the old code
    computed it, so the migration is tested against the real thing)."""
    body = {"binaryData": dict(binary_data or {}), "data": dict(data or {})}
    encoded = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    mac = hmac.new(KEY_BYTES, kind.encode() + b"\n" + encoded.encode(), hashlib.sha256)
    return f"hmac-sha256:{KEY.key_id}:{mac.hexdigest()[:32]}"


def configmap(namespace: str, name: str, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "data": data}


def test_checksum_is_over_data_not_order_or_other_metadata() -> None:
    one = {"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"a": "1", "b": "2"}}
    two = {"metadata": {"name": "a", "resourceVersion": "9"}, "data": {"b": "2", "a": "1"}}
    assert KEY.config_checksum("configmap", one) == KEY.config_checksum("configmap", two)


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
    assert KEY.config_checksum("configmap", left) != KEY.config_checksum("configmap", right)


def test_missing_and_empty_data_are_the_same() -> None:
    empty = {"data": {}, "binaryData": {}}
    assert KEY.config_checksum("configmap", {}) == KEY.config_checksum("configmap", empty)


def test_identical_data_in_two_namespaces_gives_different_checksums() -> None:
    """The cross-namespace oracle: a tenant storing a guess in a config of its own must not
    get the checksum a workload elsewhere shows for the real one."""
    data = {"password": base64.b64encode(b"hunter2").decode()}
    victim = KEY.checksum("secret", "victim", "db", data)
    assert victim != KEY.checksum("secret", "attacker", "db", data), "namespace"
    assert victim != KEY.checksum("secret", "victim", "guess", data), "name"
    assert victim != KEY.checksum("configmap", "victim", "db", data), "kind"
    assert victim == KEY.checksum("secret", "victim", "db", dict(data)), "deterministic"
    assert KEY.config_checksum("configmap", configmap("victim", "app", a="1")) != (
        KEY.config_checksum("configmap", configmap("attacker", "app", a="1"))
    )
    # the fields cannot be shifted into one another: ("a", "b.c") vs ("a.b", "c")
    assert KEY.checksum("secret", "a", "b.c", data) != KEY.checksum("secret", "a.b", "c", data)


def test_checksum_is_keyed() -> None:
    data = {"password": base64.b64encode(b"hunter2").decode()}
    mine = KEY.checksum("secret", "ns", "db", data)
    assert mine != OTHER.checksum("secret", "ns", "db", data)
    bare = hashlib.sha256(canonical_data("secret", "ns", "db", data, None)).hexdigest()
    assert bare[:32] not in mine


def test_format_and_ownership() -> None:
    value = KEY.checksum("configmap", "ns", "app", {"a": "1"})
    prefix, key_id, mac = value.split(":")
    assert prefix == "hmac-sha256-v2"
    assert key_id == KEY.key_id and len(key_id) == 8
    assert len(mac) == 32
    assert KEY.is_own(value) and not KEY.is_legacy(value)
    assert not OTHER.is_own(value)
    assert not KEY.is_own("189832cc316e7594")  # xing's format
    assert not KEY.is_own(None)


def test_legacy_checksums_are_recognised_and_foreign() -> None:
    legacy = legacy_checksum("configmap", {"a": "1"})
    assert KEY.is_legacy(legacy)
    assert not KEY.is_own(legacy), "replaced, never compared (the oracle stays closed)"
    assert not OTHER.is_legacy(legacy), "another key's legacy checksum is just foreign"
    assert not KEY.is_legacy(KEY.checksum("configmap", "ns", "app", {"a": "1"}))


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


def _full_object(kind: str, canary: str) -> dict[str, Any]:
    encoded = base64.b64encode(canary.encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret" if kind == "secret" else "ConfigMap",
        "metadata": {
            "name": "c",
            "namespace": "ns",
            "uid": "u-1",
            "resourceVersion": "7",
            "labels": {"note": canary[:8]},
            "managedFields": [{"manager": "kubectl"}],
            "annotations": {LAST_APPLIED: f'{{"stringData":{{"p":"{canary}"}}}}'},
        },
        "type": "Opaque",
        "data": {"p": encoded if kind == "secret" else canary},
        **({"binaryData": {"b": encoded}} if kind == "configmap" else {}),
    }


@pytest.mark.parametrize("kind", ["configmap", "secret"])
def test_transform_keeps_only_identity_and_checksum(kind: str) -> None:
    """What the caches hold: no data value, no annotation (kubectl's last-applied copy holds
    the values), nothing but what the controller decides with."""
    canary = "canary-0d6f7e"
    obj = _full_object(kind, canary)
    expected = KEY.config_checksum(kind, obj)
    transform = KEY.config_transform(kind)
    out = transform(obj)
    assert out == {
        "apiVersion": "v1",
        "kind": obj["kind"],
        "metadata": {"name": "c", "namespace": "ns", "uid": "u-1", "resourceVersion": "7"},
        CHECKSUM_FIELD: expected,
    }
    assert set(out["metadata"]) <= set(CACHED_METADATA)
    assert canary not in repr(out)
    assert base64.b64encode(canary.encode()).decode() not in repr(out)
    assert transform(out) == out, "idempotent"


def test_secret_transform_hashes_string_data_as_the_server_stores_it() -> None:
    transform = KEY.config_transform("secret")
    written = transform({"metadata": {"name": "s", "namespace": "ns"}, "stringData": {"p": "v"}})
    stored = transform(
        {
            "metadata": {"name": "s", "namespace": "ns"},
            "data": {"p": base64.b64encode(b"v").decode()},
        }
    )
    assert written[CHECKSUM_FIELD] == stored[CHECKSUM_FIELD]


def test_unknown_kinds_are_refused() -> None:
    with pytest.raises(ValueError, match="not a config kind"):
        KEY.config_transform("pod")
    with pytest.raises(ValueError, match="not a config kind"):
        KEY.config_checksum("pod", {})

"""The pod-template-hash: pinned values (it names ReplicaSets, so it must never change) and
upstream's hash_test.go (no collisions over 1000 templates)."""

from __future__ import annotations

import pytest

from kcontrol_controllers.deployment._hashing import (
    SAFE_ALPHANUMS,
    canonical_json,
    compute_hash,
    fnv32a,
    safe_encode_string,
)

TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(b"", 0x811C9DC5, id="empty is the offset basis"),
        pytest.param(b"a", 0xE40C292C, id="a"),
        pytest.param(b"foobar", 0xBF9CF968, id="foobar"),
    ],
)
def test_fnv32a_reference_vectors(data: bytes, expected: int) -> None:
    assert fnv32a(data) == expected


def test_safe_encode_maps_digits_like_apimachinery() -> None:
    # '0' is code point 48, 48 % 27 = 21 -> '4'; ... '9' is 57 % 27 = 3 -> 'f'.
    assert safe_encode_string("0123456789") == "456789bcdf"
    assert set(safe_encode_string("3141592653")) <= set(SAFE_ALPHANUMS)


def test_canonical_json_sorts_keys_without_whitespace() -> None:
    assert canonical_json({"b": 1, "a": {"d": [1, "é"], "c": None}}) == (
        '{"a":{"c":null,"d":[1,"é"]},"b":1}'.encode()
    )


@pytest.mark.parametrize(
    ("template", "collision_count", "expected"),
    [
        pytest.param(TEMPLATE, None, "787cdcbd95", id="no collision count"),
        pytest.param(TEMPLATE, 0, "fb5746ff9", id="collision count 0 differs from none"),
        pytest.param(TEMPLATE, 1, "7bdfb4cd9d", id="collision count 1"),
        pytest.param({}, None, "5859f96865", id="empty template"),
    ],
)
def test_compute_hash_is_pinned(
    template: dict[str, object], collision_count: int | None, expected: str
) -> None:
    assert compute_hash(template, collision_count) == expected


def test_hash_ignores_key_order() -> None:
    reordered = {
        "spec": {"containers": [{"image": "nginx:1.27", "name": "nginx"}]},
        "metadata": {"labels": {"app": "web"}},
    }
    assert compute_hash(reordered, None) == compute_hash(TEMPLATE, None)


def test_hash_does_not_change_its_argument() -> None:
    template = {"metadata": {"labels": {"app": "web"}}}
    compute_hash(template, 3)
    assert template == {"metadata": {"labels": {"app": "web"}}}


def test_no_hash_collisions_over_1000_templates() -> None:
    # upstream TestPodTemplateSpecHash: 1000 templates differing in one label value.
    seen: dict[str, int] = {}
    for i in range(1000):
        template = {"metadata": {"labels": {"name": f"value-{i}"}}, "spec": {}}
        value = compute_hash(template, None)
        assert value not in seen, f"template {i} collides with template {seen.get(value)}"
        seen[value] = i
        assert 1 <= len(value) <= 10
        assert set(value) <= set(SAFE_ALPHANUMS)

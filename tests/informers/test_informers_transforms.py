"""The ready-made transforms: what they drop, what they share, and that they are idempotent."""

from __future__ import annotations

import copy
import sys

import orjson

from kcontrol.client import Object
from kcontrol.informers import chain_transforms, intern_strings, strip_managed_fields


def decoded_pod(name: str) -> Object:
    """A freshly decoded pod: every string is a distinct object, as orjson returns them."""
    pod = {
        "metadata": {
            "name": name,
            "labels": {"app": "web", "tier": "frontend"},
            "managedFields": [{"manager": "kubectl", "operation": "Update"}],
        },
        "spec": {
            "containers": [{"image": "registry.example/web:1.2.3", "ports": [{"protocol": "TCP"}]}],
            "nodeName": "node-" + "x" * 300,  # long values too
            "args": ["--v=2", ["nested"]],
        },
    }
    decoded: Object = orjson.loads(orjson.dumps(pod))
    return decoded


def test_strip_managed_fields_drops_only_managed_fields() -> None:
    pod = decoded_pod("a")
    expected = copy.deepcopy(pod)
    del expected["metadata"]["managedFields"]
    assert strip_managed_fields(pod) is pod
    assert pod == expected
    assert strip_managed_fields(pod) == expected, "idempotent"
    assert strip_managed_fields({"kind": "Odd"}) == {"kind": "Odd"}, "no metadata: unchanged"


def test_intern_strings_shares_values_and_changes_nothing_else() -> None:
    a, b = decoded_pod("a"), decoded_pod("b")
    image_a = a["spec"]["containers"][0]["image"]
    image_b = b["spec"]["containers"][0]["image"]
    assert image_a == image_b and image_a is not image_b, "the decoder does not share values"
    before = copy.deepcopy(a)

    intern_strings(a)
    intern_strings(b)

    assert a == before, "values are equal after interning"
    assert a["spec"]["containers"][0]["image"] is b["spec"]["containers"][0]["image"]
    assert a["metadata"]["labels"]["app"] is b["metadata"]["labels"]["app"]
    assert a["spec"]["containers"][0]["ports"][0]["protocol"] is sys.intern("TCP")
    assert a["spec"]["nodeName"] is b["spec"]["nodeName"]
    assert a["spec"]["args"][0] is b["spec"]["args"][0], "in lists"
    assert a["spec"]["args"][1][0] is b["spec"]["args"][1][0], "in nested lists"
    assert intern_strings(a) == before, "idempotent"


def test_chain_transforms_applies_in_order() -> None:
    def mark(label: str):  # type: ignore[no-untyped-def]
        def transform(obj: Object) -> Object:
            obj.setdefault("marks", []).append(label)
            return obj

        return transform

    chained = chain_transforms(strip_managed_fields, mark("first"), mark("second"))
    pod = chained(decoded_pod("a"))
    assert pod["marks"] == ["first", "second"]
    assert "managedFields" not in pod["metadata"]

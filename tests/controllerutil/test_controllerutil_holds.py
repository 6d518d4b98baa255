"""holds_fields, and apply's skip with a reader: a desired state already in the cache sends
nothing; any difference sends the apply."""

from __future__ import annotations

from typing import Any

import pytest

from kcontrol.client import DEPLOYMENTS, PatchType, Resource
from kcontrol.controllerutil import apply, apply_status, holds_fields
from kcontrol.errors import NotFound

CONTAINER = {"name": "web", "image": "nginx:1", "ports": [{"containerPort": 80}]}
STORED_CONTAINER = {
    **CONTAINER,
    "ports": [{"containerPort": 80, "protocol": "TCP"}],
    "imagePullPolicy": "IfNotPresent",
    "terminationMessagePath": "/dev/termination-log",
}

CASES = [
    ("equal scalars", 1, 1, True),
    ("int and float are one JSON number", 1.0, 1, True),
    ("bool is not an int", 1, True, False),
    ("different scalar", "a", "b", False),
    ("server defaults in a map", {"a": 1, "b": 2}, {"a": 1}, True),
    ("missing member", {"a": 1}, {"a": 1, "b": 2}, False),
    ("nested defaults", {"spec": {"replicas": 1, "strategy": {}}}, {"spec": {"replicas": 1}}, True),
    ("nested difference", {"spec": {"replicas": 1}}, {"spec": {"replicas": 2}}, False),
    ("list items with defaults", [STORED_CONTAINER], [CONTAINER], True),
    ("list of another length", [STORED_CONTAINER, STORED_CONTAINER], [CONTAINER], False),
    ("list item differs", [{**STORED_CONTAINER, "image": "nginx:2"}], [CONTAINER], False),
    ("list where a map is wanted", [1], {"a": 1}, False),
    ("map where a list is wanted", {"a": 1}, [1], False),
    ("null wanted, value there", {"a": 1}, {"a": None}, False),
    ("empty wanted", {"a": 1}, {}, True),
]


@pytest.mark.parametrize(
    ("current", "fields", "holds"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_holds_fields(current: Any, fields: Any, holds: bool) -> None:
    assert holds_fields(current, fields) is holds


def desired(image: str = "nginx:1") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "template": {"spec": {"containers": [{**CONTAINER, "image": image}]}},
        },
    }


def stored() -> dict[str, Any]:
    obj = desired()
    obj["metadata"].update(uid="u1", resourceVersion="7", generation=1)
    obj["metadata"]["labels"]["extra"] = "theirs"
    obj["spec"]["strategy"] = {"type": "RollingUpdate"}
    obj["spec"]["template"]["spec"]["containers"] = [STORED_CONTAINER]
    obj["status"] = {"replicas": 2}
    return obj


class Reader:
    def __init__(self, obj: dict[str, Any] | None) -> None:
        self.obj = obj
        self.reads = 0

    async def get(self, resource: Resource, name: str, *, namespace: str | None = None) -> Any:
        self.reads += 1
        if self.obj is None:
            raise NotFound("not cached")
        return self.obj


class Writer:
    def __init__(self) -> None:
        self.patches: list[tuple[Any, ...]] = []

    async def patch(self, resource: Resource, name: str, patch: Any, **kwargs: Any) -> Any:
        self.patches.append((name, patch, kwargs))
        return {"applied": True}


async def test_apply_sends_nothing_when_the_cache_holds_the_fields() -> None:
    writer, reader = Writer(), Reader(stored())
    result = await apply(writer, DEPLOYMENTS, desired(), field_manager="op", reader=reader)
    assert writer.patches == []
    assert reader.reads == 1
    assert result["metadata"]["uid"] == "u1"


async def test_apply_sends_when_a_field_differs_or_nothing_is_cached() -> None:
    writer = Writer()
    await apply(
        writer, DEPLOYMENTS, desired("nginx:2"), field_manager="op", reader=Reader(stored())
    )
    await apply(writer, DEPLOYMENTS, desired(), field_manager="op", reader=Reader(None))
    await apply(writer, DEPLOYMENTS, desired(), field_manager="op")
    assert len(writer.patches) == 3
    assert all(kw["patch_type"] == PatchType.APPLY for _, _, kw in writer.patches)


async def test_apply_status_compares_the_status_only() -> None:
    writer = Writer()
    same = {**desired(), "spec": {"replicas": 99}, "status": {"replicas": 2}}
    await apply_status(writer, DEPLOYMENTS, same, field_manager="op", reader=Reader(stored()))
    assert writer.patches == []
    moved = {**desired(), "status": {"replicas": 3}}
    await apply_status(writer, DEPLOYMENTS, moved, field_manager="op", reader=Reader(stored()))
    assert len(writer.patches) == 1 and writer.patches[0][2]["subresource"] == "status"

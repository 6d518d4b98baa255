"""patch_entries: the one merge patch it sends (fake client), the writes it skips, creation
when asked, and on the real apiserver five writers setting and removing 50 keys of one
ConfigMap at once, none losing another's key."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from kcontrol.client import CONFIGMAPS, ApiClient, ClientConfig, Object, PatchType, Resource
from kcontrol.controllerutil import patch_entries
from kcontrol.envtest import ControlPlane
from kcontrol.errors import NotFound
from kcontrol.testing import FakeClient


def registry(**data: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "registry", "namespace": "ops", "labels": {"app": "x"}},
        "data": dict(data),
    }


class Snapshot:
    """A reader answering with one fixed copy, as a cache would."""

    def __init__(self, obj: Object | None) -> None:
        self.obj = copy.deepcopy(obj)

    async def get(
        self, resource: Resource, name: str, *, namespace: str | None = None
    ) -> Mapping[str, Any]:
        if self.obj is None:
            raise NotFound("not cached")
        return self.obj


async def test_one_merge_patch_of_the_keys_given_and_nothing_else() -> None:
    client = FakeClient([registry(a="1", b="2")])

    answer = await patch_entries(
        client, CONFIGMAPS, "registry", {"c": "3", "a": None}, namespace="ops"
    )

    (action,) = client.actions
    assert str(action) == "patch configmaps ops/registry"
    assert action.patch_type is PatchType.MERGE
    assert action.patch == {"data": {"c": "3", "a": None}}, "no resourceVersion, no labels"
    assert answer is not None and answer["data"] == {"b": "2", "c": "3"}
    assert answer["metadata"]["labels"] == {"app": "x"}


async def test_a_nested_field_path() -> None:
    client = FakeClient([{**registry(), "status": {"members": {"x": 1}}}])

    await patch_entries(
        client, CONFIGMAPS, "registry", {"y": 2}, namespace="ops", field=("status", "members")
    )

    (action,) = client.actions
    assert action.patch == {"status": {"members": {"y": 2}}}


@pytest.mark.parametrize(
    ("cached", "entries", "sent"),
    [
        pytest.param(registry(a="1"), {"a": "1"}, False, id="already set"),
        pytest.param(registry(a="1"), {"b": None}, False, id="already absent"),
        pytest.param(registry(a="1"), {"a": "2"}, True, id="another value"),
        pytest.param(registry(a="1"), {"a": None}, True, id="still there"),
        pytest.param(None, {"a": "1"}, True, id="not cached"),
    ],
)
async def test_a_reader_skips_what_is_already_there(
    cached: Object | None, entries: dict[str, Any], sent: bool
) -> None:
    client = FakeClient([registry(a="1")])

    answer = await patch_entries(
        client, CONFIGMAPS, "registry", entries, namespace="ops", reader=Snapshot(cached)
    )

    assert bool(client.actions) is sent
    assert (answer is not None) is sent


async def test_a_missing_object_is_created_only_when_asked() -> None:
    client = FakeClient()
    with pytest.raises(NotFound):
        await patch_entries(client, CONFIGMAPS, "registry", {"a": "1"}, namespace="ops")

    answer = await patch_entries(
        client, CONFIGMAPS, "registry", {"a": "1", "b": None}, namespace="ops", create=True
    )

    assert answer is not None and answer["data"] == {"a": "1"}
    assert [str(a) for a in client.actions][-1] == "create configmaps ops/registry"


async def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="at least one entry"):
        await patch_entries(FakeClient(), CONFIGMAPS, "registry", {}, namespace="ops")


# -- on the real apiserver -----------------------------------------------------------------------


@pytest.fixture
async def client(control_plane: ControlPlane) -> AsyncIterator[ApiClient]:
    config = ClientConfig.from_kube_configuration(await control_plane.kube_configuration())
    async with ApiClient(config, qps=0, timeout=30) as api:
        yield api


@pytest.mark.integration
async def test_five_writers_share_one_configmap_without_losing_a_key(
    client: ApiClient, namespace: str
) -> None:
    keys = [f"memcached-{i}" for i in range(50)]

    async def writer(mine: list[str], value: str | None) -> None:
        for key in mine:
            await patch_entries(
                client, CONFIGMAPS, "registry", {key: value}, namespace=namespace, create=True
            )

    shares = [keys[i::5] for i in range(5)]
    await asyncio.gather(*(writer(share, "up") for share in shares))
    stored = await client.get(CONFIGMAPS, "registry", namespace=namespace)
    assert stored["data"] == dict.fromkeys(keys, "up"), "a writer's key was lost"
    managers = {entry["manager"] for entry in stored["metadata"].get("managedFields") or []}
    assert len(managers) == 1, f"one field manager for all writers, not one per key: {managers}"

    await asyncio.gather(*(writer(share[:5], None) for share in shares))
    stored = await client.get(CONFIGMAPS, "registry", namespace=namespace)
    removed = {key for share in shares for key in share[:5]}
    assert set(stored["data"]) == set(keys) - removed

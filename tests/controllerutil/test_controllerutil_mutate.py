"""create_or_update and create_or_patch on the fake client, mirroring controller-runtime's
CreateOrUpdate / CreateOrPatch cases; every test asserts exactly the requests sent."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from kcontrol.client import DEPLOYMENTS, NAMESPACES, Object, PatchType, Resource
from kcontrol.controllerutil import OperationResult, create_or_patch, create_or_update
from kcontrol.errors import Conflict, Forbidden, NotFound
from kcontrol.testing import Action, FakeClient

SPEC = {
    "selector": {"matchLabels": {"foo": "bar"}},
    "template": {
        "metadata": {"labels": {"foo": "bar"}},
        "spec": {"containers": [{"name": "busybox", "image": "busybox"}]},
    },
}

HELPERS = [create_or_update, create_or_patch]


def key() -> dict[str, Any]:
    """What a reconcile passes: the name and namespace only."""
    return {"metadata": {"name": "web", "namespace": "default"}}


def specr(obj: Object) -> None:
    obj["spec"] = copy.deepcopy(SPEC)


def scaler(replicas: int) -> Any:
    def scale(obj: Object) -> None:
        obj["spec"]["replicas"] = replicas

    return scale


def statusr(**status: Any) -> Any:
    def set_status(obj: Object) -> None:
        obj["status"] = dict(status)

    return set_status


def identity(obj: Object) -> None:
    pass


def renamer(obj: Object) -> None:
    obj["metadata"]["name"] += "-1"


def namespace_changer(obj: Object) -> None:
    obj["metadata"]["namespace"] += "-1"


def requests(client: FakeClient) -> list[str]:
    return [str(a) for a in client.actions]


async def seeded() -> FakeClient:
    """A fake client holding the deployment as create_or_* made it, actions cleared."""
    client = FakeClient()
    await create_or_update(client, DEPLOYMENTS, key(), specr)
    client.clear_actions()
    return client


async def stored(client: FakeClient) -> Object:
    return client.tracker.get(DEPLOYMENTS, "web", namespace="default")


# -- both helpers ------------------------------------------------------------------------------


@pytest.mark.parametrize("helper", HELPERS)
async def test_creates_a_new_object_if_none_exists(helper: Any) -> None:
    client = FakeClient()
    answer, result = await helper(client, DEPLOYMENTS, key(), specr)
    assert result is OperationResult.CREATED
    assert requests(client) == ["get deployments default/web", "create deployments default/web"]
    created = client.actions[1].object
    assert created == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": SPEC,
    }
    assert answer["spec"] == SPEC and answer["metadata"]["resourceVersion"]


@pytest.mark.parametrize("helper", HELPERS)
async def test_writes_nothing_when_the_mutate_changes_nothing(helper: Any) -> None:
    client = await seeded()
    before = await stored(client)
    answer, result = await helper(client, DEPLOYMENTS, key(), identity)
    assert result is OperationResult.NONE
    assert requests(client) == ["get deployments default/web"]
    assert answer == before


@pytest.mark.parametrize("helper", HELPERS)
async def test_writes_nothing_when_the_mutate_sets_what_is_there(helper: Any) -> None:
    client = await seeded()
    _, result = await helper(client, DEPLOYMENTS, key(), specr)
    assert result is OperationResult.NONE
    assert requests(client) == ["get deployments default/web"]


@pytest.mark.parametrize("helper", HELPERS)
async def test_refuses_a_mutate_that_renames_on_creation(helper: Any) -> None:
    client = FakeClient()

    def spec_and_rename(obj: Object) -> None:
        specr(obj)
        renamer(obj)

    with pytest.raises(ValueError, match="name or namespace"):
        await helper(client, DEPLOYMENTS, key(), spec_and_rename)
    assert requests(client) == ["get deployments default/web"]


@pytest.mark.parametrize("helper", HELPERS)
@pytest.mark.parametrize("mutate", [renamer, namespace_changer])
async def test_refuses_a_mutate_that_renames_an_existing_object(helper: Any, mutate: Any) -> None:
    client = await seeded()
    with pytest.raises(ValueError, match="name or namespace"):
        await helper(client, DEPLOYMENTS, key(), mutate)
    assert requests(client) == ["get deployments default/web"]


@pytest.mark.parametrize("helper", HELPERS)
async def test_aborts_when_the_read_fails(helper: Any) -> None:
    client = FakeClient()

    def forbidden(action: Action) -> None:
        raise Forbidden("no")

    def must_not_run(obj: Object) -> None:
        raise AssertionError("the mutate function must not run")

    client.prepend_reactor("get", DEPLOYMENTS, forbidden)
    with pytest.raises(Forbidden):
        await helper(client, DEPLOYMENTS, key(), must_not_run)
    assert requests(client) == ["get deployments default/web"]


@pytest.mark.parametrize("helper", HELPERS)
async def test_an_async_mutate_is_awaited(helper: Any) -> None:
    client = await seeded()

    async def scale(obj: Object) -> None:
        obj["spec"]["replicas"] = 4

    _, result = await helper(client, DEPLOYMENTS, key(), scale)
    assert result is OperationResult.UPDATED
    assert (await stored(client))["spec"]["replicas"] == 4


@pytest.mark.parametrize("helper", HELPERS)
async def test_an_error_of_the_mutate_propagates_and_nothing_is_written(helper: Any) -> None:
    client = await seeded()

    def fail(obj: Object) -> None:
        obj["spec"]["replicas"] = 9
        raise RuntimeError("cannot compute")

    with pytest.raises(RuntimeError):
        await helper(client, DEPLOYMENTS, key(), fail)
    assert requests(client) == ["get deployments default/web"]


class CacheReader:
    """A stand-in for a cache-backed reader: serves fixed objects, records reads."""

    def __init__(self, *objects: Object) -> None:
        self.objects = {o["metadata"]["name"]: o for o in objects}
        self.reads: list[str] = []

    async def get(
        self, resource: Resource, name: str, *, namespace: str | None = None
    ) -> Mapping[str, Any]:
        self.reads.append(f"{resource.plural} {namespace}/{name}")
        if name not in self.objects:
            raise NotFound(name)
        return self.objects[name]


@pytest.mark.parametrize("helper", HELPERS)
async def test_reads_through_the_reader_and_never_changes_its_object(helper: Any) -> None:
    client = await seeded()
    cached = await stored(client)
    snapshot = copy.deepcopy(cached)
    reader = CacheReader(cached)
    _, result = await helper(client, DEPLOYMENTS, key(), scaler(3), reader=reader)
    assert result is OperationResult.UPDATED
    assert reader.reads == ["deployments default/web"]
    assert [a.verb for a in client.actions] == ["update" if helper is create_or_update else "patch"]
    assert cached == snapshot


@pytest.mark.parametrize("helper", HELPERS)
async def test_a_miss_in_the_reader_creates(helper: Any) -> None:
    client = FakeClient()
    _, result = await helper(client, DEPLOYMENTS, key(), specr, reader=CacheReader())
    assert result is OperationResult.CREATED
    assert requests(client) == ["create deployments default/web"]


@pytest.mark.parametrize("helper", HELPERS)
async def test_the_callers_object_is_not_changed(helper: Any) -> None:
    client = FakeClient()
    obj = key()
    await helper(client, DEPLOYMENTS, obj, specr)
    assert obj == key()


@pytest.mark.parametrize("helper", HELPERS)
async def test_a_cluster_scoped_object(helper: Any) -> None:
    client = FakeClient()

    def label(obj: Object) -> None:
        obj["metadata"].setdefault("labels", {})["team"] = "a"

    answer, result = await helper(client, NAMESPACES, {"metadata": {"name": "team"}}, label)
    assert result is OperationResult.CREATED
    assert answer["metadata"]["labels"] == {"team": "a"}
    _, result = await helper(client, NAMESPACES, {"metadata": {"name": "team"}}, label)
    assert result is OperationResult.NONE
    assert requests(client) == [
        "get namespaces team",
        "create namespaces team",
        "get namespaces team",
    ]


@pytest.mark.parametrize("helper", HELPERS)
@pytest.mark.parametrize(
    "obj",
    [{"metadata": {"namespace": "default"}}, {"metadata": {"name": "web"}}, {}],
    ids=["no-name", "no-namespace", "no-metadata"],
)
async def test_needs_name_and_namespace(helper: Any, obj: Object) -> None:
    client = FakeClient()
    with pytest.raises(ValueError, match="metadata"):
        await helper(client, DEPLOYMENTS, obj, specr)
    assert client.actions == []


# -- create_or_update ------------------------------------------------------------------------------


async def test_create_or_update_puts_the_mutated_object() -> None:
    client = await seeded()
    current = await stored(client)
    answer, result = await create_or_update(client, DEPLOYMENTS, key(), scaler(2))
    assert result is OperationResult.UPDATED
    assert requests(client) == ["get deployments default/web", "update deployments default/web"]
    sent = client.actions[1].object
    assert sent is not None
    assert sent["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"]
    assert sent == current | {"spec": current["spec"] | {"replicas": 2}}
    assert answer["spec"]["replicas"] == 2
    assert (await stored(client))["spec"]["replicas"] == 2


async def test_create_or_update_of_a_stale_read_conflicts() -> None:
    client = await seeded()
    stale = await stored(client)
    await client.patch(
        DEPLOYMENTS, "web", {"metadata": {"labels": {"their": "label"}}}, namespace="default"
    )
    with pytest.raises(Conflict):
        await create_or_update(client, DEPLOYMENTS, key(), scaler(5), reader=CacheReader(stale))
    assert (await stored(client))["metadata"]["labels"] == {"their": "label"}


# -- create_or_patch -------------------------------------------------------------------------------


def patches(client: FakeClient) -> list[tuple[str, Any]]:
    return [(a.subresource, a.patch) for a in client.actions if a.verb == "patch"]


async def test_create_or_patch_sends_only_the_difference() -> None:
    client = await seeded()
    answer, result = await create_or_patch(client, DEPLOYMENTS, key(), scaler(2))
    assert result is OperationResult.UPDATED
    assert requests(client) == ["get deployments default/web", "patch deployments default/web"]
    assert client.actions[1].patch_type is PatchType.MERGE
    assert patches(client) == [("", {"spec": {"replicas": 2}})]
    assert answer["spec"]["replicas"] == 2


async def test_create_or_patch_patches_only_a_changed_status() -> None:
    client = await seeded()
    answer, result = await create_or_patch(
        client, DEPLOYMENTS, key(), statusr(readyReplicas=1, replicas=3)
    )
    assert result is OperationResult.UPDATED_STATUS_ONLY
    assert requests(client) == [
        "get deployments default/web",
        "patch deployments default/web/status",
    ]
    assert patches(client) == [("status", {"status": {"readyReplicas": 1, "replicas": 3}})]
    assert answer["status"] == {"readyReplicas": 1, "replicas": 3}


async def test_create_or_patch_patches_resource_and_status() -> None:
    client = await seeded()

    def scale_and_status(obj: Object) -> None:
        scaler(3)(obj)
        statusr(readyReplicas=1, replicas=3)(obj)

    answer, result = await create_or_patch(client, DEPLOYMENTS, key(), scale_and_status)
    assert result is OperationResult.UPDATED_STATUS
    assert patches(client) == [
        ("", {"spec": {"replicas": 3}}),
        ("status", {"status": {"readyReplicas": 1, "replicas": 3}}),
    ]
    assert answer["spec"]["replicas"] == 3
    assert answer["status"] == {"readyReplicas": 1, "replicas": 3}
    assert answer == await stored(client)


async def test_create_or_patch_patches_resource_and_a_non_empty_status() -> None:
    client = await seeded()
    await create_or_patch(client, DEPLOYMENTS, key(), statusr(readyReplicas=1, replicas=3))
    client.clear_actions()

    def scale_and_condition(obj: Object) -> None:
        obj["spec"]["replicas"] = 5
        obj["status"]["conditions"] = [{"type": "Progressing", "status": "True"}]

    answer, result = await create_or_patch(client, DEPLOYMENTS, key(), scale_and_condition)
    assert result is OperationResult.UPDATED_STATUS
    assert patches(client) == [
        ("", {"spec": {"replicas": 5}}),
        ("status", {"status": {"conditions": [{"type": "Progressing", "status": "True"}]}}),
    ]
    assert answer["spec"]["replicas"] == 5
    assert answer["status"]["replicas"] == 3
    assert len(answer["status"]["conditions"]) == 1


async def test_create_or_patch_removes_what_the_mutate_removed() -> None:
    client = await seeded()
    await client.patch(
        DEPLOYMENTS, "web", {"metadata": {"annotations": {"a": "1", "b": "2"}}}, namespace="default"
    )
    client.clear_actions()

    def drop_b(obj: Object) -> None:
        del obj["metadata"]["annotations"]["b"]

    await create_or_patch(client, DEPLOYMENTS, key(), drop_b)
    assert patches(client) == [("", {"metadata": {"annotations": {"b": None}}})]
    assert (await stored(client))["metadata"]["annotations"] == {"a": "1"}


async def test_create_or_patch_of_a_stale_read_keeps_the_other_writers_fields() -> None:
    client = await seeded()
    stale = await stored(client)
    await client.patch(
        DEPLOYMENTS,
        "web",
        {"metadata": {"labels": {"their": "label"}, "finalizers": ["their/f"]}},
        namespace="default",
    )
    _, result = await create_or_patch(
        client, DEPLOYMENTS, key(), scaler(5), reader=CacheReader(stale)
    )
    assert result is OperationResult.UPDATED
    after = await stored(client)
    assert after["spec"]["replicas"] == 5
    assert after["metadata"]["labels"] == {"their": "label"}
    assert after["metadata"]["finalizers"] == ["their/f"]


async def test_create_or_patch_with_optimistic_lock_conflicts_on_a_stale_read() -> None:
    client = await seeded()
    stale = await stored(client)
    await client.patch(
        DEPLOYMENTS, "web", {"metadata": {"finalizers": ["their/f"]}}, namespace="default"
    )
    client.clear_actions()

    def add_mine(obj: Object) -> None:
        obj["metadata"]["finalizers"] = [*obj["metadata"].get("finalizers", []), "my/f"]

    with pytest.raises(Conflict):
        await create_or_patch(
            client, DEPLOYMENTS, key(), add_mine, reader=CacheReader(stale), optimistic_lock=True
        )
    rv = stale["metadata"]["resourceVersion"]
    assert patches(client) == [("", {"metadata": {"finalizers": ["my/f"], "resourceVersion": rv}})]
    assert (await stored(client))["metadata"]["finalizers"] == ["their/f"]


async def test_create_or_patch_with_optimistic_lock_locks_the_status_patch_on_the_new_version() -> (
    None
):
    client = await seeded()

    def scale_and_status(obj: Object) -> None:
        scaler(3)(obj)
        statusr(replicas=3)(obj)

    answer, result = await create_or_patch(
        client, DEPLOYMENTS, key(), scale_and_status, optimistic_lock=True
    )
    assert result is OperationResult.UPDATED_STATUS
    [(_, first), (_, second)] = patches(client)
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    assert answer["status"] == {"replicas": 3}

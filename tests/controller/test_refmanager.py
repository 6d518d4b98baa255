"""ControllerRefManager.claim against the fake client: the exact patches it sends (upstream:
controller_ref_manager_test.go TestClaimPods, and the deployment controller's
GetReplicaSetsForDeployment adopt/release cases)."""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest

from kcontrol.client import PODS, REPLICASETS, PatchType
from kcontrol.controller._refmanager import (
    CannotAdopt,
    ClaimError,
    ControllerRefManager,
    get_controller_of,
    recheck_deletion_timestamp,
    recheck_owner,
    resolve_controller_ref,
)
from kcontrol.errors import Conflict, Invalid, NotFound
from kcontrol.labels import selector_from_label_selector
from kcontrol.testing import Action, FakeClient

NS = "default"
RS_UID = "rs-uid-1"
OTHER_UID = "other-uid-2"
DELETED = "2026-01-01T00:00:00Z"


def replicaset(**meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": NS, "uid": RS_UID, **meta},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
    }


def controller_ref(uid: str = RS_UID, name: str = "web", controller: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": name,
        "uid": uid,
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def pod(
    name: str,
    labels: Mapping[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
    namespace: str = NS,
    **meta: Any,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "labels": dict(labels if labels is not None else {"app": "web"}),
        **meta,
    }
    if owners:
        metadata["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {}}


def adopt_patch(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {
            "ownerReferences": [controller_ref()],
            "uid": obj["metadata"]["uid"],
        }
    }


def release_patch(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {
            "ownerReferences": [{"$patch": "delete", "uid": RS_UID}],
            "uid": obj["metadata"]["uid"],
        }
    }


class CanAdoptProbe:
    """A can_adopt that counts its calls and refuses when told to."""

    def __init__(self, error: Exception | None = None) -> None:
        self.calls = 0
        self.error = error

    async def __call__(self) -> None:
        self.calls += 1
        if self.error is not None:
            raise self.error


def new_manager(
    client: FakeClient,
    controller: dict[str, Any] | None = None,
    can_adopt: Callable[[], Awaitable[None]] | None = None,
) -> ControllerRefManager:
    controller = controller or replicaset()
    return ControllerRefManager(
        client,
        controller,
        selector_from_label_selector(controller["spec"]["selector"]),
        ("apps/v1", "ReplicaSet"),
        PODS,
        can_adopt=can_adopt,
    )


def patches(client: FakeClient) -> list[tuple[str, Any]]:
    found = []
    for action in client.actions:
        assert action.verb == "patch", f"unexpected {action}"
        assert action.patch_type is PatchType.STRATEGIC
        assert action.resource == PODS and action.namespace == NS
        found.append((action.name, action.patch))
    return found


def names(objects: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objects]


def fail(verb_name: str, error: Exception) -> Callable[[Action], None]:
    def reactor(action: Action) -> None:
        if action.name == verb_name:
            raise error

    return reactor


# -- the four outcomes ----------------------------------------------------------------------


async def test_adopts_a_matching_orphan() -> None:
    orphan = pod("orphan")
    client = FakeClient([orphan])
    probe = CanAdoptProbe()
    claimed = await new_manager(client, can_adopt=probe).claim([orphan])
    assert patches(client) == [("orphan", adopt_patch(orphan))]
    assert probe.calls == 1
    assert names(claimed) == ["orphan"]
    assert get_controller_of(claimed[0]) == controller_ref()  # the patched object
    assert "ownerReferences" not in orphan["metadata"]  # the cached one is untouched


async def test_keeps_owned_matching_objects_without_writing() -> None:
    owned = pod("owned", owners=[controller_ref()])
    client = FakeClient([owned])
    probe = CanAdoptProbe()
    claimed = await new_manager(client, can_adopt=probe).claim([owned])
    assert claimed == [owned]
    assert client.actions == []
    assert probe.calls == 0


async def test_leaves_objects_owned_by_another_controller() -> None:
    theirs = pod("theirs", owners=[controller_ref(uid=OTHER_UID, name="other")])
    client = FakeClient([theirs])
    assert await new_manager(client).claim([theirs]) == []
    assert client.actions == []


async def test_releases_owned_objects_that_stopped_matching() -> None:
    stray = pod("stray", labels={"app": "db"}, owners=[controller_ref()])
    client = FakeClient([stray])
    probe = CanAdoptProbe()
    assert await new_manager(client, can_adopt=probe).claim([stray]) == []
    assert patches(client) == [("stray", release_patch(stray))]
    assert probe.calls == 0  # releasing needs no re-check
    live = client.tracker.get(PODS, "stray", namespace=NS)
    assert "ownerReferences" not in live["metadata"] or not live["metadata"]["ownerReferences"]


async def test_release_keeps_other_owner_references() -> None:
    plain_owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "cm-uid"}
    stray = pod("stray", labels={}, owners=[plain_owner, controller_ref()])
    client = FakeClient([stray])
    await new_manager(client).claim([stray])
    live = client.tracker.get(PODS, "stray", namespace=NS)
    assert live["metadata"]["ownerReferences"] == [plain_owner]


@pytest.mark.parametrize(
    ("case", "obj"),
    [
        ("not matching", pod("o", labels={"app": "db"})),
        ("no labels", pod("o", labels={})),
        ("being deleted", pod("o", deletionTimestamp=DELETED, finalizers=["x/y"])),
        ("other namespace", pod("o", namespace="elsewhere")),
        ("non-controller owner only", pod("o", owners=[controller_ref(controller=False)])),
    ],
)
async def test_orphans_that_are_not_adopted(case: str, obj: dict[str, Any]) -> None:
    client = FakeClient([obj])
    probe = CanAdoptProbe()
    claimed = await new_manager(client, can_adopt=probe).claim([obj])
    if case == "non-controller owner only":
        # An owner reference without controller: true does not make it owned: adopted.
        assert names(claimed) == ["o"]
        assert len(client.actions) == 1
    else:
        assert claimed == [], case
        assert client.actions == [], case
        assert probe.calls == 0


# -- a controller being deleted -------------------------------------------------------------


async def test_controller_being_deleted_keeps_but_neither_adopts_nor_releases() -> None:
    owned = pod("owned", owners=[controller_ref()])
    stray = pod("stray", labels={"app": "db"}, owners=[controller_ref()])
    orphan = pod("orphan")
    client = FakeClient([owned, stray, orphan])
    probe = CanAdoptProbe()
    doomed = replicaset(deletionTimestamp=DELETED)
    claimed = await new_manager(client, doomed, probe).claim([owned, stray, orphan])
    assert names(claimed) == ["owned"]
    assert client.actions == []
    assert probe.calls == 0


# -- the pre-adoption check -----------------------------------------------------------------


async def test_can_adopt_runs_once_per_claim_pass() -> None:
    orphans = [pod(f"orphan-{i}") for i in range(3)]
    client = FakeClient(orphans)
    probe = CanAdoptProbe()
    manager = new_manager(client, can_adopt=probe)
    claimed = await manager.claim(orphans)
    assert names(claimed) == ["orphan-0", "orphan-1", "orphan-2"]
    assert probe.calls == 1
    await manager.claim([pod("orphan-3")])
    assert probe.calls == 2  # a new pass checks again


async def test_refused_can_adopt_fails_every_adoption_but_not_releases() -> None:
    orphans = [pod("orphan-a"), pod("orphan-b")]
    owned = pod("owned", owners=[controller_ref()])
    stray = pod("stray", labels={"app": "db"}, owners=[controller_ref()])
    client = FakeClient([*orphans, owned, stray])
    probe = CanAdoptProbe(CannotAdopt("default/web has just been deleted"))
    manager = new_manager(client, can_adopt=probe)
    with pytest.raises(ClaimError) as failure:
        await manager.claim([orphans[0], owned, stray, orphans[1]])
    assert probe.calls == 1
    assert patches(client) == [("stray", release_patch(stray))]
    errors = failure.value.errors
    assert [type(e) for e in errors] == [CannotAdopt, CannotAdopt]
    assert str(errors[0]) == (
        "can't adopt Pod default/orphan-a (uid-orphan-a): default/web has just been deleted"
    )
    assert "orphan-b" in str(errors[1])
    assert names(failure.value.claimed) == ["owned"]


async def test_can_adopt_failing_with_any_error_is_reported_as_cannot_adopt() -> None:
    orphan = pod("orphan")
    client = FakeClient([orphan])
    boom = NotFound('replicasets.apps "web" not found')
    with pytest.raises(ClaimError) as failure:
        await new_manager(client, can_adopt=CanAdoptProbe(boom)).claim([orphan])
    (error,) = failure.value.errors
    assert isinstance(error, CannotAdopt)
    assert isinstance(error.__cause__, CannotAdopt) and error.__cause__.__cause__ is boom
    assert client.actions == []


async def test_without_can_adopt_adoption_goes_ahead() -> None:
    orphan = pod("orphan")
    client = FakeClient([orphan])
    assert names(await new_manager(client).claim([orphan])) == ["orphan"]


# -- API errors -----------------------------------------------------------------------------


@pytest.mark.parametrize("error", [NotFound(), Invalid()], ids=["NotFound", "Invalid"])
async def test_release_treats_gone_or_invalid_as_done(error: Exception) -> None:
    stray = pod("stray", labels={}, owners=[controller_ref()])
    client = FakeClient([stray])
    client.prepend_reactor("patch", PODS, fail("stray", error))
    assert await new_manager(client).claim([stray]) == []
    assert patches(client) == [("stray", release_patch(stray))]


async def test_adopting_an_object_that_vanished_is_not_an_error() -> None:
    orphan = pod("orphan")
    client = FakeClient()  # the cache still has it, the server does not
    assert await new_manager(client).claim([orphan]) == []
    assert patches(client) == [("orphan", adopt_patch(orphan))]


async def test_errors_are_collected_and_the_rest_still_processed() -> None:
    first, second, third = pod("a"), pod("b"), pod("c")
    stray = pod("stray", labels={}, owners=[controller_ref()])
    client = FakeClient([first, second, third, stray])
    conflict = Conflict("the object has been modified")
    server_down = Invalid("Only one reference can have Controller set to true")
    release_failure = Conflict("release failed")
    client.prepend_reactor("patch", PODS, fail("a", conflict))
    client.prepend_reactor("patch", PODS, fail("c", server_down))
    client.prepend_reactor("patch", PODS, fail("stray", release_failure))
    with pytest.raises(ClaimError) as failure:
        await new_manager(client).claim([first, second, stray, third])
    assert [name for name, _ in patches(client)] == ["a", "b", "stray", "c"]
    assert failure.value.errors == (conflict, release_failure, server_down)
    assert names(failure.value.claimed) == ["b"]
    assert str(failure.value).startswith("[409 Conflict: the object has been modified, ")


def test_claim_error_message_of_a_single_error() -> None:
    assert str(ClaimError([Conflict("boom")])) == "409 Conflict: boom"


async def test_claim_never_modifies_the_objects_given() -> None:
    objects = [
        pod("orphan"),
        pod("owned", owners=[controller_ref()]),
        pod("stray", labels={}, owners=[controller_ref()]),
        pod("theirs", owners=[controller_ref(uid=OTHER_UID)]),
    ]
    before = copy.deepcopy(objects)
    client = FakeClient(copy.deepcopy(objects))
    await new_manager(client).claim(objects)
    assert objects == before


async def test_adopting_a_replicaset_for_a_deployment_patches_replicasets() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NS, "uid": "dep-uid"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
    }
    rs = replicaset(uid="rs-x", name="web-abc", labels={"app": "web"})
    client = FakeClient([rs])
    manager = ControllerRefManager(
        client,
        deployment,
        selector_from_label_selector(deployment["spec"]["selector"]),
        ("apps/v1", "Deployment"),
        REPLICASETS,
    )
    (claimed,) = await manager.claim([rs])
    (action,) = client.actions
    assert (action.verb, action.resource, action.name) == ("patch", REPLICASETS, "web-abc")
    assert action.patch == {
        "metadata": {
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": "web",
                    "uid": "dep-uid",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "uid": "rs-x",
        }
    }
    assert get_controller_of(claimed)["uid"] == "dep-uid"  # type: ignore[index]


# -- finalizers (upstream: PodControllerRefManager with finalizers, as the Job controller) -----

TRACKING = "batch.kubernetes.io/job-tracking"


@pytest.mark.parametrize(
    ("case", "finalizers"),
    [("no finalizers: the plain patches", ()), ("one finalizer", (TRACKING,))],
)
async def test_finalizers_ride_in_the_adopt_and_release_patches(
    case: str, finalizers: tuple[str, ...]
) -> None:
    orphan = pod("orphan", finalizers=["example.com/keep"])
    leaving = pod(
        "leaving",
        labels={"app": "other"},
        owners=[controller_ref()],
        finalizers=["example.com/keep", TRACKING],
    )
    client = FakeClient([orphan, leaving])
    controller = replicaset()
    manager = ControllerRefManager(
        client,
        controller,
        selector_from_label_selector(controller["spec"]["selector"]),
        ("apps/v1", "ReplicaSet"),
        PODS,
        finalizers=finalizers,
    )
    (claimed,) = await manager.claim([orphan, leaving])

    adopt, release = adopt_patch(orphan), release_patch(leaving)
    if finalizers:
        adopt["metadata"]["finalizers"] = [TRACKING]
        release["metadata"]["$deleteFromPrimitiveList/finalizers"] = [TRACKING]
    assert patches(client) == [("orphan", adopt), ("leaving", release)], case
    # The API server merges them: added to (removed from) the finalizers already there.
    assert claimed["metadata"]["finalizers"] == ["example.com/keep", *finalizers]
    released = await client.get(PODS, "leaving", namespace=NS)
    assert not released["metadata"].get("ownerReferences")
    expected_left = ["example.com/keep"] if finalizers else ["example.com/keep", TRACKING]
    assert released["metadata"]["finalizers"] == expected_left


# -- helpers --------------------------------------------------------------------------------


def test_get_controller_of() -> None:
    plain = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "1"}
    assert get_controller_of(pod("a")) is None
    assert get_controller_of(pod("a", owners=[plain])) is None
    assert get_controller_of(pod("a", owners=[plain, controller_ref()])) == controller_ref()
    assert get_controller_of({}) is None


async def test_recheck_deletion_timestamp() -> None:
    async def alive() -> dict[str, Any]:
        return replicaset()

    async def dying() -> dict[str, Any]:
        return replicaset(deletionTimestamp=DELETED)

    async def unreachable() -> dict[str, Any]:
        raise NotFound("gone")

    await recheck_deletion_timestamp(alive)()
    with pytest.raises(CannotAdopt, match=f"default/web has just been deleted at {DELETED}"):
        await recheck_deletion_timestamp(dying)()
    with pytest.raises(CannotAdopt, match="can't recheck DeletionTimestamp: 404 NotFound: gone"):
        await recheck_deletion_timestamp(unreachable)()


async def test_recheck_owner_reads_live_and_compares_uid() -> None:
    live = replicaset()
    client = FakeClient([live])
    stored_uid = client.tracker.get(REPLICASETS, "web", namespace=NS)["metadata"]["uid"]
    cached = replicaset(uid=stored_uid)
    await recheck_owner(client, REPLICASETS, cached)()
    assert [str(a) for a in client.actions] == ["get replicasets default/web"]

    with pytest.raises(CannotAdopt, match="original ReplicaSet default/web is gone: got uid"):
        await recheck_owner(client, REPLICASETS, replicaset(uid="recreated"))()

    with pytest.raises(CannotAdopt, match="can't recheck DeletionTimestamp: 404"):
        await recheck_owner(client, REPLICASETS, replicaset(name="missing"))()


class _Cache:
    """A lister of one namespace's objects by name."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self._objects = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects}

    def get(self, namespace: str, name: str) -> dict[str, Any]:
        try:
            return self._objects[(namespace, name)]
        except KeyError:
            raise NotFound(f"{namespace}/{name}") from None


@pytest.mark.parametrize(
    ("ref", "found"),
    [
        pytest.param({"kind": "ReplicaSet", "name": "web", "uid": RS_UID}, True, id="match"),
        pytest.param({"kind": "Deployment", "name": "web", "uid": RS_UID}, False, id="kind"),
        pytest.param({"kind": "ReplicaSet", "name": "gone", "uid": RS_UID}, False, id="absent"),
        pytest.param({"kind": "ReplicaSet", "name": "web", "uid": OTHER_UID}, False, id="uid"),
    ],
)
def test_resolve_controller_ref(ref: dict[str, Any], found: bool) -> None:
    cached = replicaset()
    got = resolve_controller_ref(_Cache(cached), NS, ref, "ReplicaSet")
    assert (got is cached) if found else (got is None)
    assert resolve_controller_ref(_Cache(cached), "elsewhere", ref, "ReplicaSet") is None

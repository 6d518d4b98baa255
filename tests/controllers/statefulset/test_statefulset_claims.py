"""A StatefulSet's PersistentVolumeClaims on the fake client (upstream
stateful_set_control_test.go's PVC cases and stateful_pod_control_test.go): created before
their pod, owned as the retention policy says, stale claims waited for."""

from __future__ import annotations

from typing import Any

import pytest
from statefulset_controller_fixtures import NS, Fixture, new_set

from kcontrol.client import PERSISTENTVOLUMECLAIMS, PODS, Object
from kcontrol.errors import Forbidden
from kcontrol.testing import Action


def policy(when_scaled: str, when_deleted: str) -> dict[str, Any]:
    return {
        "persistentVolumeClaimRetentionPolicy": {
            "whenScaled": when_scaled,
            "whenDeleted": when_deleted,
        }
    }


def claim(f: Fixture, name: str) -> Object:
    return f.client.tracker.get(PERSISTENTVOLUMECLAIMS, name, namespace=NS)


def owners(f: Fixture, name: str) -> list[tuple[str, str]]:
    refs = claim(f, name)["metadata"].get("ownerReferences") or []
    return [(r["kind"], r["name"]) for r in refs if r.get("controller")]


async def test_claim_is_labelled_with_the_selector() -> None:
    f = Fixture()
    f.add(new_set(1))

    await f.sync()

    created = claim(f, "datadir-foo-0")
    assert created["metadata"]["labels"] == {"foo": "bar"}
    assert created["spec"]["resources"] == {"requests": {"storage": "1"}}


async def test_existing_claim_is_reused_not_created() -> None:
    f = Fixture()
    f.add(new_set(1))
    f.add(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "datadir-foo-0", "namespace": NS},
            "spec": {},
        }
    )

    await f.sync()

    assert f.created(PERSISTENTVOLUMECLAIMS) == []
    assert f.created() == ["foo-0"]


async def test_claim_being_deleted_blocks_the_pod() -> None:
    f = Fixture()
    f.add(new_set(1))
    f.add(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": "datadir-foo-0",
                "namespace": NS,
                "finalizers": ["kubernetes.io/pvc-protection"],
            },
            "spec": {},
        }
    )
    f.client.tracker.delete(PERSISTENTVOLUMECLAIMS, "datadir-foo-0", namespace=NS)

    with pytest.raises(RuntimeError, match="pvc datadir-foo-0 is being deleted"):
        await f.sync()

    assert f.created() == []
    assert f.recorder.events[-1].startswith(
        "Warning FailedCreate create Pod foo-0 in StatefulSet foo failed error: pvc"
    )


async def test_claim_create_failure_fails_the_pod_create() -> None:
    f = Fixture()
    f.add(new_set(1))

    def refuse(action: Action) -> None:
        raise Forbidden("exceeded quota")

    f.client.prepend_reactor("create", PERSISTENTVOLUMECLAIMS, refuse)

    with pytest.raises(RuntimeError, match="failed to create PVC datadir-foo-0"):
        await f.sync()

    assert f.created() == []
    assert [e.split(" ")[1] for e in f.recorder.events] == ["FailedCreate", "FailedCreate"]


async def test_missing_claim_of_a_pending_pod_is_created_again() -> None:
    f = Fixture()
    f.add(new_set(1))
    await f.sync()
    f.client.tracker.delete(PERSISTENTVOLUMECLAIMS, "datadir-foo-0", namespace=NS)
    f.client.clear_actions()

    await f.sync()  # foo-0 is pending

    assert f.created(PERSISTENTVOLUMECLAIMS) == ["datadir-foo-0"]


@pytest.mark.parametrize(
    ("when_scaled", "when_deleted", "expected"),
    [
        pytest.param("Retain", "Retain", [], id="retain-retain"),
        pytest.param("Retain", "Delete", [("StatefulSet", "foo")], id="retain-delete"),
        pytest.param("Delete", "Retain", [], id="delete-retain"),
        pytest.param("Delete", "Delete", [("StatefulSet", "foo")], id="delete-delete"),
    ],
)
async def test_claims_of_replicas_are_owned_as_the_policy_says(
    when_scaled: str, when_deleted: str, expected: list[tuple[str, str]]
) -> None:
    f = Fixture()
    f.add(new_set(2, **policy(when_scaled, when_deleted)))

    await f.converge()

    assert owners(f, "datadir-foo-0") == expected
    assert owners(f, "datadir-foo-1") == expected


async def test_scale_down_hands_the_condemned_claims_to_their_pods_under_delete() -> None:
    f = Fixture()
    f.add(new_set(3, **policy("Delete", "Retain")))
    await f.converge()
    pod_uid = f.pods()["foo-2"]["metadata"]["uid"]
    f.patch_set({"replicas": 1})
    f.client.clear_actions()

    await f.sync()

    # both condemned claims get their pod as controller before any pod is deleted
    updates = [
        a.object["metadata"]["name"]
        for a in f.client.actions_for("update", PERSISTENTVOLUMECLAIMS)
        if a.object is not None
    ]
    assert sorted(updates) == ["datadir-foo-1", "datadir-foo-2"]
    first_delete = next(i for i, a in enumerate(f.client.actions) if a.verb == "delete")
    last_update = max(
        i for i, a in enumerate(f.client.actions) if a.matches("update", PERSISTENTVOLUMECLAIMS)
    )
    assert last_update < first_delete
    assert f.deleted() == ["foo-2"]
    refs = claim(f, "datadir-foo-2")["metadata"]["ownerReferences"]
    assert [(r["kind"], r["name"], r["uid"]) for r in refs] == [("Pod", "foo-2", pod_uid)]
    assert owners(f, "datadir-foo-0") == []


async def test_scale_down_under_retain_leaves_the_claims_alone() -> None:
    f = Fixture()
    f.add(new_set(3))
    await f.converge()
    f.patch_set({"replicas": 1})
    f.client.clear_actions()

    await f.converge()

    assert f.client.actions_for("update", PERSISTENTVOLUMECLAIMS) == []
    assert len(f.server(PERSISTENTVOLUMECLAIMS)) == 3


async def test_scale_up_again_takes_the_claim_back_from_the_condemned_pod() -> None:
    """A claim a condemned pod owned goes back to the set when the pod is in range again."""
    f = Fixture()
    f.add(new_set(2, **policy("Delete", "Delete")))
    await f.converge()
    f.patch_set({"replicas": 1})
    await f.sync()  # the claim of foo-1 goes to foo-1, then foo-1 is deleted
    assert owners(f, "datadir-foo-1") == [("Pod", "foo-1")]
    # the garbage collector has not removed the claim yet: it is stale for a new foo-1
    f.patch_set({"replicas": 2})
    f.client.clear_actions()

    await f.sync()

    assert f.created() == []  # a stale claim blocks the new foo-1


async def test_claim_of_another_controller_gets_a_warning() -> None:
    f = Fixture()
    f.add(new_set(1, **policy("Retain", "Delete")))
    f.add(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": "datadir-foo-0",
                "namespace": NS,
                "ownerReferences": [
                    {
                        "apiVersion": "example.com/v1",
                        "kind": "Other",
                        "name": "x",
                        "uid": "other",
                        "controller": True,
                    }
                ],
            },
            "spec": {},
        }
    )

    await f.sync()

    assert any(e.startswith("Warning ConflictingController") for e in f.recorder.events)
    assert owners(f, "datadir-foo-0") == [("Other", "x")]
    assert f.created(PODS) == ["foo-0"]

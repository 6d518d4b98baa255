"""Updating a StatefulSet's pods on the fake client (upstream stateful_set_control_test.go:
RollingUpdate, partitions, rollback, OnDelete, MaxUnavailableStatefulSet) and its revisions
(getStatefulSetRevisions with collisions, truncateHistory)."""

from __future__ import annotations

import copy

import pytest
from statefulset_controller_fixtures import KEY, NS, Fixture, new_set

from kcontrol.client import CONTROLLERREVISIONS, PODS, STATEFULSETS
from kcontrol.errors import CannotAdopt
from kcontrol_controllers import history
from kcontrol_controllers.statefulset import _history as history_module
from kcontrol_controllers.statefulset._revisions import new_revision

# -- RollingUpdate ---------------------------------------------------------------------------------


async def test_rolling_update_replaces_pods_from_the_highest_ordinal_one_at_a_time() -> None:
    f = Fixture()
    f.add(new_set(3))
    await f.converge()
    old_revision = f.server_set()["status"]["currentRevision"]
    f.update_template("nginx:2")
    f.client.clear_actions()

    await f.sync()
    assert f.deleted() == ["foo-2"]
    status = f.server_set()["status"]
    new_revision_name = status["updateRevision"]
    assert new_revision_name != old_revision
    assert status["currentRevision"] == old_revision
    assert status["currentReplicas"] == 2  # the deleted pod is no longer current
    assert status["observedGeneration"] == 2

    f.client.clear_actions()
    await f.sync()
    assert f.created() == ["foo-2"]
    assert f.revision_of("foo-2") == new_revision_name
    assert f.pods()["foo-2"]["spec"]["containers"][0]["image"] == "nginx:2"

    f.client.clear_actions()
    await f.sync()  # foo-2 is pending: the update waits for it
    assert f.deleted() == []
    f.set_status("foo-2")
    await f.sync()
    assert f.deleted() == ["foo-1"]

    await f.converge()
    assert {f.revision_of(p) for p in f.pods()} == {new_revision_name}
    status = f.server_set()["status"]
    assert status["currentRevision"] == status["updateRevision"] == new_revision_name
    assert status["currentReplicas"] == status["updatedReplicas"] == 3


async def test_partition_keeps_lower_ordinals_at_the_current_revision() -> None:
    f = Fixture()
    f.add(new_set(3, partition=1))
    await f.converge()
    old_revision = f.server_set()["status"]["currentRevision"]
    f.update_template("nginx:2")

    await f.converge()

    new_name = f.server_set()["status"]["updateRevision"]
    assert f.revision_of("foo-0") == old_revision
    assert f.revision_of("foo-1") == f.revision_of("foo-2") == new_name
    status = f.server_set()["status"]
    assert status["currentRevision"] == old_revision  # not complete below the partition
    assert (status["currentReplicas"], status["updatedReplicas"]) == (1, 2)

    # a pod below the partition deleted is made again at the current revision
    f.client.tracker.delete(PODS, "foo-0", namespace=NS)
    await f.converge()
    assert f.revision_of("foo-0") == old_revision

    # lowering the partition finishes the rollout
    f.patch_set({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}})
    await f.converge()
    assert f.revision_of("foo-0") == new_name
    assert f.server_set()["status"]["currentRevision"] == new_name


async def test_rollback_renumbers_the_old_revision_instead_of_creating_one() -> None:
    f = Fixture()
    f.add(new_set(2))
    await f.converge()
    first = f.server_set()["status"]["currentRevision"]
    f.update_template("nginx:2")
    await f.converge()
    second = f.server_set()["status"]["currentRevision"]
    f.update_template("nginx")  # back to the first template
    f.client.clear_actions()

    await f.sync()

    assert f.created(CONTROLLERREVISIONS) == []
    assert f.updated(CONTROLLERREVISIONS) == [first]
    revisions = {r["metadata"]["name"]: r["revision"] for r in f.revisions()}
    assert revisions == {second: 2, first: 3}
    assert f.server_set()["status"]["updateRevision"] == first
    await f.converge()
    assert {f.revision_of(p) for p in f.pods()} == {first}


async def test_on_delete_only_replaces_pods_deleted_by_hand() -> None:
    f = Fixture()
    f.add(new_set(3, updateStrategy={"type": "OnDelete"}))
    await f.converge()
    old_revision = f.server_set()["status"]["currentRevision"]
    f.update_template("nginx:2")

    await f.converge()
    assert f.deleted() == []
    assert {f.revision_of(p) for p in f.pods()} == {old_revision}

    f.client.tracker.delete(PODS, "foo-1", namespace=NS)
    await f.converge()
    new_name = f.server_set()["status"]["updateRevision"]
    assert f.revision_of("foo-1") == new_name
    assert f.revision_of("foo-0") == f.revision_of("foo-2") == old_revision
    status = f.server_set()["status"]
    assert status["currentRevision"] == old_revision  # OnDelete never completes by itself
    assert (status["currentReplicas"], status["updatedReplicas"]) == (2, 1)


async def test_rolling_update_waits_for_an_unavailable_pod_above_the_target() -> None:
    f = Fixture()
    f.add(new_set(3, podManagementPolicy="Parallel"))
    await f.converge()
    f.update_template("nginx:2")
    await f.sync()  # deletes foo-2
    await f.sync()  # makes it again, at the new revision
    f.client.clear_actions()

    await f.sync()  # foo-2 is pending

    assert f.deleted() == []


@pytest.mark.parametrize(
    ("feature", "expected"),
    [
        pytest.param(False, ["foo-3"], id="gate-off-one-at-a-time"),
        pytest.param(True, ["foo-3", "foo-2"], id="gate-on-max-unavailable-2"),
    ],
)
async def test_max_unavailable_only_with_the_feature(feature: bool, expected: list[str]) -> None:
    f = Fixture(max_unavailable=feature)
    f.add(new_set(4, podManagementPolicy="Parallel", max_unavailable=2))
    await f.converge()
    f.update_template("nginx:2")
    f.client.clear_actions()

    await f.sync()

    assert f.deleted() == expected


async def test_max_unavailable_counts_pods_already_unavailable() -> None:
    f = Fixture(max_unavailable=True)
    f.add(new_set(4, podManagementPolicy="Parallel", max_unavailable=2))
    await f.converge()
    f.set_status("foo-0", ready=False)
    f.update_template("nginx:2")
    f.client.clear_actions()

    await f.sync()

    assert f.deleted() == ["foo-3"]
    sample = f.registry.get_sample_value(
        "statefulset_controller_statefulset_unavailable_replicas",
        {
            "statefulset_namespace": NS,
            "statefulset_name": "foo",
            "pod_management_policy": "Parallel",
        },
    )
    assert sample == 1


# -- revisions -------------------------------------------------------------------------------------


async def test_first_sync_creates_the_revision_and_labels_pods_with_it() -> None:
    f = Fixture()
    f.add(new_set(1))

    await f.sync()

    (revision,) = f.revisions()
    assert revision["revision"] == 1
    name = revision["metadata"]["name"]
    assert name.startswith("foo-")
    assert revision["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
    assert f.revision_of("foo-0") == name
    assert f.last_status()["currentRevision"] == f.last_status()["updateRevision"] == name


async def test_name_collision_bumps_the_collision_count() -> None:
    f = Fixture()
    set_ = f.add(new_set(1))
    # Another revision already holds the name this set's first revision would get.
    mine = new_revision(set_, 1, 0)
    squatter = new_revision(set_, 1, 0)
    squatter["data"] = {"spec": {"template": {"$patch": "replace", "metadata": {}}}}
    squatter["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    f.add(squatter)

    await f.sync()

    assert f.last_status()["collisionCount"] == 1
    expected = history.controller_revision_name("foo", history.hash_controller_revision(mine, 1))
    assert f.last_status()["updateRevision"] == expected
    assert f.revision_of("foo-0") == expected


async def test_history_is_truncated_to_the_limit_oldest_first() -> None:
    f = Fixture()
    f.add(new_set(1, revisionHistoryLimit=1))
    await f.converge()
    names = [f.server_set()["status"]["currentRevision"]]
    for image in ("nginx:2", "nginx:3", "nginx:4"):
        f.update_template(image)
        await f.converge()
        names.append(f.server_set()["status"]["currentRevision"])

    remaining = [r["metadata"]["name"] for r in f.revisions()]
    # the live revision and one historic one: the newest of the others
    assert remaining == [names[2], names[3]]


async def test_revisions_of_pods_are_kept_beyond_the_limit() -> None:
    f = Fixture()
    f.add(new_set(2, revisionHistoryLimit=0, updateStrategy={"type": "OnDelete"}))
    await f.converge()
    first = f.server_set()["status"]["currentRevision"]
    f.update_template("nginx:2")
    await f.converge()
    f.update_template("nginx:3")
    await f.converge()

    remaining = {r["metadata"]["name"] for r in f.revisions()}
    # the pods' (and current) revision and the update revision; nginx:2's is gone
    assert remaining == {first, f.server_set()["status"]["updateRevision"]}


async def test_orphan_revision_is_adopted() -> None:
    f = Fixture()
    set_ = f.add(new_set(1))
    orphan = new_revision(set_, 1, 0)
    del orphan["metadata"]["ownerReferences"]
    f.add(orphan)

    await f.sync()

    assert [a.name for a in f.client.actions_for("patch", CONTROLLERREVISIONS)] == [
        orphan["metadata"]["name"]
    ]
    assert f.created(CONTROLLERREVISIONS) == []  # the adopted one is the update revision
    (revision,) = f.revisions()
    assert revision["metadata"]["ownerReferences"][0]["uid"] == set_["metadata"]["uid"]


async def test_orphan_revision_of_a_replaced_set_is_not_adopted() -> None:
    """The live set has another UID than the cached one (deleted and created again): the
    pre-adoption check refuses and nothing is patched."""
    f = Fixture()
    set_ = f.add(new_set(1))
    orphan = new_revision(set_, 1, 0)
    del orphan["metadata"]["ownerReferences"]
    f.add(orphan)
    f.observe()
    cached = copy.deepcopy(set_)
    cached["metadata"]["uid"] = "an-earlier-uid"
    f.caches[STATEFULSETS].update(cached)

    with pytest.raises(CannotAdopt, match="can't adopt ControllerRevisions"):
        await f.ssc.sync(KEY)

    assert f.client.actions_for("patch") == []
    assert f.created() == []


async def test_the_update_revision_is_not_built_again_while_set_and_history_are_unchanged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Building the would-be revision was a fifth of a sync that changes nothing (bench.syncs);
    # the same set generation over the very same cached revisions gives the same answer.
    f = Fixture()
    f.add(new_set(3))
    await f.converge()
    first_revision = f.server_set()["status"]["updateRevision"]
    built: list[int] = []

    def counting(*args: object) -> object:
        built.append(1)
        return new_revision(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(history_module, "new_revision", counting)
    f.observe()
    await f.ssc.sync(KEY)
    await f.ssc.sync(KEY)  # the same cached set and revisions
    assert len(built) == 1
    assert f.server_set()["status"]["updateRevision"] == first_revision

    # A new template comes with a new generation: seen with the very same cached revisions,
    # the revision is built again, created and rolled out.
    f.update_template("nginx:2")
    f.caches[STATEFULSETS].replace(f.server(STATEFULSETS))
    f.client.clear_actions()
    await f.ssc.sync(KEY)
    assert len(built) == 2
    assert len(f.created(CONTROLLERREVISIONS)) == 1
    assert f.deleted() == ["foo-2"]
    second_revision = f.server_set()["status"]["updateRevision"]
    assert second_revision != first_revision
    await f.converge()

    # And back: the older revision is the update revision again (renumbered), not the one
    # remembered from before.
    f.update_template("nginx")
    f.client.clear_actions()
    await f.sync()
    assert f.server_set()["status"]["updateRevision"] == first_revision
    assert f.deleted() == ["foo-2"]

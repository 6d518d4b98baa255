"""Rollback through the deprecated rollbackTo annotation, and ``kubectl rollout undo``
(which patches the template back)."""

from __future__ import annotations

import copy
from typing import Any

from deployment_fixtures import Fixture, new_deployment, new_replica_set

from kcontrol.client import DEPLOYMENTS, REPLICASETS

ROLLBACK_TO = "deprecated.deployment.rollback.to"
REVISION = "deployment.kubernetes.io/revision"


def history(
    rollback_to: str | None,
) -> tuple[Fixture, dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A Deployment at revision 2 (image v2) whose revision 1 used image v1."""
    f = Fixture()
    d = new_deployment("foo", 2, max_surge=1, max_unavailable=0)
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "foo:v2"
    d["metadata"]["annotations"] = {REVISION: "2", "change-cause": "edit"}
    if rollback_to is not None:
        d["metadata"]["annotations"][ROLLBACK_TO] = rollback_to
    v1 = new_replica_set(d, "foo-v1", 0, revision=1, created=1)
    v1["spec"]["template"]["spec"]["containers"][0]["image"] = "foo:v1"
    v1["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] = "v1hash"
    v1["metadata"]["annotations"]["change-cause"] = "create"
    v2 = new_replica_set(d, "foo-v2", 2, revision=2, created=2)
    v2["metadata"]["annotations"]["change-cause"] = "edit"
    d, v1, v2 = f.seed(d, v1, v2)
    return f, d, v1, v2


async def test_rollback_to_previous_revision() -> None:
    f, d, _, _ = history("0")

    await f.sync(d)

    assert f.summary() == ["update deployments"]
    body = f.writes()[0].object
    assert body is not None
    assert body["spec"]["template"]["spec"]["containers"][0]["image"] == "foo:v1"
    assert body["spec"]["template"]["metadata"]["labels"] == {"foo": "bar"}  # no hash label
    assert body["metadata"]["annotations"] == {REVISION: "2", "change-cause": "create"}
    assert body["metadata"]["resourceVersion"] == d["metadata"]["resourceVersion"]
    assert f.recorder.events == [
        'Normal DeploymentRollback Rolled back deployment "foo" to revision 1'
    ]


async def test_rollback_to_a_given_revision() -> None:
    f, d, _, _ = history("1")
    await f.sync(d)
    body = f.writes()[0].object
    assert body is not None
    assert body["spec"]["template"]["spec"]["containers"][0]["image"] == "foo:v1"


async def test_rollback_to_missing_revision_gives_up() -> None:
    f, d, _, _ = history("7")

    await f.sync(d)

    assert f.summary() == ["update deployments"]
    body = f.writes()[0].object
    assert body is not None
    assert ROLLBACK_TO not in body["metadata"]["annotations"]
    assert body["spec"]["template"] == d["spec"]["template"]  # unchanged
    assert f.recorder.events == [
        "Warning DeploymentRollbackRevisionNotFound Unable to find the revision to rollback to."
    ]


async def test_rollback_without_previous_revision_gives_up() -> None:
    f = Fixture()
    d = new_deployment("foo", 1)
    d["metadata"]["annotations"] = {REVISION: "1", ROLLBACK_TO: "0"}
    only = new_replica_set(d, "foo-only", 1, revision=1)
    d, _ = f.seed(d, only)

    await f.sync(d)

    assert f.summary() == ["update deployments"]
    assert f.recorder.events == [
        "Warning DeploymentRollbackRevisionNotFound Unable to find last revision."
    ]


async def test_rollback_to_the_current_template_is_a_no_op() -> None:
    f, d, _, _ = history("2")

    await f.sync(d)

    assert f.summary() == ["update deployments"]
    body = f.writes()[0].object
    assert body is not None
    assert ROLLBACK_TO not in body["metadata"]["annotations"]
    assert f.recorder.events == [
        "Warning DeploymentRollbackTemplateUnchanged The rollback revision contains the same "
        'template as current deployment "foo"'
    ]


async def test_invalid_rollback_annotation_is_ignored() -> None:
    f, d, _, _ = history("not-a-number")
    await f.sync(d)
    assert "update deployments" not in f.summary()  # an ordinary rolling sync instead
    assert f.recorder.events == []


async def test_kubectl_rollout_undo_reuses_the_old_replica_set() -> None:
    """``kubectl rollout undo`` patches the template to revision 1's: the controller finds
    foo-v1 by template equality (its hash label differs), gives it revision 3 with history
    "1", and scales it up instead of creating a ReplicaSet."""
    f, d, _, v2 = history(None)
    undone = copy.deepcopy(d)
    undone["spec"]["template"]["spec"]["containers"][0]["image"] = "foo:v1"
    undone["metadata"]["annotations"]["change-cause"] = "create"
    (undone,) = f.seed(undone)

    # The scaling-event check syncs foo-v1's revision first; the rollout's own pass then works
    # from the cache, which has not seen that write yet. Its write would conflict (upstream
    # sends it, gets 409 and retries): it is not sent, and the sync ends quietly, to run
    # again on the informer's event for the first write.
    assert await f.sync(undone) is None

    assert f.client.actions_for("create", REPLICASETS) == []
    (first,) = f.client.actions_for("patch", REPLICASETS)
    assert first.name == "foo-v1"
    assert first.patch["metadata"]["annotations"] == {
        REVISION: "3",
        "deployment.kubernetes.io/revision-history": "1",
    }

    # a second pass, with the caches caught up: the Deployment takes revision 3 and v1 grows
    (fresh_v1,) = [
        r for r in f.client.tracker.list(REPLICASETS)["items"] if r["metadata"]["name"] == "foo-v1"
    ]
    f.informers.for_resource(REPLICASETS).indexer.update(fresh_v1)
    (fresh_d,) = f.client.tracker.list(DEPLOYMENTS)["items"]
    f.informers.for_resource(DEPLOYMENTS).indexer.update(fresh_d)
    f.client.clear_actions()

    await f.sync(fresh_d)

    status_write = f.writes()[0]
    assert str(status_write) == "update deployments default/foo/status"
    assert status_write.object is not None
    assert status_write.object["metadata"]["annotations"][REVISION] == "3"
    grown = [a for a in f.client.actions_for("patch", REPLICASETS) if "spec" in a.patch]
    assert [(a.name, a.patch["spec"]["replicas"]) for a in grown] == [("foo-v1", 1)]
    assert v2["metadata"]["name"] == "foo-v2"

"""The StatefulSet controller's wiring on the fake client (upstream stateful_set_test.go):
which events queue which set, adopting and releasing pods, the status written, the
minReadySeconds requeue, the consistency check and the SPEC."""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest
from statefulset_controller_fixtures import KEY, NS, Fixture, new_set

from kcontrol.client import PODS, STATEFULSETS, Object
from kcontrol.controller import Result
from kcontrol.errors import AlreadyExists, StaleCache
from kcontrol.informers import DeletedFinalStateUnknown
from kcontrol_controllers.statefulset import SPEC
from tests.controllers.worker_helpers import sync_as_worker


async def drain(f: Fixture) -> list[str]:
    queue = f.ssc.controller.queue
    keys = []
    while len(queue):
        key = await queue.get()
        queue.done(key)
        keys.append(key)
    return keys


def orphan(f: Fixture, name: str, **labels: str) -> Object:
    """A copy of the set's first pod, named ``name``, without owner, with ``labels`` (default:
    the selector's and the pod's revision label)."""
    pod = copy.deepcopy(next(iter(f.pods().values())))
    revision = pod["metadata"]["labels"]["controller-revision-hash"]
    pod["metadata"] = {
        "name": name,
        "namespace": NS,
        "labels": labels or {"foo": "bar", "controller-revision-hash": revision},
        "resourceVersion": "1",
    }
    return pod


# -- handlers --------------------------------------------------------------------------------------


async def test_pod_events_queue_their_controller() -> None:
    f = Fixture()
    f.add(new_set(1))
    await f.converge()
    await drain(f)
    pod = f.pods()["foo-0"]

    f.ssc.add_pod(pod)
    assert await drain(f) == [KEY]
    newer = copy.deepcopy(pod)
    newer["metadata"]["resourceVersion"] = "999"
    f.ssc.update_pod(pod, newer)
    assert await drain(f) == [KEY]
    f.ssc.update_pod(pod, pod)  # a resync
    assert await drain(f) == []
    f.ssc.delete_pod(DeletedFinalStateUnknown(f"{NS}/foo-0", pod))
    assert await drain(f) == [KEY]


async def test_pod_of_another_set_or_a_gone_set_queues_nothing() -> None:
    f = Fixture()
    f.add(new_set(1))
    await f.converge()
    await drain(f)
    pod = copy.deepcopy(f.pods()["foo-0"])
    pod["metadata"]["ownerReferences"][0]["uid"] = "another"

    f.ssc.add_pod(pod)
    f.ssc.delete_pod(pod)

    assert await drain(f) == []


async def test_orphan_pod_queues_every_set_selecting_it() -> None:
    f = Fixture()
    f.add(new_set(1))
    await f.converge()
    await drain(f)

    f.ssc.add_pod(orphan(f, "foo-5"))
    assert await drain(f) == [KEY]
    f.ssc.add_pod(orphan(f, "foo-6", app="other"))
    assert await drain(f) == []


async def test_pod_becoming_ready_requeues_after_min_ready_seconds() -> None:
    f = Fixture()
    f.add(new_set(1, minReadySeconds=30))
    await f.sync()
    f.observe()
    await drain(f)
    pending = f.pods()["foo-0"]
    ready = f.set_status("foo-0", ready_for=timedelta(0))

    f.ssc.update_pod(pending, ready)

    assert await drain(f) == [KEY]
    assert f.ssc.controller.queue.waiting_len() == 1
    f.clock.step(30.999)  # minReadySeconds and a second, as upstream
    assert await drain(f) == []
    f.clock.step(0.001)
    assert await drain(f) == [KEY]

    # staying ready schedules nothing more
    f.ssc.update_pod(ready, {**ready, "metadata": {**ready["metadata"], "resourceVersion": "x"}})
    assert await drain(f) == [KEY]
    assert f.ssc.controller.queue.waiting_len() == 0


async def test_set_events_queue_the_set() -> None:
    f = Fixture()
    set_ = f.add(new_set(1))

    f.ssc.add_stateful_set(set_)
    f.ssc.update_stateful_set(set_, set_)
    f.ssc.delete_stateful_set(DeletedFinalStateUnknown(KEY, set_))

    assert await drain(f) == [KEY]


# -- claiming pods ---------------------------------------------------------------------------------


async def test_orphan_member_is_adopted_and_a_non_member_is_not() -> None:
    f = Fixture()
    set_ = f.add(new_set(1))
    await f.converge()
    f.add(orphan(f, "foo-1"))
    f.add(orphan(f, "bar-0"))
    f.patch_set({"replicas": 2})
    f.client.clear_actions()

    await f.sync()

    assert [a.name for a in f.client.actions_for("patch", PODS)] == ["foo-1"]
    refs = f.pods()["foo-1"]["metadata"]["ownerReferences"]
    assert refs[0]["uid"] == set_["metadata"]["uid"] and refs[0]["controller"] is True
    assert "ownerReferences" not in f.pods()["bar-0"]["metadata"]
    assert f.created() == []  # the adopted pod is the replica foo-1


async def test_adopted_pod_beyond_the_range_is_condemned() -> None:
    f = Fixture()
    f.add(new_set(1))
    await f.converge()
    f.add(orphan(f, "foo-1"))
    f.client.clear_actions()

    await f.sync()

    assert [a.name for a in f.client.actions_for("patch", PODS)] == ["foo-1"]
    assert f.deleted() == ["foo-1"]


async def test_owned_pod_that_stopped_matching_is_released() -> None:
    f = Fixture()
    f.add(new_set(2))
    await f.converge()
    pod = f.pods()["foo-1"]
    pod["metadata"]["labels"] = {"foo": "other"}
    f.client.tracker.update(PODS, pod, namespace=NS)
    f.client.clear_actions()

    # the replacement's name is taken by the released pod: the sync fails until it goes
    with pytest.raises(AlreadyExists):
        await f.sync()

    assert [a.name for a in f.client.actions_for("patch", PODS)] == ["foo-1"]
    assert not f.pods()["foo-1"]["metadata"].get("ownerReferences")


# -- status ----------------------------------------------------------------------------------------


async def test_status_is_not_written_when_nothing_changed() -> None:
    f = Fixture()
    f.add(new_set(2))
    await f.converge()
    f.client.clear_actions()

    await f.sync()

    assert f.status_updates() == []


async def test_a_superseded_report_is_left_out_never_twice_in_a_row() -> None:
    """A status that changes only what nothing decides from (here the ready count) is left
    to the pass that follows when the set was queued again meanwhile, but never twice in a
    row; the syncs run as the runner's workers run them (kcontrol.controller.superseded)."""
    f = Fixture()
    f.add(new_set(3))
    await f.converge()

    f.set_status("foo-2", ready=False)
    f.observe()
    f.client.clear_actions()
    await sync_as_worker(f.ssc.controller, KEY, event_during=True)
    assert f.writes() == [], "the ready count is left to the pass that follows"

    await sync_as_worker(f.ssc.controller, KEY, event_during=True)  # the pass that follows
    assert [a.object["status"]["readyReplicas"] for a in f.status_updates() if a.object] == [2]


async def test_a_rolling_update_writes_what_the_next_pass_decides_from() -> None:
    """A StatefulSet's status is partly state the next pass decides from: without a
    rollingUpdate block, a re-created member takes the current revision while its ordinal is
    below the stored status.currentReplicas. So a pass writes a status that changes them
    even when the set was queued again meanwhile, and a rolling update with every other pass
    superseded replaces each pod once (left out, the next pass re-created pods at the old
    revision, to be replaced again)."""
    f = Fixture()
    f.add(new_set(5))
    await f.converge()
    f.update_template("nginx:2")
    f.client.clear_actions()
    queue = f.ssc.controller.queue
    for round_ in range(40):
        f.run_all()
        f.observe()
        # an event arrives while every other pass runs
        await sync_as_worker(f.ssc.controller, KEY, event_during=round_ % 2 == 0)
        while len(queue):
            queue.done(await queue.get())
    assert f.deleted() == ["foo-4", "foo-3", "foo-2", "foo-1", "foo-0"]
    assert f.created() == ["foo-4", "foo-3", "foo-2", "foo-1", "foo-0"]
    assert {f.revision_of(f"foo-{i}") for i in range(5)} == {
        f.server_set()["status"]["updateRevision"]
    }


async def test_status_counts_and_generation() -> None:
    f = Fixture()
    f.add(new_set(3, podManagementPolicy="Parallel", minReadySeconds=60))
    await f.sync()
    f.observe()
    f.set_status("foo-0")  # ready for an hour: available
    f.set_status("foo-1", ready_for=timedelta(seconds=10))  # ready, not yet available
    f.client.clear_actions()

    result = await f.sync()

    status = f.last_status()
    assert status["replicas"] == 3
    assert status["readyReplicas"] == 2
    assert status["availableReplicas"] == 1
    assert status["currentReplicas"] == status["updatedReplicas"] == 3
    assert status["observedGeneration"] == 1
    assert result == Result(requeue_after=60.0)


async def test_a_spec_update_of_a_terminating_set_only_writes_status() -> None:
    f = Fixture()
    f.add(new_set(2))
    await f.converge()
    set_ = f.server_set()
    set_["metadata"]["finalizers"] = ["example.com/keep"]
    f.client.tracker.update(STATEFULSETS, set_, namespace=NS)
    f.client.tracker.delete(STATEFULSETS, "foo", namespace=NS)
    f.patch_set({"replicas": 5})
    f.client.clear_actions()

    await f.sync()

    assert f.created() == [] and f.deleted() == []
    assert f.last_status()["observedGeneration"] == f.server_set()["metadata"]["generation"]


async def test_stale_cache_puts_the_sync_off() -> None:
    f = Fixture()
    f.add(new_set(1))
    f.observe()
    f.ssc.consistency.wrote_at(KEY, "test", PODS, "999999")
    f.ssc.consistency._informers[PODS] = lambda: "5"  # the pod informer is behind

    with pytest.raises(StaleCache):  # the runner retries it
        await f.ssc.sync(KEY)
    assert f.writes() == []


def test_spec_is_opt_in_with_its_flag() -> None:
    assert SPEC.name == "statefulset-controller"
    assert SPEC.enabled_by_default is False
    workers, max_unavailable = SPEC.flags
    assert (workers.name, workers.default) == ("concurrent-statefulset-syncs", 5)
    assert (max_unavailable.name, max_unavailable.default) == ("statefulset-max-unavailable", False)
    assert max_unavailable.parse("true") is True
    assert max_unavailable.parse("false") is False

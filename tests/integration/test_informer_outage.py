"""Outages: changes the informer never saw as events, and a crashed apiserver.

- Cut off, then 410: the informer's connection goes silent while objects are deleted, created
  and changed straight on the apiserver; then its stream breaks and its next watch is refused
  with 410 Gone. It must relist: objects deleted in the gap reach the handler as
  ``DeletedFinalStateUnknown`` tombstones carrying the last state it knew, new ones as adds,
  and the cache must equal a fresh LIST.
- The apiserver is killed (SIGKILL), or stopped (SIGTERM), under a running informer's open
  watch and started again: the informer
  backs off through the refused connections without dying and converges on changes made after
  the restart, without the test restarting it.
"""

from __future__ import annotations

import pytest

from kcontrol.client import CONFIGMAPS
from kcontrol.envtest import ControlPlane
from kcontrol.errors import ApiConnectionError
from kcontrol.informers import DeletedFinalStateUnknown, SharedIndexInformer

from .helpers import (
    Recorder,
    configmap,
    is_list,
    is_watch,
    namespaces,
    new_client,
    new_proxy,
    poll,
    running,
    wait_converged,
)


def data_of(obj: dict[str, object] | None) -> object:
    return None if obj is None else obj.get("data")


async def test_relist_after_cut_off_and_410_sends_tombstones(
    control_plane: ControlPlane, namespace: str
) -> None:
    async with (
        new_client(control_plane) as writer,
        new_proxy(control_plane) as proxy,
        new_client(control_plane, proxy.host) as informer_client,
    ):
        for index in range(5):
            await writer.create(CONFIGMAPS, configmap(f"cm-{index}", namespace, v="0"))
        informer = SharedIndexInformer(informer_client, CONFIGMAPS, namespace=namespace)
        recorder = Recorder()
        informer.add_event_handler(recorder)

        async with running(informer) as (task,):
            # cm-1 changes once through the live watch: that is the last state the informer
            # will know of it.
            await writer.patch(CONFIGMAPS, "cm-1", {"data": {"v": "1"}}, namespace=namespace)
            await poll(
                lambda: data_of(recorder.state.get(f"{namespace}/cm-1", {})) == {"v": "1"},
                within=10,
                message="the live watch did not deliver cm-1's change",
            )
            last_known = {
                key: informer.indexer.get_by_key(key)
                for key in (f"{namespace}/cm-0", f"{namespace}/cm-1")
            }
            lists_before = proxy.count(is_list)

            proxy.blackhole()  # the informer is cut off; the writer is not
            await writer.patch(CONFIGMAPS, "cm-1", {"data": {"v": "2"}}, namespace=namespace)
            await writer.delete(CONFIGMAPS, "cm-0", namespace=namespace)
            await writer.delete(CONFIGMAPS, "cm-1", namespace=namespace)
            await writer.patch(CONFIGMAPS, "cm-2", {"data": {"v": "3"}}, namespace=namespace)
            await writer.create(CONFIGMAPS, configmap("new-0", namespace, v="0"))
            await writer.create(CONFIGMAPS, configmap("new-1", namespace, v="0"))
            # Its stream breaks, and its next watch is told its version is gone.
            proxy.inject(410, match=lambda request: request.query.get("watch") == "true")
            await proxy.drop_connections()
            proxy.restore()

            expected = await wait_converged(
                informer, writer, recorder, within=20, namespace=namespace
            )
            assert not task.done()

        assert set(expected) == {
            f"{namespace}/{name}" for name in ("cm-2", "cm-3", "cm-4", "new-0", "new-1")
        }
        # The relist came from the 410: a 410'd watch, then a LIST.
        answers = [(is_watch(r), is_list(r), r.answered_by) for r in proxy.requests]
        assert (True, False, "injected:410") in answers
        assert proxy.count(is_list) == lists_before + 1

        tombstones = recorder.of_kind("delete")
        assert all(isinstance(t, DeletedFinalStateUnknown) for t in tombstones), tombstones
        assert {t.key: t.obj for t in tombstones} == last_known
        assert data_of(last_known[f"{namespace}/cm-1"]) == {"v": "1"}  # not the unseen v=2
        added = [obj["metadata"]["name"] for obj in recorder.of_kind("add")]
        assert sorted(added[-2:]) == ["new-0", "new-1"]
        assert not {f"{namespace}/new-0", f"{namespace}/new-1"} & set(recorder.initial_adds)
        updated = [obj["metadata"]["name"] for obj in recorder.of_kind("update")]
        assert updated == ["cm-1", "cm-2"], "the relist announces no unchanged object"


@pytest.mark.integration
@pytest.mark.parametrize("how", ["kill", "stop"])
async def test_informer_survives_apiserver_crash_and_restart(how: str) -> None:
    async with (
        ControlPlane() as plane,
        new_client(plane, timeout=5) as client,
        namespaces(client, 1) as (namespace,),
    ):
        for index in range(4):
            await client.create(CONFIGMAPS, configmap(f"cm-{index}", namespace, v="0"))
        informer = SharedIndexInformer(client, CONFIGMAPS, namespace=namespace)
        recorder = Recorder()
        informer.add_event_handler(recorder)
        errors: list[Exception] = []
        informer.set_watch_error_handler(errors.append)

        async with running(informer) as (task,):
            # The watch is open (it delivers a change) when the apiserver dies.
            await client.patch(CONFIGMAPS, "cm-3", {"data": {"v": "1"}}, namespace=namespace)
            await poll(
                lambda: recorder.state[f"{namespace}/cm-3"]["data"] == {"v": "1"},
                within=10,
                message="the watch did not deliver before the crash",
            )
            if how == "kill":
                plane.kill_apiserver()  # SIGKILL: a crash
            else:
                await plane.stop_apiserver()  # SIGTERM: a graceful shutdown
            # The informer sees refused connections and backs off, without dying.
            await poll(
                lambda: sum(isinstance(e, ApiConnectionError) for e in errors) >= 2,
                within=15,
                message=lambda: f"errors seen: {errors}",
            )
            assert not task.done()
            await plane.start_apiserver()

            await client.delete(CONFIGMAPS, "cm-0", namespace=namespace)
            await client.patch(CONFIGMAPS, "cm-1", {"data": {"v": "1"}}, namespace=namespace)
            await client.create(CONFIGMAPS, configmap("new", namespace, v="0"))
            expected = await wait_converged(
                informer, client, recorder, within=35, namespace=namespace
            )
            assert not task.done()

        assert set(expected) == {f"{namespace}/{n}" for n in ("cm-1", "cm-2", "cm-3", "new")}
        assert recorder.state[f"{namespace}/cm-1"]["data"] == {"v": "1"}

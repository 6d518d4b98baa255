"""Half-open TCP: the informer's watch connection goes silent without closing, while new
connections work. The reflector must notice the dead watch by its inactivity limit, re-watch
from its last resourceVersion and deliver every change made during the outage.

The fault proxy first goes silent (:meth:`FaultProxy.blackhole`) while the test writes
straight to the apiserver, then freezes the streams open at that point for good
(:meth:`FaultProxy.freeze_existing_streams`) and answers new requests again: the old watch
connection never relays another byte nor ends, as after a lost peer on a real network.
"""

from __future__ import annotations

import time

from kcontrol.client import CONFIGMAPS
from kcontrol.envtest import ControlPlane
from kcontrol.informers import DeletedFinalStateUnknown, ReflectorOptions, SharedIndexInformer

from .helpers import (
    Recorder,
    configmap,
    is_list,
    is_watch,
    new_client,
    new_proxy,
    poll,
    running,
    served,
    wait_converged,
)

INACTIVITY = 5.0
FIRST_BACKOFF = 1.6  # the longest first backoff step (0.8 s + 100 % jitter), if any
SLACK = 4.0  # a loaded 2-core machine


async def test_half_open_watch_is_detected_and_outage_changes_delivered(
    control_plane: ControlPlane, namespace: str
) -> None:
    async with (
        new_client(control_plane) as writer,
        new_proxy(control_plane) as proxy,
        new_client(control_plane, proxy.host) as informer_client,
    ):
        for index in range(4):
            await writer.create(CONFIGMAPS, configmap(f"cm-{index}", namespace, v="0"))
        informer = SharedIndexInformer(
            informer_client,
            CONFIGMAPS,
            namespace=namespace,
            # Long server-side watches: only the inactivity limit can end the dead one.
            reflector_options=ReflectorOptions(
                watch_inactivity_timeout=INACTIVITY, min_watch_timeout=600
            ),
        )
        recorder = Recorder()
        informer.add_event_handler(recorder)
        errors: list[Exception] = []
        informer.set_watch_error_handler(errors.append)

        async with running(informer) as (task,):
            # The watch is live: a change arrives through it.
            await writer.patch(CONFIGMAPS, "cm-0", {"data": {"v": "1"}}, namespace=namespace)
            await poll(
                lambda: recorder.state.get(f"{namespace}/cm-0", {}).get("data") == {"v": "1"},
                within=10,
                message="the healthy watch did not deliver",
            )
            watches_before = proxy.count(lambda r: is_watch(r) and served(r))

            outage = time.monotonic()
            proxy.blackhole()
            await writer.patch(CONFIGMAPS, "cm-1", {"data": {"v": "2"}}, namespace=namespace)
            await writer.delete(CONFIGMAPS, "cm-2", namespace=namespace)
            await writer.create(CONFIGMAPS, configmap("cm-new", namespace, v="3"))
            frozen = proxy.freeze_existing_streams()
            proxy.restore()
            assert frozen >= 1  # the informer's watch
            # cm-3 changes after the outage, through the new watch only.
            await writer.patch(CONFIGMAPS, "cm-3", {"data": {"v": "4"}}, namespace=namespace)

            expected = await wait_converged(
                informer,
                writer,
                recorder,
                within=INACTIVITY + FIRST_BACKOFF + SLACK + 10,
                namespace=namespace,
            )
            took = time.monotonic() - outage
            assert took <= INACTIVITY + FIRST_BACKOFF + SLACK, f"recovered after {took:.1f} s"
            assert set(expected) == {f"{namespace}/cm-{i}" for i in (0, 1, 3, "new")}
            assert not task.done()

        # Detected as a dead watch, not as a broken connection or an expired version...
        assert any(type(e).__name__ == "InactivityTimeoutError" for e in errors), errors
        # ...and resumed by a new watch, not a relist: every change arrived as a watch event,
        # the deletion with its final state rather than as a tombstone.
        assert proxy.count(lambda r: is_watch(r) and served(r)) > watches_before
        assert proxy.count(is_list) == 1
        deleted = recorder.of_kind("delete")
        assert len(deleted) == 1
        assert not isinstance(deleted[0], DeletedFinalStateUnknown)
        assert deleted[0]["metadata"]["name"] == "cm-2"

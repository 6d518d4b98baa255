"""Forced watch expiry: the apiserver ends every watch after a few seconds while one object is
patched twice a second; the informer must deliver exactly the written sequence.

The apiserver ends a watch after the request's ``timeoutSeconds``; only a watch that sends no
``timeoutSeconds`` gets a random ``[1, 2) x --min-request-timeout`` instead
(``k8s.io/apiserver/pkg/endpoints/handlers/get.go``, ``handleWatch``). The reflector, as
client-go's, always sends one (``[1, 2) x min_watch_timeout``), so the flag alone would not
shorten its watches: the test asks for 3-5 s watches through ``ReflectorOptions`` instead, and
the server enforces them. Every watch request goes through a fault proxy (injecting nothing)
so the test can count them.
"""

from __future__ import annotations

import asyncio
import time

from kcontrol.client import CONFIGMAPS, Object
from kcontrol.envtest import ControlPlane
from kcontrol.informers import ReflectorOptions, ResourceEventHandlerFuncs, SharedIndexInformer

from .helpers import (
    Recorder,
    configmap,
    is_list,
    is_watch,
    new_client,
    new_proxy,
    poll,
    running,
)

WRITE_FOR = 20.0  # seconds of patching
WRITE_EVERY = 0.5
WATCH_TIMEOUT = 3.0  # watches last int([1, 2) x this) = 3..5 s


def collapse(values: list[str]) -> list[str]:
    """Drop consecutive duplicates."""
    return [v for i, v in enumerate(values) if i == 0 or values[i - 1] != v]


async def test_delivered_sequence_survives_watch_expiry(
    control_plane: ControlPlane, namespace: str
) -> None:
    name = "counter"
    async with (
        new_client(control_plane) as writer,
        new_proxy(control_plane) as proxy,
        new_client(control_plane, proxy.host) as informer_client,
    ):
        informer = SharedIndexInformer(
            informer_client,
            CONFIGMAPS,
            namespace=namespace,
            reflector_options=ReflectorOptions(min_watch_timeout=WATCH_TIMEOUT),
        )
        delivered: list[str] = []

        def record(obj: Object) -> None:
            delivered.append(obj["data"]["counter"])

        recorder = Recorder()
        informer.add_event_handler(recorder)
        informer.add_event_handler(
            ResourceEventHandlerFuncs(add_func=record, update_func=lambda _, new: record(new))
        )

        errors: list[Exception] = []
        informer.set_watch_error_handler(errors.append)

        async with running(informer):
            written = ["0"]
            await writer.create(CONFIGMAPS, configmap(name, namespace, counter="0"))
            start = time.monotonic()
            step = 0
            while time.monotonic() - start < WRITE_FOR:
                step += 1
                await asyncio.sleep(WRITE_EVERY)  # pacing the writer, not waiting for a result
                await writer.patch(
                    CONFIGMAPS, name, {"data": {"counter": str(step)}}, namespace=namespace
                )
                written.append(str(step))

            await poll(
                lambda: bool(delivered) and delivered[-1] == written[-1],
                within=15,
                message=lambda: f"last delivered {delivered[-1:]} != last written {written[-1]}",
            )
            assert collapse(delivered) == written
            # Nothing delivered twice: every notification carried a new resourceVersion.
            versions = recorder.history[f"{namespace}/{name}"]
            assert versions == sorted(set(versions))

        watches = proxy.count(is_watch)
        lists = proxy.count(is_list)
        # About one watch per 3-5 s of the ~20 s run, each resumed from the last version...
        assert watches >= 4, f"only {watches} watch requests"
        resumed_from = [int(r.query["resourceVersion"]) for r in proxy.requests if is_watch(r)]
        assert resumed_from == sorted(resumed_from), resumed_from
        assert not errors  # every watch was ended by the server, none failed
        # ...and never a relist.
        assert lists == 1, [(r.path, r.query) for r in proxy.requests if is_list(r)]
        assert all(r.answered_by == "upstream" for r in proxy.requests)

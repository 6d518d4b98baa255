"""The ConfigMap annotator: an informer, a controller runner and a level-based sync."""

from __future__ import annotations

from typing import Any

from kcontrol.client import CONFIGMAPS, Writer
from kcontrol.controller import Controller, ControllerOptions, Result
from kcontrol.errors import Conflict, NotFound
from kcontrol.events import EVENT_TYPE_NORMAL, EventRecorder
from kcontrol.informers import (
    Lister,
    ResourceEventHandlerFuncs,
    SharedInformerFactory,
    split_meta_namespace_key,
)
from kcontrol.manager import ControllerContext, ControllerSpec

__all__ = [
    "ANNOTATION",
    "LABEL_SELECTOR",
    "NAME",
    "SPEC",
    "ConfigMapAnnotator",
    "new_controller",
]

NAME = "configmap-annotator"
LABEL_SELECTOR = "kcontrol.example/annotate=true"
ANNOTATION = "kcontrol.example/seen"


class ConfigMapAnnotator:
    """Sets ``kcontrol.example/seen: <identity>`` on every ConfigMap matching
    :data:`LABEL_SELECTOR`.

    The sync reads the cached ConfigMap and, when the annotation does not name this manager,
    writes it with a JSON merge patch carrying the cached ``resourceVersion``: a stale cache
    gets a 409 instead of overwriting a newer object, and the key is retried once the cache
    has caught up. Only the annotation is sent, so no other field is ever overwritten.
    """

    def __init__(
        self,
        *,
        client: Writer,
        informers: SharedInformerFactory,
        identity: str,
        recorder: EventRecorder,
        workers: int = 2,
        **controller_options: Any,
    ) -> None:
        self._client = client
        self._identity = identity
        self._recorder = recorder
        informer = informers.for_resource(CONFIGMAPS, label_selector=LABEL_SELECTOR)
        self._lister: Lister = informer.lister()
        self.controller = Controller(
            ControllerOptions(
                name=NAME,
                sync=self.sync,
                workers=workers,
                has_synced=[informer.has_synced],
                **controller_options,
            )
        )
        enqueue = self.controller.enqueue_object
        informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=enqueue, update_func=lambda old, new: enqueue(new), delete_func=None
            )
        )

    async def run(self) -> None:
        """Run the controller until cancelled."""
        await self.controller.run()

    async def sync(self, key: str) -> Result | None:
        namespace, name = split_meta_namespace_key(key)
        try:
            configmap = self._lister.get(namespace, name)
        except NotFound:
            return None  # deleted: nothing to converge
        metadata = configmap["metadata"]
        if (metadata.get("annotations") or {}).get(ANNOTATION) == self._identity:
            return None
        patch = {
            "metadata": {
                "resourceVersion": metadata["resourceVersion"],
                "annotations": {ANNOTATION: self._identity},
            }
        }
        try:
            await self._client.patch(CONFIGMAPS, name, patch, namespace=namespace)
        except NotFound:
            return None
        except Conflict:
            return Result(requeue=True)  # our copy is stale; the watch brings the new one
        self._recorder.event(
            configmap, EVENT_TYPE_NORMAL, "Annotated", f"Marked as seen by {self._identity}"
        )
        return None


def new_controller(ctx: ControllerContext) -> ConfigMapAnnotator:
    """The :data:`~kcontrol.manager.ControllerFactory` of the example."""
    return ConfigMapAnnotator(
        client=ctx.client,
        informers=ctx.informers,
        identity=ctx.identity,
        recorder=ctx.new_recorder(NAME),
        registry=ctx.registry,
        sync_timeout=30.0,
        max_retries=15,
    )


SPEC = ControllerSpec(NAME, new_controller)
"""Register with ``ControllerRegistry([SPEC])`` or the ``kcontrol.controllers`` entry points."""

"""A controller's pod writes - create, delete, patch - with the events upstream's
``RealPodControl`` (``pkg/controller/controller_utils.go``) records on the controller object.

Shared by the ReplicaSet and Job controllers. Events, on the controller object (which must
carry ``kind`` and ``apiVersion``): ``SuccessfulCreate`` "Created pod: <name>";
``FailedCreate`` "Error creating: <error>" (not when the namespace is being deleted);
``SuccessfulDelete`` "Deleted pod: <name>"; ``FailedDelete`` "Error deleting: <error>" (not when
the pod is already gone). A patch records none, as upstream's ``PatchPod``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from kcontrol.client import PODS, Object, PatchType, Writer
from kcontrol.controller import get_controller_of
from kcontrol.errors import NotFound, error_message, is_namespace_terminating
from kcontrol.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from kcontrol.logging import get_logger

from .podutil import pod_from_template

__all__ = [
    "FAILED_CREATE",
    "FAILED_DELETE",
    "SUCCESSFUL_CREATE",
    "SUCCESSFUL_DELETE",
    "OnWrite",
    "PodControl",
]

_log = get_logger(__name__)

SUCCESSFUL_CREATE: Final = "SuccessfulCreate"
FAILED_CREATE: Final = "FailedCreate"
SUCCESSFUL_DELETE: Final = "SuccessfulDelete"
FAILED_DELETE: Final = "FailedDelete"

OnWrite = Callable[[Object, Mapping[str, Any] | None], object]
"""Called with each pod created or patched and its controller reference (``None`` for a
patched pod that has none)."""


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


class PodControl:
    """Creates, deletes and patches pods on behalf of a controller, recording each outcome
    as an event on the controller object (module docstring). ``on_write`` sees every pod
    created or patched (for the expectations or stale-cache checks of the controller)."""

    __slots__ = ("_client", "_on_write", "_recorder")

    def __init__(
        self, client: Writer, recorder: EventRecorder, *, on_write: OnWrite | None = None
    ) -> None:
        self._client = client
        self._recorder = recorder
        self._on_write = on_write

    async def create_pod(
        self,
        namespace: str,
        template: Mapping[str, Any],
        controller: Mapping[str, Any],
        controller_ref: Mapping[str, Any],
        generate_name: str = "",
    ) -> Object:
        """Create one pod in ``namespace`` from ``template`` (see
        :func:`~kcontrol_controllers.podutil.pod_from_template`), controlled by
        ``controller_ref``, named by ``generate_name`` when given (else ``<controller>-``);
        returns it as created.

        Raises :class:`ValueError` without sending anything when the template has no labels
        (the pod could never be selected), and whatever the create raised.
        """
        pod = pod_from_template(template, controller, controller_ref)
        if generate_name:
            pod["metadata"]["generateName"] = generate_name
        if not pod["metadata"].get("labels"):
            raise ValueError("unable to create pods, no labels")
        try:
            created = await self._client.create(PODS, pod, namespace=namespace)
        except Exception as error:
            if not is_namespace_terminating(error):
                self._recorder.eventf(
                    controller,
                    EVENT_TYPE_WARNING,
                    FAILED_CREATE,
                    "Error creating: %s",
                    error_message(error),
                )
            raise
        if self._on_write is not None:
            self._on_write(created, controller_ref)
        name = (created.get("metadata") or {}).get("name")
        _log.debug("created pod", controller=_name(controller), pod=f"{namespace}/{name}")
        self._recorder.eventf(
            controller, EVENT_TYPE_NORMAL, SUCCESSFUL_CREATE, "Created pod: %s", name
        )
        return created

    async def delete_pod(self, namespace: str, name: str, controller: Mapping[str, Any]) -> None:
        """Delete the pod ``namespace/name``. Raises :class:`~kcontrol.errors.NotFound` (no
        event) when it is already gone, and any other failure after recording it."""
        _log.debug("deleting pod", controller=_name(controller), pod=f"{namespace}/{name}")
        try:
            await self._client.delete(PODS, name, namespace=namespace)
        except NotFound:
            raise
        except Exception as error:
            self._recorder.eventf(
                controller,
                EVENT_TYPE_WARNING,
                FAILED_DELETE,
                "Error deleting: %s",
                error_message(error),
            )
            raise
        self._recorder.eventf(
            controller, EVENT_TYPE_NORMAL, SUCCESSFUL_DELETE, "Deleted pod: %s", name
        )

    async def patch_pod(self, namespace: str, name: str, patch: Mapping[str, Any]) -> Object:
        """Strategic-merge-patch the pod ``namespace/name``; returns it as patched."""
        patched = await self._client.patch(
            PODS, name, patch, namespace=namespace, patch_type=PatchType.STRATEGIC
        )
        if self._on_write is not None:
            self._on_write(patched, get_controller_of(patched))
        return patched

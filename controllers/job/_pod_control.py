"""The Job controller's pod writes - create, delete, patch - with the events upstream's
``RealPodControl`` records on the Job.

Events: ``SuccessfulCreate`` "Created pod: <name>"; ``FailedCreate`` "Error creating: <error>"
(not when the namespace is being deleted); ``SuccessfulDelete`` "Deleted pod: <name>";
``FailedDelete`` "Error deleting: <error>" (not when the pod is already gone).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from kcontrol.client import PODS, Object, PatchType, Writer
from kcontrol.controller import get_controller_of
from kcontrol.errors import NAMESPACE_TERMINATING_CAUSE, ApiError, NotFound, has_status_cause
from kcontrol.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from kcontrol.logging import get_logger

from ..podutil import pod_from_template
from ._spec import meta

__all__ = [
    "FAILED_CREATE",
    "FAILED_DELETE",
    "SUCCESSFUL_CREATE",
    "SUCCESSFUL_DELETE",
    "OnWrite",
    "PodControl",
    "error_message",
    "is_namespace_terminating",
]

_log = get_logger(__name__)

SUCCESSFUL_CREATE: Final = "SuccessfulCreate"
FAILED_CREATE: Final = "FailedCreate"
SUCCESSFUL_DELETE: Final = "SuccessfulDelete"
FAILED_DELETE: Final = "FailedDelete"

OnWrite = Callable[[Object, Mapping[str, Any] | None], object]
"""Called with each pod created or patched and its controller reference."""


def error_message(error: BaseException) -> str:
    """The text Go prints for an error: an API error's ``Status`` message, else ``str``."""
    if isinstance(error, ApiError) and error.message:
        return error.message
    return str(error)


def is_namespace_terminating(error: BaseException) -> bool:
    """Whether the API server refused a create because the namespace is being deleted."""
    return has_status_cause(error, NAMESPACE_TERMINATING_CAUSE)


class PodControl:
    """Creates, deletes and patches the pods of Jobs, recording events on the Job (which must
    carry ``kind`` and ``apiVersion``). ``on_write`` sees every pod created or patched (the
    stale-cache check records their resourceVersions)."""

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
        job: Mapping[str, Any],
        controller_ref: Mapping[str, Any],
        generate_name: str = "",
    ) -> Object:
        """Create a pod of ``job`` from ``template`` (``generate_name`` replacing the default
        ``<job>-``). Raises :class:`ValueError` without sending anything when the template has
        no labels, and whatever the create raised."""
        pod = pod_from_template(template, job, controller_ref)
        if generate_name:
            pod["metadata"]["generateName"] = generate_name
        if not pod["metadata"].get("labels"):
            raise ValueError("unable to create pods, no labels")
        try:
            created = await self._client.create(PODS, pod, namespace=namespace)
        except Exception as error:
            if not is_namespace_terminating(error):
                self._recorder.eventf(
                    job,
                    EVENT_TYPE_WARNING,
                    FAILED_CREATE,
                    "Error creating: %s",
                    error_message(error),
                )
            raise
        if self._on_write is not None:
            self._on_write(created, controller_ref)
        name = meta(created).get("name")
        _log.debug("created pod", job=meta(job).get("name"), pod=f"{namespace}/{name}")
        self._recorder.eventf(job, EVENT_TYPE_NORMAL, SUCCESSFUL_CREATE, "Created pod: %s", name)
        return created

    async def delete_pod(self, namespace: str, name: str, job: Mapping[str, Any]) -> None:
        """Delete the pod ``namespace/name``. Raises :class:`~kcontrol.errors.NotFound` (no
        event) when it is already gone, and any other failure after recording it."""
        _log.debug("deleting pod", job=meta(job).get("name"), pod=f"{namespace}/{name}")
        try:
            await self._client.delete(PODS, name, namespace=namespace)
        except NotFound:
            raise
        except Exception as error:
            self._recorder.eventf(
                job, EVENT_TYPE_WARNING, FAILED_DELETE, "Error deleting: %s", error_message(error)
            )
            raise
        self._recorder.eventf(job, EVENT_TYPE_NORMAL, SUCCESSFUL_DELETE, "Deleted pod: %s", name)

    async def patch_pod(self, namespace: str, name: str, patch: Mapping[str, Any]) -> Object:
        """Strategic-merge-patch the pod ``namespace/name``; returns it as patched."""
        patched = await self._client.patch(
            PODS, name, patch, namespace=namespace, patch_type=PatchType.STRATEGIC
        )
        if self._on_write is not None:
            self._on_write(patched, get_controller_of(patched))
        return patched

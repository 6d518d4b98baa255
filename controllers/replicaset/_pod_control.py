"""Creating and deleting a controller's pods, with the events upstream's ``RealPodControl``
records on the controller object."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kcontrol.client import PODS, Object, Writer
from kcontrol.errors import NAMESPACE_TERMINATING_CAUSE, ApiError, NotFound, has_status_cause
from kcontrol.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from kcontrol.logging import get_logger

from ..podutil import pod_from_template

__all__ = [
    "FAILED_CREATE_POD_REASON",
    "FAILED_DELETE_POD_REASON",
    "NAMESPACE_TERMINATING_CAUSE",
    "SUCCESSFUL_CREATE_POD_REASON",
    "SUCCESSFUL_DELETE_POD_REASON",
    "OnWrite",
    "PodControl",
    "error_message",
    "is_namespace_terminating",
]

_log = get_logger(__name__)

FAILED_CREATE_POD_REASON = "FailedCreate"
SUCCESSFUL_CREATE_POD_REASON = "SuccessfulCreate"
FAILED_DELETE_POD_REASON = "FailedDelete"
SUCCESSFUL_DELETE_POD_REASON = "SuccessfulDelete"

"""The ``details.causes[].type`` of the API server's refusal to create in a namespace that is
being deleted."""

OnWrite = Callable[[Object, Mapping[str, Any]], object]
"""Called with each pod created and the controller reference it was created with."""


def error_message(error: BaseException) -> str:
    """The text Go prints for an error: an API error's ``Status`` message, otherwise
    ``str(error)``."""
    if isinstance(error, ApiError) and error.message:
        return error.message
    return str(error)


def is_namespace_terminating(error: BaseException) -> bool:
    """True for an API error whose causes include :data:`NAMESPACE_TERMINATING_CAUSE`."""
    return has_status_cause(error, NAMESPACE_TERMINATING_CAUSE)


class PodControl:
    """Creates pods from a template and deletes pods on behalf of a controller.

    Every outcome is reported as an event on the controller object (which must carry
    ``kind`` and ``apiVersion``), with upstream's reasons and messages:
    ``SuccessfulCreate`` "Created pod: <name>", ``FailedCreate`` "Error creating: <error>"
    (not when the namespace is terminating), ``SuccessfulDelete`` "Deleted pod: <name>",
    ``FailedDelete`` "Error deleting: <error>" (not when the pod is already gone).
    ``on_write`` sees each pod created.
    """

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
    ) -> Object:
        """Create one pod in ``namespace`` from ``template`` (see
        :func:`~kcontrol_controllers.podutil.pod_from_template`), controlled by ``controller_ref``;
        returns it as created.

        Raises :class:`ValueError` without sending anything when the template has no labels
        (the pod could never be selected), and whatever the create raised.
        """
        pod = pod_from_template(template, controller, controller_ref)
        if not pod["metadata"].get("labels"):
            raise ValueError("unable to create pods, no labels")
        try:
            created = await self._client.create(PODS, pod, namespace=namespace)
        except Exception as error:
            if not is_namespace_terminating(error):
                self._recorder.eventf(
                    controller,
                    EVENT_TYPE_WARNING,
                    FAILED_CREATE_POD_REASON,
                    "Error creating: %s",
                    error_message(error),
                )
            raise
        if self._on_write is not None:
            self._on_write(created, controller_ref)
        name = (created.get("metadata") or {}).get("name")
        _log.debug("created pod", controller=_name(controller), pod=f"{namespace}/{name}")
        self._recorder.eventf(
            controller, EVENT_TYPE_NORMAL, SUCCESSFUL_CREATE_POD_REASON, "Created pod: %s", name
        )
        return created

    async def delete_pod(self, namespace: str, name: str, controller: Mapping[str, Any]) -> None:
        """Delete the pod ``namespace/name``.

        Raises :class:`~kcontrol.errors.NotFound` (no event) when it is already gone, and any
        other failure after recording it.
        """
        _log.debug("deleting pod", controller=_name(controller), pod=f"{namespace}/{name}")
        try:
            await self._client.delete(PODS, name, namespace=namespace)
        except NotFound:
            _log.debug("pod has already been deleted", pod=f"{namespace}/{name}")
            raise
        except Exception as error:
            self._recorder.eventf(
                controller,
                EVENT_TYPE_WARNING,
                FAILED_DELETE_POD_REASON,
                "Error deleting: %s",
                error_message(error),
            )
            raise
        self._recorder.eventf(
            controller, EVENT_TYPE_NORMAL, SUCCESSFUL_DELETE_POD_REASON, "Deleted pod: %s", name
        )


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name"))

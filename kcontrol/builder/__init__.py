"""The operator layer: one call wires a controller (controller-runtime's builder, predicates,
handlers and reconcile contract, on kcontrol's informers, queue and runner).

::

    from kcontrol.builder import Request, controller_managed_by
    from kcontrol.manager import Manager

    manager = Manager()

    @controller_managed_by(manager).for_(WEBSITES).owns(DEPLOYMENTS).owns(SERVICES).complete
    async def reconcile(request: Request) -> None:
        website = await manager.cache.get(WEBSITES, request.name, namespace=request.namespace)
        ...

    manager.main()  # flags, logging, signals; or `await manager.run()`

- :class:`ControllerBuilder` / :func:`controller_managed_by`: ``for_``, ``owns``, ``watches``,
  predicates, options, a finalizer hook; ``complete`` adds the controller to a manager,
  ``build`` returns its :class:`~kcontrol.manager.ControllerSpec` (for entry points).
- :class:`Request` and the :data:`Reconcile` / :data:`Finalize` contracts; ``Result`` is
  :class:`kcontrol.controller.Result`.
- :func:`webhook_managed_by`: a resource's admission webhooks (a defaulter, a validator),
  served by the manager at controller-runtime's paths (:func:`webhook_path`).
- Predicates (:func:`generation_changed`, :func:`labels_changed`, ...) and the event handlers
  (:func:`enqueue_for_owner`, :data:`MapFunc`).
"""

from kcontrol.builder._builder import (
    DEFAULT_WORKERS,
    ControllerBuilder,
    ReconcileFactory,
    controller_managed_by,
)
from kcontrol.builder._handlers import (
    EnqueueHandler,
    MapFunc,
    enqueue_for_object,
    enqueue_for_owner,
)
from kcontrol.builder._predicates import (
    Funcs,
    Predicate,
    and_,
    annotations_changed,
    generation_changed,
    labels_changed,
    new_predicate_funcs,
    not_,
    or_,
    resource_version_changed,
)
from kcontrol.builder._request import Finalize, Reconcile, Request
from kcontrol.builder._webhook import WebhookBuilder, webhook_managed_by, webhook_path
from kcontrol.controller import Result

__all__ = [
    "DEFAULT_WORKERS",
    "ControllerBuilder",
    "EnqueueHandler",
    "Finalize",
    "Funcs",
    "MapFunc",
    "Predicate",
    "Reconcile",
    "ReconcileFactory",
    "Request",
    "Result",
    "WebhookBuilder",
    "and_",
    "annotations_changed",
    "controller_managed_by",
    "enqueue_for_object",
    "enqueue_for_owner",
    "generation_changed",
    "labels_changed",
    "new_predicate_funcs",
    "not_",
    "or_",
    "resource_version_changed",
    "webhook_managed_by",
    "webhook_path",
]

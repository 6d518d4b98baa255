"""Everything an operator needs, from one import - controller-runtime's ``ctrl`` alias, or
``import kopf``, for kcontrol::

    from kcontrol import operator as op

    manager = op.Manager(name="website-operator")

    @op.controller_managed_by(manager).for_(WEBSITES).owns(op.DEPLOYMENTS).complete
    async def reconcile(request: op.Request) -> op.Result | None:
        ...

It re-exports, unchanged, the names an operator uses from the packages that define them: the
:class:`Manager` and its options (:mod:`kcontrol.manager`, :mod:`kcontrol.serving`), the
builder with :class:`Request`, :class:`Result` and the predicates (:mod:`kcontrol.builder`),
the object helpers (:mod:`kcontrol.controllerutil`, :func:`retry_on_conflict`), the
resources an operator commonly owns and the object type (:mod:`kcontrol.client`), the errors
a reconcile catches (:mod:`kcontrol.errors`) and event types; for the second day, the
webhook builder, what a defaulter or validator uses and the hub-and-spoke converter
(:mod:`kcontrol.webhook`), a cache
narrowed to namespaces or selectors (:class:`CacheScope`) and the one patch of the keys a
reconcile owns in an object many share (:func:`patch_entries`). Anything else stays in its
package: this module adds no name of its own.
"""

from __future__ import annotations

from kcontrol.builder import (
    ControllerBuilder,
    Reconcile,
    Request,
    Result,
    and_,
    annotations_changed,
    controller_managed_by,
    enqueue_for_object,
    enqueue_for_owner,
    generation_changed,
    labels_changed,
    not_,
    or_,
    resource_version_changed,
    webhook_managed_by,
)
from kcontrol.client import (
    CONFIGMAPS,
    CRONJOBS,
    DAEMONSETS,
    DEPLOYMENTS,
    INGRESSES,
    JOBS,
    NAMESPACES,
    PERSISTENTVOLUMECLAIMS,
    PODS,
    ROLEBINDINGS,
    ROLES,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
    STATEFULSETS,
    Object,
    Resource,
)
from kcontrol.controllerutil import (
    OperationResult,
    add_finalizer,
    apply,
    apply_status,
    contains_finalizer,
    create_or_patch,
    create_or_update,
    find_status_condition,
    is_status_condition_true,
    patch_entries,
    patch_status,
    remove_finalizer,
    set_controller_reference,
    set_owner_reference,
    set_status_condition,
)
from kcontrol.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    KcontrolError,
    NotFound,
    OutsideCacheScope,
)
from kcontrol.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from kcontrol.informers import CacheScope
from kcontrol.logging import get_logger
from kcontrol.manager import ControllerContext, Manager, ManagerOptions
from kcontrol.retry import retry_on_conflict
from kcontrol.serving import ServingOptions
from kcontrol.webhook import AdmissionRequest, ConversionWebhook, Denied, FieldError, Spoke

__all__ = [
    "CONFIGMAPS",
    "CRONJOBS",
    "DAEMONSETS",
    "DEPLOYMENTS",
    "EVENT_TYPE_NORMAL",
    "EVENT_TYPE_WARNING",
    "INGRESSES",
    "JOBS",
    "NAMESPACES",
    "PERSISTENTVOLUMECLAIMS",
    "PODS",
    "ROLEBINDINGS",
    "ROLES",
    "SECRETS",
    "SERVICEACCOUNTS",
    "SERVICES",
    "STATEFULSETS",
    "AdmissionRequest",
    "AlreadyExists",
    "ApiError",
    "CacheScope",
    "Conflict",
    "ControllerBuilder",
    "ControllerContext",
    "ConversionWebhook",
    "Denied",
    "FieldError",
    "KcontrolError",
    "Manager",
    "ManagerOptions",
    "NotFound",
    "Object",
    "OperationResult",
    "OutsideCacheScope",
    "Reconcile",
    "Request",
    "Resource",
    "Result",
    "ServingOptions",
    "Spoke",
    "add_finalizer",
    "and_",
    "annotations_changed",
    "apply",
    "apply_status",
    "contains_finalizer",
    "controller_managed_by",
    "create_or_patch",
    "create_or_update",
    "enqueue_for_object",
    "enqueue_for_owner",
    "find_status_condition",
    "generation_changed",
    "get_logger",
    "is_status_condition_true",
    "labels_changed",
    "not_",
    "or_",
    "patch_entries",
    "patch_status",
    "remove_finalizer",
    "resource_version_changed",
    "retry_on_conflict",
    "set_controller_reference",
    "set_owner_reference",
    "set_status_condition",
    "webhook_managed_by",
]

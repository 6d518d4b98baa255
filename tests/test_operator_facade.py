"""kcontrol.operator, the operator author's one import: it re-exports, and never redefines,
the names of the packages below it (so the reference of each name is its package's), and its
surface is listed here (new exports are a deliberate change)."""

from __future__ import annotations

import importlib

import kcontrol.operator as op

SURFACE = {
    # the manager and its options
    "Manager",
    "ManagerOptions",
    "ServingOptions",
    "ControllerContext",
    # the builder, the reconcile's types and the predicates
    "controller_managed_by",
    "ControllerBuilder",
    "Reconcile",
    "Request",
    "Result",
    "and_",
    "or_",
    "not_",
    "annotations_changed",
    "generation_changed",
    "labels_changed",
    "resource_version_changed",
    "enqueue_for_object",
    "enqueue_for_owner",
    # object helpers
    "OperationResult",
    "add_finalizer",
    "apply",
    "apply_status",
    "contains_finalizer",
    "create_or_patch",
    "create_or_update",
    "find_status_condition",
    "is_status_condition_true",
    "patch_status",
    "remove_finalizer",
    "retry_on_conflict",
    "set_controller_reference",
    "set_owner_reference",
    "set_status_condition",
    # the second day: webhooks, scoped caches, objects many reconciles share
    "webhook_managed_by",
    "AdmissionRequest",
    "Denied",
    "FieldError",
    "ConversionWebhook",
    "Spoke",
    "CacheScope",
    "OutsideCacheScope",
    "patch_entries",
    # objects and the resources operators commonly own
    "Object",
    "Resource",
    "CONFIGMAPS",
    "CRONJOBS",
    "DAEMONSETS",
    "DEPLOYMENTS",
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
    # errors, events, logs
    "AlreadyExists",
    "ApiError",
    "Conflict",
    "KcontrolError",
    "NotFound",
    "EVENT_TYPE_NORMAL",
    "EVENT_TYPE_WARNING",
    "get_logger",
}

HOMES = (
    "kcontrol.builder",
    "kcontrol.client",
    "kcontrol.controllerutil",
    "kcontrol.errors",
    "kcontrol.events",
    "kcontrol.informers",
    "kcontrol.logging",
    "kcontrol.manager",
    "kcontrol.retry",
    "kcontrol.serving",
    "kcontrol.webhook",
)


def test_surface() -> None:
    assert set(op.__all__) == SURFACE
    assert len(op.__all__) == len(SURFACE), "duplicates in __all__"


def test_every_name_is_its_packages_own() -> None:
    """Each name is the very object a public package exports: one way to name each thing."""
    homes = [importlib.import_module(name) for name in HOMES]
    for name in op.__all__:
        owners = [
            home.__name__
            for home in homes
            if name in home.__all__ and getattr(home, name) is getattr(op, name)
        ]
        assert owners, f"{name} is not exported by any of {HOMES}"

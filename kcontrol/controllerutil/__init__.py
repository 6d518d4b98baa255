"""Object helpers for operators: controller-runtime's ``controllerutil``, apimachinery's
condition helpers, and the writes a reconcile needs.

Functions over plain-dict objects, testable without a cluster:

- owner references: :func:`set_controller_reference` (refuses a second controller,
  :class:`AlreadyOwned`, and owners of another namespace), :func:`set_owner_reference`,
  :func:`has_controller_reference`, :func:`has_owner_reference`,
  :func:`remove_owner_reference`, :func:`remove_controller_reference`;
- finalizers: :func:`contains_finalizer`, :func:`add_finalizer`, :func:`remove_finalizer`;
- conditions: :func:`set_status_condition` (keeps ``lastTransitionTime`` unless the status
  changes), :func:`find_status_condition`, :func:`remove_status_condition`,
  :func:`is_status_condition_true`, :func:`is_status_condition_false`,
  :func:`is_status_condition_present_and_equal`;
- :func:`merge_patch`: the RFC 7386 merge patch between two objects; :func:`holds_fields`:
  whether an object already holds every field of another (what an apply would set).

And writes through a client (any :class:`~kcontrol.client.Writer`):

- :func:`create_or_update` / :func:`create_or_patch`: read, mutate a copy, write only a
  change, and say what happened (:class:`OperationResult`);
- :func:`patch_status`: a merge patch of the status subresource;
- :func:`patch_finalizers`: the finalizer list, guarded by the resourceVersion;
- :func:`apply` / :func:`apply_status`: server-side apply with a field manager; given a
  ``reader`` (a cache), nothing is sent while the cached object already holds the fields;
- :func:`patch_entries`: set or remove some keys of a map in an object many reconciles share
  (a registry ConfigMap), with one merge patch that leaves the other keys alone.

The functions that change an object do so in place: give them a copy the caller owns, never
an object from a cache. Retrying a conflicting write is :mod:`kcontrol.retry`.
"""

from kcontrol.controllerutil._conditions import (
    find_status_condition,
    is_status_condition_false,
    is_status_condition_present_and_equal,
    is_status_condition_true,
    remove_status_condition,
    set_status_condition,
)
from kcontrol.controllerutil._finalizers import (
    add_finalizer,
    contains_finalizer,
    patch_finalizers,
    remove_finalizer,
)
from kcontrol.controllerutil._merge import holds_fields, merge_patch
from kcontrol.controllerutil._mutate import (
    MutateFn,
    ObjectReader,
    OperationResult,
    create_or_patch,
    create_or_update,
)
from kcontrol.controllerutil._owner import (
    has_controller_reference,
    has_owner_reference,
    remove_controller_reference,
    remove_owner_reference,
    set_controller_reference,
    set_owner_reference,
)
from kcontrol.controllerutil._patch import apply, apply_status, patch_status
from kcontrol.controllerutil._shared import patch_entries
from kcontrol.errors import AlreadyOwned

__all__ = [
    "AlreadyOwned",
    "MutateFn",
    "ObjectReader",
    "OperationResult",
    "add_finalizer",
    "apply",
    "apply_status",
    "contains_finalizer",
    "create_or_patch",
    "create_or_update",
    "find_status_condition",
    "has_controller_reference",
    "has_owner_reference",
    "holds_fields",
    "is_status_condition_false",
    "is_status_condition_present_and_equal",
    "is_status_condition_true",
    "merge_patch",
    "patch_entries",
    "patch_finalizers",
    "patch_status",
    "remove_controller_reference",
    "remove_finalizer",
    "remove_owner_reference",
    "remove_status_condition",
    "set_controller_reference",
    "set_owner_reference",
    "set_status_condition",
]

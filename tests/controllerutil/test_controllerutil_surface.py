"""The public surfaces of kcontrol.controllerutil and kcontrol.retry: nothing private leaks
into ``__all__`` and every listed name exists (new exports are a deliberate change here)."""

from __future__ import annotations

import importlib

import pytest

from kcontrol.controllerutil import OperationResult

SURFACES = {
    "kcontrol.controllerutil": {
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
        "is_status_condition_false",
        "is_status_condition_present_and_equal",
        "is_status_condition_true",
        "holds_fields",
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
    },
    "kcontrol.retry": {
        "DEFAULT_BACKOFF",
        "DEFAULT_RETRY",
        "Backoff",
        "on_error",
        "retry_on_conflict",
    },
}


@pytest.mark.parametrize("module_name", sorted(SURFACES))
def test_surface(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert set(module.__all__) == SURFACES[module_name]
    for name in module.__all__:
        assert hasattr(module, name), name


def test_operation_result_values_are_controller_runtimes() -> None:
    assert {r.name: r.value for r in OperationResult} == {
        "NONE": "unchanged",
        "CREATED": "created",
        "UPDATED": "updated",
        "UPDATED_STATUS": "updatedStatus",
        "UPDATED_STATUS_ONLY": "updatedStatusOnly",
    }
    assert f"{OperationResult.CREATED}" == "created"

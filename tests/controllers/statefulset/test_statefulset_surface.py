"""The package's public surface: its names, the controller, its factory and SPEC."""

from __future__ import annotations

import importlib

import pytest

import kcontrol_controllers.statefulset as package

EXPECTED_SURFACE = {
    "API_VERSION",
    "KIND",
    "MAX_BATCH_SIZE",
    "NAME",
    "POD_INDEX_LABEL",
    "POD_NAME_LABEL",
    "QUEUE_NAME",
    "REVISION_LABEL",
    "SPEC",
    "StatefulSetController",
    "new_controller",
}

MODULES = [
    "_control",
    "_controller",
    "_defaults",
    "_factory",
    "_fields",
    "_history",
    "_identity",
    "_metrics",
    "_names",
    "_podcontrol",
    "_pods",
    "_podstate",
    "_replicas",
    "_revisions",
    "_semantic",
    "_status",
    "_status_updater",
    "_storage",
    "_sync",
]


def test_public_surface() -> None:
    assert set(package.__all__) == EXPECTED_SURFACE
    assert package.NAME == "statefulset-controller"
    assert package.QUEUE_NAME == "statefulset"
    assert package.REVISION_LABEL == "controller-revision-hash"
    assert (package.API_VERSION, package.KIND) == ("apps/v1", "StatefulSet")


@pytest.mark.parametrize("module_name", MODULES)
def test_module_all_lists_what_it_defines(module_name: str) -> None:
    module = importlib.import_module(f"kcontrol_controllers.statefulset.{module_name}")
    for name in module.__all__:
        assert not name.startswith("_")
        value = getattr(module, name)
        # constants aside, each name is defined in the module that exports it (not re-exported)
        assert name.isupper() or value.__module__ == module.__name__, name

"""The package's public surface: the names the StatefulSet and DaemonSet controllers use."""

from __future__ import annotations

import kcontrol_controllers.history as package

EXPECTED_SURFACE = {
    "CONTROLLER_REVISION_CONTROLLER_INDEX",
    "CONTROLLER_REVISION_HASH_LABEL",
    "History",
    "body_to_create",
    "controller_revision_index_func",
    "controller_revision_index_key",
    "controller_revision_name",
    "equal_revision",
    "find_equal_revisions",
    "hash_controller_revision",
    "new_controller_revision",
    "next_revision",
    "sort_controller_revisions",
}


def test_public_surface() -> None:
    assert set(package.__all__) == EXPECTED_SURFACE
    for name in package.__all__:
        assert hasattr(package, name)


def test_hash_label_is_upstreams() -> None:
    assert package.CONTROLLER_REVISION_HASH_LABEL == "controller.kubernetes.io/hash"

"""The package's public surface: only its names, until the controller is wired."""

from __future__ import annotations

import kcontrol_controllers.daemonset as package
from kcontrol_controllers.daemonset import _names

EXPECTED_SURFACE = {
    "BACKOFF_GC_INTERVAL",
    "BURST_REPLICAS",
    "DEFAULT_WORKERS",
    "FAILED_DAEMON_POD_REASON",
    "FAILED_PLACEMENT_REASON",
    "NAME",
    "QUEUE_NAME",
    "SELECTING_ALL_REASON",
    "STATUS_UPDATE_RETRIES",
    "SUCCEEDED_DAEMON_POD_REASON",
    "TEMPLATE_GENERATION_ANNOTATION",
    "TEMPLATE_GENERATION_LABEL",
    "UNIQUE_LABEL_KEY",
}


def test_public_surface_is_the_names_module() -> None:
    assert set(package.__all__) == EXPECTED_SURFACE == set(_names.__all__)
    for name in package.__all__:
        assert getattr(package, name) is getattr(_names, name)


def test_names_are_upstreams() -> None:
    assert package.NAME == "daemonset-controller"
    assert package.QUEUE_NAME == "daemonset"
    assert package.BURST_REPLICAS == 250
    assert package.DEFAULT_WORKERS == 2
    assert package.STATUS_UPDATE_RETRIES == 1
    assert package.BACKOFF_GC_INTERVAL == 60.0
    assert package.UNIQUE_LABEL_KEY == "controller-revision-hash"
    assert package.TEMPLATE_GENERATION_LABEL == "pod-template-generation"
    assert package.TEMPLATE_GENERATION_ANNOTATION == "deprecated.daemonset.template.generation"
    assert package.SELECTING_ALL_REASON == "SelectingAll"
    assert package.FAILED_PLACEMENT_REASON == "FailedPlacement"
    assert package.FAILED_DAEMON_POD_REASON == "FailedDaemonPod"
    assert package.SUCCEEDED_DAEMON_POD_REASON == "SucceededDaemonPod"

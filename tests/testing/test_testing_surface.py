"""kcontrol.testing's public surface is deliberate (CONVENTIONS.md item 3): the facade, and the
two modules that need the ``testing`` extra and are imported by their own names."""

from __future__ import annotations

import kcontrol.testing
import kcontrol.testing.cluster
import kcontrol.testing.envtest


def test_facade_surface_is_deliberate() -> None:
    assert sorted(kcontrol.testing.__all__) == sorted(
        [
            "BEHAVIOR_FAIL",
            "BEHAVIOR_LABEL",
            "BEHAVIOR_NEVER_READY",
            "BEHAVIOR_RESTART",
            "DELETE_DELAY_ANNOTATION",
            "EXIT_CODE_ANNOTATION",
            "FAIL_DELAY_ANNOTATION",
            "READY_DELAY_ANNOTATION",
            "RESTART_DELAY_ANNOTATION",
            "RUN_TIME_ANNOTATION",
            "Action",
            "FakeClient",
            "FakeRecorder",
            "FaultProxy",
            "ObjectTracker",
            "ProxiedRequest",
            "Reactor",
            "ReactorResult",
            "capture_logs",
            "running",
        ]
    )


def test_envtest_and_cluster_surfaces_are_deliberate() -> None:
    assert sorted(kcontrol.testing.envtest.__all__) == sorted(
        [
            "ADMIN",
            "K8S_VERSION",
            "USERS",
            "CRDSource",
            "ControlPlane",
            "ControlPlaneError",
            "find_binary",
            "main",
            "run_command",
        ]
    )
    assert sorted(kcontrol.testing.cluster.__all__) == sorted(
        [
            "ALL_CONTROLLERS",
            "COMPONENTS",
            "KUBE_CONTROLLER_MANAGER",
            "KUBE_SCHEDULER",
            "KWOK",
            "WITHOUT_WORKLOAD_CONTROLLERS",
            "Cluster",
            "main",
        ]
    )


def test_every_exported_name_exists() -> None:
    for module in (kcontrol.testing, kcontrol.testing.envtest, kcontrol.testing.cluster):
        missing = [name for name in module.__all__ if not hasattr(module, name)]
        assert missing == [], f"{module.__name__} exports missing names {missing}"

"""The test kit's public surfaces are deliberate (CONVENTIONS.md item 3): the root facade of
kcontrol.testing, its fake and faults pieces, and kcontrol.envtest with its cluster; and no
library code outside the test kit imports it."""

from __future__ import annotations

import ast
from pathlib import Path

import kcontrol.envtest
import kcontrol.envtest.cluster
import kcontrol.testing
import kcontrol.testing.fake
import kcontrol.testing.faults


def test_facade_surface_is_deliberate() -> None:
    assert sorted(kcontrol.testing.__all__) == sorted(
        [
            "Action",
            "FakeClient",
            "FakeRecorder",
            "ObjectTracker",
            "Reactor",
            "ReactorResult",
            "capture_logs",
            "running",
        ]
    )


def test_fake_surface_is_deliberate() -> None:
    assert sorted(kcontrol.testing.fake.__all__) == sorted(
        [
            "Action",
            "FakeClient",
            "FakeMetadataClient",
            "FakeRecorder",
            "ObjectTracker",
            "Reactor",
            "ReactorResult",
        ]
    )


def test_faults_surface_is_deliberate() -> None:
    assert sorted(kcontrol.testing.faults.__all__) == sorted(["FaultProxy", "ProxiedRequest"])


def test_envtest_and_cluster_surfaces_are_deliberate() -> None:
    assert sorted(kcontrol.envtest.__all__) == sorted(
        [
            "ADMIN",
            "K8S_VERSION",
            "USERS",
            "CRDSource",
            "ControlPlane",
            "ControlPlaneError",
            "ServedVersion",
            "find_binary",
            "load_crds",
            "main",
            "run_command",
            "served_versions",
        ]
    )
    assert sorted(kcontrol.envtest.cluster.__all__) == sorted(
        [
            "ALL_CONTROLLERS",
            "BEHAVIOR_FAIL",
            "BEHAVIOR_LABEL",
            "BEHAVIOR_NEVER_READY",
            "BEHAVIOR_RESTART",
            "COMPONENTS",
            "DELETE_DELAY_ANNOTATION",
            "EXIT_CODE_ANNOTATION",
            "FAIL_DELAY_ANNOTATION",
            "KUBE_CONTROLLER_MANAGER",
            "KUBE_SCHEDULER",
            "KWOK",
            "READY_DELAY_ANNOTATION",
            "RESTART_DELAY_ANNOTATION",
            "RUN_TIME_ANNOTATION",
            "WITHOUT_WORKLOAD_CONTROLLERS",
            "Cluster",
            "main",
        ]
    )


def test_the_root_facade_re_exports_the_fakes_themselves() -> None:
    """One FakeClient, whichever facade it is imported from."""
    for name in kcontrol.testing.fake.__all__:
        if name in kcontrol.testing.__all__:
            assert getattr(kcontrol.testing, name) is getattr(kcontrol.testing.fake, name)


def test_every_exported_name_exists() -> None:
    for module in (
        kcontrol.testing,
        kcontrol.testing.fake,
        kcontrol.testing.faults,
        kcontrol.envtest,
        kcontrol.envtest.cluster,
    ):
        missing = [name for name in module.__all__ if not hasattr(module, name)]
        assert missing == [], f"{module.__name__} exports missing names {missing}"


def test_nothing_outside_the_test_kit_imports_it() -> None:
    """Production code (``make run``'s local cluster included) starts clusters with
    kcontrol.envtest; kcontrol.testing is for tests only."""
    root = Path(kcontrol.__file__).parent
    offenders = []
    for path in sorted(root.rglob("*.py")):
        if path.is_relative_to(root / "testing"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            offenders += [
                f"{path.relative_to(root)}: {name}"
                for name in names
                if name == "kcontrol.testing" or name.startswith("kcontrol.testing.")
            ]
    assert offenders == []

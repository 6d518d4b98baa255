"""bench/writes: the kcontrol child sends what it reports, and the table compares per request."""

from __future__ import annotations

from bench.writes import PHASES, SIDES, measure, side_argv, table
from kcontrol.client import PODS, REPLICASETS
from kcontrol.envtest import ControlPlane


async def test_the_kcontrol_child_sends_each_phase_and_cleans_up(
    control_plane: ControlPlane, namespace: str
) -> None:
    argv = side_argv("kcontrol", None, str(control_plane.kubeconfig_path), namespace, 6, 2)
    phases = measure(argv, timeout=120)
    assert list(phases) == list(PHASES)
    # 6 operations per phase; a pod operation is a create and a delete.
    assert {name: p["requests"] for name, p in phases.items()} == {
        "status": 6,
        "scale": 6,
        "event": 6,
        "pod": 12,
    }
    assert all(p["cpu_seconds"] > 0 and p["wall_seconds"] > 0 for p in phases.values())
    async with control_plane.admin_client() as client:
        replica_sets = (await client.list(REPLICASETS, namespace=namespace))["items"]
        pods = (await client.list(PODS, namespace=namespace))["items"]
    assert replica_sets == [] and pods == []


def test_table_reports_cpu_per_request_and_ratios() -> None:
    points = [
        {
            "side": side,
            "run": 0,
            "phase": phase,
            "requests": 100,
            "cpu_seconds": cpu,
            "wall_seconds": 0.1,
        }
        for side, cpu in zip(SIDES, (0.010, 0.020, 0.025), strict=True)
        for phase in PHASES
    ]
    row = next(line for line in table(points).splitlines() if line.startswith("| status"))
    # 100 us, 200 us, 250 us per request; kcontrol/kcm 0.50, kcontrol/json 0.40.
    assert row.startswith("| status | 100 | 200 | 250 | 0.50 | 0.40 |")

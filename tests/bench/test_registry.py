"""bench/registry: the kopf-side writers (a fake API), the tables, result points and target;
and every side measured at a tiny size on envtest."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from bench.registry._report import dump, load, raw_table, report, results_points, verdict
from bench.registry._run import (
    IMPLEMENTATIONS,
    KCONTROL,
    KOPF_PATCH,
    KOPF_RMW,
    Phase,
    Run,
    run_once,
)
from bench.registry._worker import Counts, key_names, value_of
from bench.registry.kopf_registry import MERGE, patch, rmw


class FakeCoreV1:
    """One ConfigMap's data, a resourceVersion, and scripted refusals."""

    def __init__(self, *, exists: bool = True, conflicts: int = 0) -> None:
        self.data: dict[str, str] | None = {} if exists else None
        self.version = 1
        self.conflicts = conflicts
        self.sent: list[tuple[str, Any]] = []

    def read_namespaced_config_map(self, name: str, namespace: str) -> Any:
        self.sent.append(("get", None))
        if self.data is None:
            raise ApiException(status=404)
        return SimpleNamespace(metadata=SimpleNamespace(resource_version=str(self.version)))

    def create_namespaced_config_map(self, namespace: str, body: dict[str, Any]) -> None:
        self.sent.append(("create", body))
        if self.data is not None:
            raise ApiException(status=409)
        self.data = dict(body["data"])

    def patch_namespaced_config_map(
        self, name: str, namespace: str, body: dict[str, Any], *, _content_type: str
    ) -> None:
        assert _content_type == MERGE
        self.sent.append(("patch", body))
        if self.data is None:
            raise ApiException(status=404)
        version = body.get("metadata", {}).get("resourceVersion")
        if version is not None and (self.conflicts or version != str(self.version)):
            self.conflicts = max(0, self.conflicts - 1)
            self.version += 1  # someone else wrote meanwhile
            raise ApiException(status=409)
        for key, value in body["data"].items():
            if value is None:
                self.data.pop(key, None)
            else:
                self.data[key] = value
        self.version += 1


def test_rmw_retries_a_conflict_with_a_new_read() -> None:
    api, counts = FakeCoreV1(conflicts=2), Counts()
    rmw(api, "a", "1", counts)
    assert api.data == {"a": "1"}
    assert counts.conflicts == 2
    assert [verb for verb, _ in api.sent] == ["get", "patch"] * 3
    assert counts.requests == 6


def test_rmw_creates_a_missing_configmap_and_removes_keys() -> None:
    api, counts = FakeCoreV1(exists=False), Counts()
    rmw(api, "a", "1", counts)
    assert api.data == {"a": "1"}
    rmw(api, "a", None, counts)
    assert api.data == {}


def test_patch_sends_the_key_alone_and_creates_on_404() -> None:
    api, counts = FakeCoreV1(exists=False), Counts()
    patch(api, "a", "1", counts)
    patch(api, "b", "2", counts)
    assert api.data == {"a": "1", "b": "2"}
    assert api.sent[-1] == ("patch", {"data": {"b": "2"}})
    assert counts.requests == 3  # patch (404), create; patch


def test_keys_and_values() -> None:
    assert key_names(3) == ["memcached-0000", "memcached-0001", "memcached-0002"]
    assert value_of("memcached-0001") == "memcached-0001.ops.svc:11211"


def fake_run(side: str, index: int, wall: float) -> Run:
    phases = {
        name: Phase(
            wall=wall,
            cpu=wall / 10,
            plane_cpu=wall / 2,
            requests=50,
            writes={"PATCH": 50, "POST": 1},
            refused={"409": 2} if side == KOPF_RMW else {},
            conflicts=2 if side == KOPF_RMW else 0,
            reads=50 if side == KOPF_RMW else 0,
            keys_after=50 if name == "set" else 0,
            storage_updates=60,
        )
        for name in ("set", "remove")
    }
    return Run(side, 50, 5, index, "00:00:00", 0.5, peak_rss_kb=40960, phases=phases)


RUNS = [
    fake_run(KCONTROL, 0, 0.2),
    fake_run(KOPF_RMW, 0, 0.5),
    fake_run(KOPF_PATCH, 0, 0.1),
    fake_run(KCONTROL, 1, 0.4),
]


def test_verdict_and_report() -> None:
    got = verdict(RUNS)
    assert got == {
        "50 keys, kcontrol/kopf-rmw": pytest.approx(0.6 / 1.0),
        "50 keys, kcontrol/kopf-patch": pytest.approx(0.6 / 0.2),
    }
    tables = report(RUNS)
    assert "| 50 keys, kcontrol/kopf-rmw | 0.60 | met |" in tables
    assert "| 50 keys, kcontrol/kopf-patch | 3.00 | not met |" in tables
    assert (
        "| 50 | both | kopf-rmw | 1 | 1.00 | 0.60 | 0.10 | 0.50 | 102 | 4 | 4 | 100 | 120 |"
        in tables
    )
    assert raw_table(RUNS).count("\n| 50 |") == 8


def test_points_and_round_trip(tmp_path: Path) -> None:
    points = results_points(RUNS)
    assert len(points) == 3 * 3  # three sides, set/remove/both
    both = next(p for p in points if p["implementation"] == KCONTROL and p["phase"] == "both")
    assert both["wall_seconds"] == pytest.approx(0.6)
    assert both["runs"] == 2 and both["peak_rss_mb"] == 40
    dump(tmp_path / "runs.json", RUNS)
    assert load(tmp_path / "runs.json") == RUNS


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("side", list(IMPLEMENTATIONS))
async def test_each_side_converges_on_envtest(side: str) -> None:
    run = await run_once(side, 10, 5, 0)
    assert run.note == ""
    assert [p.keys_after for p in run.phases.values()] == [10, 0]
    assert all(sum(p.writes.values()) >= 10 for p in run.phases.values())

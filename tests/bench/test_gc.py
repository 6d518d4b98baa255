"""bench/gc: the population plan, the cascade, the log and metric readers, the verification
of what a collector left, the tables, result points and plot; and one tiny run of the whole
benchmark on a cluster (both collectors, about 30 s)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bench.gc._measures import (
    CONTROLLER,
    Phase,
    Run,
    Startup,
    collector_argv,
    graph_queue,
    problems,
    requests_by_method,
    sync_line,
)
from bench.gc._report import dump, load, medians, raw_table, report, results_points
from bench.gc._workload import (
    BACKGROUND_LABEL,
    CRDS,
    DEPENDENT,
    KINDS,
    OWNED_SHARE,
    ROLE_LABEL,
    SURVIVOR_DEPENDENT,
    Cascade,
    cascade_objects,
    item_manifest,
    owner_names,
    plan,
)
from bench.jobs._audit import KCM, KCONTROL
from kcontrol.envtest import ControlPlaneError, find_binary

# ---------------------------------------------------------------------------- workload


def test_twenty_distinct_kinds() -> None:
    assert len(KINDS) == 20
    assert len({(k.resource.group, k.resource.plural) for k in KINDS}) == 20
    assert all(k.resource.namespaced for k in KINDS)
    assert {c["spec"]["names"]["plural"] for c in CRDS} == {"widgets", "gadgets", "gizmos"}
    assert not {"events", "resourcequotas", "persistentvolumeclaims"} & {
        k.resource.plural for k in KINDS
    }


def test_plan() -> None:
    items = plan(1000, 20, 10)
    assert len(items) == 1000
    assert Counter(i.kind for i in items) == dict.fromkeys(range(20), 50)
    assert Counter(i.namespace for i in items) == {f"gc-bg-{n:03d}": 100 for n in range(10)}
    assert len({(i.namespace, i.name) for i in items}) == 1000
    owned = [i for i in items if i.owner is not None]
    assert len(owned) == round(1000 * OWNED_SHARE)
    for item in owned:
        owner = items[item.owner]  # type: ignore[index]
        assert owner.namespace == item.namespace and owner.owner is None
    # owners of many kinds own dependents of many kinds
    assert len({items[i.owner].kind for i in owned if i.owner is not None}) == 20
    assert len({i.kind for i in plan(30, 3, 2)}) == 3
    for bad in ((10, 0, 1), (10, 21, 1), (0, 5, 1), (10, 5, 0)):
        with pytest.raises(ValueError):
            plan(*bad)


def test_item_manifest() -> None:
    items = plan(10, 20, 1)
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u"}
    owned = next(i for i in items if i.owner is not None)
    obj = item_manifest(owned, ref)
    assert obj["metadata"]["ownerReferences"] == [ref]
    assert obj["metadata"]["labels"] == {BACKGROUND_LABEL: "true"}
    assert obj["apiVersion"] == KINDS[owned.kind].resource.api_version
    assert "ownerReferences" not in item_manifest(items[0], None)["metadata"]


def test_cascade() -> None:
    cascade = Cascade(250, 4)
    assert (cascade.survivors, cascade.doomed, cascade.label) == (2, 1000, "250x4")
    assert Cascade(5, 3).survivors == 1
    doomed, kept = owner_names(cascade)
    assert (len(doomed), kept) == (250, ["survivor-00000", "survivor-00001"])
    objects = cascade_objects(Cascade(2, 3), {"owner-00000": "u0", "survivor-00000": "s0"})
    assert len(objects) == 6
    assert [r.plural for r, _ in objects[:3]] == ["configmaps", "secrets", "configmaps"]
    roles = Counter(o["metadata"]["labels"][ROLE_LABEL] for _, o in objects)
    assert roles == {DEPENDENT: 3, SURVIVOR_DEPENDENT: 3}
    ref = objects[0][1]["metadata"]["ownerReferences"]
    assert ref == [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner-00000", "uid": "u0"}]


# ---------------------------------------------------------------------------- readers


def test_collector_argv() -> None:
    argv = ["kcm", "--controllers=deployment-controller,replicaset-controller", "--x=1"]
    assert collector_argv(argv) == ["kcm", f"--controllers={CONTROLLER}", "--x=1"]


def test_sync_line() -> None:
    kcm = 'I1129 garbagecollector.go:166] "Garbage collector: all resource monitors have synced"'
    assert sync_line(KCM, "x\n" + kcm) == (True, False)
    assert sync_line(KCM, "not all resource monitors could be synced, proceeding") == (True, True)
    ours = '{"event": "all monitors synced", "controller": "garbage-collector-controller"}'
    assert sync_line(KCONTROL, ours) == (True, False)
    assert sync_line(KCONTROL, kcm) == (False, False)
    assert sync_line(KCONTROL, "timed out waiting for the monitors to sync") == (True, True)


def test_graph_queue_and_requests() -> None:
    text = "\n".join(
        [
            "# TYPE workqueue_adds_total counter",
            'workqueue_adds_total{name="garbage_collector_graph_changes"} 50123',
            'workqueue_adds_total{name="garbage_collector_attempt_to_delete"} 7',
            'workqueue_depth{name="garbage_collector_graph_changes"} 0',
            'rest_client_requests_total{code="200",host="h",method="GET"} 10',
            'rest_client_requests_total{code="404",host="h",method="GET"} 2',
            'rest_client_requests_total{code="200",host="h",method="DELETE"} 5',
        ]
    )
    assert graph_queue(text) == (50123.0, 0.0)
    adds, depth = graph_queue("")
    assert adds != adds and depth != depth  # NaN: not exported (yet)
    assert requests_by_method(text) == {"GET": 12, "DELETE": 5}


# ---------------------------------------------------------------------------- verification

CASCADE = Cascade(10, 2)  # 20 dependents, 1 survivor with 2
BASELINE = {"configmaps": 100, "secrets": 50}


def run(
    impl: str = KCM,
    index: int = 0,
    *,
    deletes: tuple[int, int] = (10, 10),
    graph: float = 10.0,
    cascade: float = 5.0,
    rss_mb: float = 100.0,
    left: int = 0,
    extra: dict[str, int] | None = None,
) -> Run:
    writes = {"DELETE configmaps": deletes[0], "DELETE secrets": deletes[1], **(extra or {})}
    return Run(
        size="1000/20 10x2",
        limit="unthrottled",
        impl=impl,
        index=index,
        started="10:00:00",
        load=1.0,
        startup=Startup(
            sync_seconds=graph - 1,
            sync_cpu=graph / 2 - 1,
            graph_seconds=graph,
            graph_cpu=graph / 2,
            rss_kb=int(rss_mb * 1024) - 1024,
            graph_events=1000,
        ),
        cascade=Phase(
            wall=cascade,
            cpu=cascade / 5,
            plane_cpu=cascade,
            completed=not left,
            left=left,
            writes=writes,
            others={"kcontrol-bench-gc": 10},
        ),
        peak_rss_kb=int(rss_mb * 1024),
        total_cpu=graph,
        requests={"GET": 40, "DELETE": 20},
    )


def test_verification_passes_a_collector_that_did_its_job() -> None:
    assert problems(run(), CASCADE, 3, BASELINE, dict(BASELINE)) == []


@pytest.mark.parametrize(
    ("changes", "survivors", "after", "found"),
    [
        ({"left": 4, "deletes": (6, 10)}, 3, BASELINE, "4 of 20 dependents left"),
        ({}, 1, BASELINE, "1 of 3 survivors"),
        ({}, 3, {"configmaps": 99, "secrets": 50}, "configmaps: 99 objects after the run"),
        ({"deletes": (12, 10)}, 3, BASELINE, "22 successful deletes of 20"),
        ({"extra": {"PATCH configmaps": 1}}, 3, BASELINE, "other writes"),
    ],
    ids=["dependents-left", "survivor-deleted", "start-up-object-deleted", "extra-deletes",
         "other-writes"],
)  # fmt: skip
def test_verification_finds(
    changes: dict[str, object], survivors: int, after: dict[str, int], found: str
) -> None:
    got = problems(run(**changes), CASCADE, survivors, BASELINE, after)  # type: ignore[arg-type]
    assert any(found in p for p in got), got


def test_verification_startup() -> None:
    r = run()
    r.startup.writes = {"DELETE leases": 1}
    r.startup.completed = False
    got = problems(r, CASCADE, 3, BASELINE, BASELINE)
    assert "graph never synced" in got
    assert any("writes during start-up" in p for p in got)


# ---------------------------------------------------------------------------- report

RUNS = [
    run(KCM, 0, graph=10.0, cascade=5.0, rss_mb=200),
    run(KCONTROL, 0, graph=8.0, cascade=6.0, rss_mb=150),
    run(KCONTROL, 1, graph=12.0, cascade=6.0, rss_mb=170),
    run(KCM, 1, graph=10.0, cascade=5.0, rss_mb=200),
]


def test_medians() -> None:
    c = medians([r for r in RUNS if r.impl == KCONTROL])
    assert (c["runs"], c["graph_seconds"], c["graph_cpu"], c["rss"]) == (2, 10.0, 5.0, 160.0)
    assert (c["cascade_seconds"], c["cascade_cpu"], c["deletes"]) == (6.0, 1.2, 20.0)


def test_report() -> None:
    text = report(RUNS)
    assert (
        "| 1000/20 10x2 | unthrottled | 2+2 | start-up | graph synced s | 10.0 | 10.0 | 1.00 |"
        in text
    )
    assert "| cascade | time s | 5.0 | 6.0 | 1.20 |" in text
    # start-up 1.0, CPU 1.0, cascade time 1.2, cascade CPU 1.2, RSS 160/200
    assert (
        "| 1000/20 10x2 | unthrottled | 1.00 (met) | 1.00 (met) | 1.20 (missed) | 1.20 (met) "
        "| 0.80 (met) |"
    ) in text
    assert "| DELETE secrets | 10 | 10 |" in text
    raw = raw_table(RUNS)
    assert raw.count("| ok |") == 4
    broken = run(KCONTROL, 2, left=3)
    broken.problems = ["3 of 20 dependents left"]
    assert "(TIMED OUT)" in raw_table([broken]) and "3 of 20 dependents left" in raw_table([broken])
    assert "| - | - |" in report([r for r in RUNS if r.impl == KCM])  # one side only


def test_points_dump_load_and_plot(tmp_path: Path) -> None:
    points = results_points(RUNS)
    assert [p["implementation"] for p in points] == ["KCM", "kcontrol"]
    kcm = points[0]
    assert (kcm["objects"], kcm["kinds"], kcm["owners"], kcm["dependents_per_owner"]) == (
        1000, 20, 10, 2
    )  # fmt: skip
    assert (kcm["qps"], kcm["verified_runs"], kcm["cascade_deletes"]) == (None, 2, 20.0)
    path = tmp_path / "runs.json"
    dump(path, RUNS)
    assert load(path) == RUNS

    from bench.gc._plot import plot_gc  # noqa: PLC0415 - matplotlib only here

    doc = {
        "measured": {"date": "2026-11-29"},
        "machine": {"cpus": 2, "python": "3.11.7", "load_average": [1.0, 2.0]},
        "parameters": {},
        "points": points,
    }
    assert plot_gc(doc, tmp_path / "gc.png").read_bytes()[:4] == b"\x89PNG"


# ---------------------------------------------------------------------------- a tiny run


def _cluster_binaries() -> bool:
    try:
        for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"):
            find_binary(name)
    except ControlPlaneError:
        return False
    return True


@pytest.mark.skipif(not _cluster_binaries(), reason="cluster binaries not built (make assets)")
def test_tiny_run_on_a_cluster(tmp_path: Path) -> None:
    from bench.gc.__main__ import main  # noqa: PLC0415

    out, results, plot = tmp_path / "gc.md", tmp_path / "gc.json", tmp_path / "gc.png"
    argv = ["--objects", "200", "--kinds", "20", "--namespaces", "4", "--owners", "10"]
    argv += ["--dependents", "3", "--runs", "1", "--timeout", "60", "--out", str(out)]
    argv += ["--json", str(results), "--plot", str(plot)]
    assert main(argv) == 0
    doc = json.loads(results.read_text())
    assert doc["suite"] == "gc"
    assert [p["implementation"] for p in doc["points"]] == ["KCM", "kcontrol"]
    for point in doc["points"]:
        assert point["verified_runs"] == 1
        assert point["cascade_deletes"] == 30
        assert point["startup_seconds"] > 0 and point["peak_rss_mb"] > 0
    assert all(not r["problems"] for r in doc["runs"])
    assert "## The issue's targets" in out.read_text()
    assert plot.read_bytes()[:4] == b"\x89PNG"

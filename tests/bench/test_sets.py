"""bench/sets: the workloads, the rollout check, the audit attribution by controller, the
tables, result points and plot (no cluster)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from bench.jobs._audit import KCM, KCONTROL, is_job_controller, writes_between
from bench.rollout import AuditWrite, Phase, writer_of
from bench.sets.__main__ import parse_sizes
from bench.sets._report import dump, load, medians, raw_table, report, results_points, verdict
from bench.sets._run import (
    CLIENT_NAMES,
    CLUSTER_CONTROLLERS,
    Run,
    controller_argv,
    controller_timings,
)
from bench.sets._workload import (
    DS,
    POOL_LABEL,
    STS,
    Size,
    daemonset,
    is_rolled_out,
    node_pools,
    set_names,
    spare_nodes,
    statefulset,
    template_patch,
)

# ---------------------------------------------------------------------------- workload


def test_size_parse() -> None:
    assert Size.parse("sts=50x5") == Size(STS, 50, 5)
    assert Size.parse(" DS=5x50 ") == Size(DS, 5, 50)
    assert Size.parse("sts=50x5").label == "sts=50x5"
    assert Size.parse("ds=5x50").pods == 250
    for bad in ("50x5", "rs=1x1", "sts=1x1x1", "sts=0x5", "ds=axb", "ds=111x2"):
        with pytest.raises(ValueError):
            Size.parse(bad)


def test_parse_sizes_refuses_duplicates() -> None:
    assert parse_sizes("sts=3x3,ds=2x5,") == [Size(STS, 3, 3), Size(DS, 2, 5)]
    with pytest.raises(ValueError):
        parse_sizes("sts=3x3,sts=3x3")


def test_nodes() -> None:
    sizes = [Size(STS, 50, 5), Size(DS, 5, 50), Size(DS, 2, 10), Size(DS, 1, 50)]
    assert spare_nodes(sizes) == 4  # ceil(250 / 110) + 1
    assert spare_nodes([Size(DS, 1, 5)]) == 1
    # the first 10 nodes in both pools, the next 40 in the 50-node pool only
    assert node_pools(sizes) == [
        (10, {POOL_LABEL.format(nodes=10): "true", POOL_LABEL.format(nodes=50): "true"}),
        (40, {POOL_LABEL.format(nodes=50): "true"}),
    ]
    assert node_pools([Size(STS, 1, 1)]) == []


def test_manifests() -> None:
    assert set_names(Size(STS, 2, 3)) == ["sts-0000", "sts-0001"]
    sts = statefulset("sts-0000", 5)
    assert sts["spec"]["replicas"] == 5
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
    assert "volumeClaimTemplates" not in sts["spec"]
    ds = daemonset("ds-0000", 50)
    assert ds["spec"]["template"]["spec"]["nodeSelector"] == {
        "bench.kcontrol.io/ds-pool-50": "true"
    }
    assert ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == "10%"
    for obj in (sts, ds):
        selector = obj["spec"]["selector"]["matchLabels"]
        assert selector.items() <= obj["spec"]["template"]["metadata"]["labels"].items()
    patch = template_patch(1)
    assert patch["spec"]["template"]["metadata"]["annotations"]


def sts_obj(generation: int = 2, observed: int = 2, **status: Any) -> dict[str, Any]:
    base = {
        "replicas": 5,
        "readyReplicas": 5,
        "availableReplicas": 5,
        "updatedReplicas": 5,
        "currentRevision": "s-2",
        "updateRevision": "s-2",
        "observedGeneration": observed,
    }
    return {
        "metadata": {"generation": generation},
        "spec": {"replicas": 5},
        "status": {**base, **status},
    }


@pytest.mark.parametrize(
    ("obj", "generation", "expected"),
    [
        (sts_obj(), 2, True),
        (sts_obj(), 3, False),  # the phase's write not seen yet
        (sts_obj(observed=1), 2, False),
        (sts_obj(readyReplicas=4), 2, False),
        (sts_obj(updatedReplicas=4), 2, False),
        (sts_obj(currentRevision="s-1"), 2, False),  # update not completed
        (sts_obj(replicas=6), 2, False),  # an extra pod (old one not gone)
        (sts_obj(currentRevision=None, updateRevision=None), 2, False),
        ({"metadata": {"generation": 1}, "spec": {"replicas": 5}}, 1, False),  # no status
    ],
    ids=["done", "old-generation", "not-observed", "not-ready", "not-updated", "revision",
         "surplus", "no-revisions", "no-status"],
)  # fmt: skip
def test_statefulset_rolled_out(obj: dict[str, Any], generation: int, expected: bool) -> None:
    assert is_rolled_out(Size(STS, 1, 5), obj, generation) is expected


def ds_obj(generation: int = 2, **status: Any) -> dict[str, Any]:
    counts = (
        "desiredNumberScheduled",
        "currentNumberScheduled",
        "updatedNumberScheduled",
        "numberReady",
        "numberAvailable",
    )
    base: dict[str, Any] = dict.fromkeys(counts, 50)
    base["numberMisscheduled"] = 0
    base["observedGeneration"] = generation
    return {"metadata": {"generation": generation}, "spec": {}, "status": {**base, **status}}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (ds_obj(), True),
        (ds_obj(observedGeneration=1), False),
        (ds_obj(updatedNumberScheduled=45), False),
        (ds_obj(numberReady=49), False),
        (ds_obj(desiredNumberScheduled=53, currentNumberScheduled=53), False),  # wrong pool
        (ds_obj(numberMisscheduled=1), False),
        (ds_obj(numberUnavailable=2), False),
    ],
    ids=["done", "not-observed", "not-updated", "not-ready", "pool", "misscheduled",
         "unavailable"],
)  # fmt: skip
def test_daemonset_rolled_out(obj: dict[str, Any], expected: bool) -> None:
    assert is_rolled_out(Size(DS, 1, 50), obj, 2) is expected


# ---------------------------------------------------------------------------- processes, audit


def test_controller_lists() -> None:
    assert CLUSTER_CONTROLLERS == (
        "*",
        "-deployment-controller",
        "-replicaset-controller",
        "-statefulset-controller",
        "-daemonset-controller",
    )
    argv = ["kcm", "--controllers=deployment-controller,replicaset-controller", "--x=1"]
    assert controller_argv(argv, STS) == ["kcm", "--controllers=statefulset-controller", "--x=1"]
    assert controller_argv(argv, DS)[1] == "--controllers=daemonset-controller"


KCM_DS = "kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/abcdef/daemon-set-controller"
KCM_STS = "kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/abcdef/statefulset-controller"
KCM_GC = "kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/abcdef/generic-garbage-collector"


def test_writes_by_controller_client() -> None:
    ds = CLIENT_NAMES[DS]
    assert is_job_controller(KCM, writer_of(KCM_DS), ds)
    assert not is_job_controller(KCM, writer_of(KCM_STS), ds)
    assert is_job_controller(KCM, writer_of(KCM_STS), CLIENT_NAMES[STS])
    assert is_job_controller(KCONTROL, writer_of("kcontrol-manager/h_1/daemonset-controller"), ds)
    audit = [
        AuditWrite(at=1.0, writer=writer_of(KCM_DS), key="POST pods", code=201),
        AuditWrite(at=1.5, writer=writer_of(KCM_DS), key="PUT apps/daemonsets/status", code=409),
        AuditWrite(at=2.0, writer=writer_of(KCM_GC), key="DELETE pods", code=200),
        AuditWrite(at=3.0, writer=writer_of(KCM_DS), key="POST pods", code=201),
    ]
    window = writes_between(audit, KCM, 1.0, 3.0, ds)
    assert dict(window.writes) == {"POST pods": 1, "PUT apps/daemonsets/status": 1}
    assert dict(window.errors) == {"PUT apps/daemonsets/status 409": 1}
    assert dict(window.others) == {"kube-controller-manager/generic-garbage-collector": 1}
    # the job controller's default is unchanged
    assert writes_between(audit, KCM, 0.0, 9.0).total == 4
    assert not writes_between(audit, KCM, 0.0, 9.0).writes


def test_controller_timings() -> None:
    text = "\n".join(
        [
            "# HELP workqueue_work_duration_seconds ...",
            'workqueue_work_duration_seconds_count{name="daemonset"} 40',
            'workqueue_work_duration_seconds_sum{name="daemonset"} 2',
            'workqueue_work_duration_seconds_count{name="other"} 99',
            'workqueue_queue_duration_seconds_count{name="daemonset"} 40',
            'workqueue_queue_duration_seconds_sum{name="daemonset"} 0.4',
            'daemonset_controller_stale_sync_skips_total{group="",resource="pods"} 3',
        ]
    )
    assert controller_timings(text, "daemonset") == {
        "work_count": 40.0,
        "work_sum": 2.0,
        "queue_wait_count": 40.0,
        "queue_wait_sum": 0.4,
        "stale_skips": 3.0,
    }


# ---------------------------------------------------------------------------- report


def run(
    impl: str,
    index: int,
    create: float,
    again: float,
    writes: int,
    *,
    rss_mb: float = 100.0,
    size: str = "sts=10x5",
    limit: str = "20:30",
    completed: bool = True,
) -> Run:
    def phase(wall: float, w: int) -> Phase:
        return Phase(
            wall=wall,
            p50=wall / 2,
            cpu=wall / 10,
            plane_cpu=wall,
            completed=completed,
            writes={"POST pods": 50, "PUT apps/statefulsets/status": w - 50},
            errors={"PUT apps/statefulsets/status 409": 1} if impl == KCONTROL else {},
            others={"kwok": 100},
        )

    return Run(
        size=size,
        limit=limit,
        impl=impl,
        index=index,
        started="10:00:00",
        load=1.0,
        start_cpu=0.5,
        peak_rss_kb=int(rss_mb * 1024),
        phases={"create": phase(create, writes), "retemplate": phase(again, writes)},
    )


RUNS = [
    run(KCM, 0, 10.0, 10.0, 100, rss_mb=80),
    run(KCM, 1, 20.0, 20.0, 120, rss_mb=80),
    run(KCONTROL, 0, 10.0, 12.0, 100, rss_mb=50),
    run(KCONTROL, 1, 12.0, 12.0, 120, rss_mb=60, completed=False),
]


def test_medians() -> None:
    k = medians([r for r in RUNS if r.impl == KCM])
    assert (k["runs"], k["wall"], k["cpu"], k["writes"], k["rss"]) == (2, 30.0, 3.0, 22.0, 80.0)
    assert (k["create_wall"], k["retemplate_wall"], k["create_writes"]) == (15.0, 15.0, 11.0)
    c = medians([r for r in RUNS if r.impl == KCONTROL])
    assert (c["wall"], c["completed"], c["errors"], c["rss"]) == (23.0, 1, 0.2, 55.0)
    assert math.isnan(medians([])["wall"])


def test_report_ratios_and_targets() -> None:
    text = report(RUNS)
    # time 23/30, CPU 2.3/3.0, writes 22/22, RSS 55/80 = 0.6875
    assert "| sts=10x5 | 20:30 | 2+2 | 30.0 | 23.0 | 0.77 | 3.00 | 2.30 | 0.77 " in text
    assert "| 22.0 | 22.0 | 1.00 | 80 | 55 | 0.69 |" in text
    assert "| sts=10x5 | 20:30 | 0.77 (met) | 0.77 (met) | 1.00 (met) | 0.69 (met) |" in text
    assert "| sts=10x5 | 20:30 | retemplate | 15.0 | 12.0 | 0.80 |" in text
    assert "| PUT apps/statefulsets/status | 6.00 | 6.00 | 6.00 | 6.00 |" in text
    assert "| non-2xx | 0.00 | 0.10 | 0.00 | 0.10 |" in text


def test_report_with_one_side_only() -> None:
    text = report([r for r in RUNS if r.impl == KCM])
    assert "| sts=10x5 | 20:30 | 2+0 | 30.0 | - | - |" in text
    assert "| sts=10x5 | 20:30 | - | - | - | - |" in text


def test_verdict() -> None:
    assert verdict(0.704, 0.7) == "0.704 (missed)"
    assert verdict(1.0004, 1.0) == "1.0004 (missed)"
    assert verdict(0.69, 0.7) == "0.69 (met)"
    assert verdict(math.nan, 1.0) == "-"


def test_raw_table_marks_timeouts() -> None:
    text = raw_table(RUNS)
    assert text.count("(TIMED OUT)") == 2  # both phases of one run
    assert "| kwok 100 |" in text


def test_points_and_order() -> None:
    runs = [*RUNS, run(KCM, 0, 5.0, 5.0, 60, size="ds=2x5", limit="unthrottled")]
    points = results_points(runs)
    assert [(p["size"], p["implementation"]) for p in points] == [
        ("sts=10x5", "KCM"),
        ("sts=10x5", "kcontrol"),
        ("ds=2x5", "KCM"),
    ]
    kcm = points[0]
    assert (kcm["sets"], kcm["replicas"], kcm["pods"], kcm["qps"], kcm["burst"]) == (
        10, 5, 50, 20.0, 30
    )  # fmt: skip
    assert kcm["phases"]["create"]["writes_per_set_by_key"] == {
        "POST pods": 5.0,
        "PUT apps/statefulsets/status": 6.0,
    }
    assert (points[2]["nodes"], points[2]["qps"], points[2]["burst"]) == (5, None, None)


def test_dump_and_load(tmp_path: Path) -> None:
    path = tmp_path / "runs.json"
    dump(path, RUNS)
    loaded = load(path)
    assert loaded == RUNS
    assert isinstance(loaded[0].phases["create"], Phase)


def test_plot(tmp_path: Path) -> None:
    from bench.sets._plot import plot_sets  # noqa: PLC0415 - matplotlib only here

    doc = {
        "measured": {"date": "2026-11-29"},
        "machine": {"cpus": 2, "python": "3.11.7", "load_average": [1.0, 2.0]},
        "parameters": {"pod_ready_delay_seconds": 1.0, "daemonset_max_unavailable": "10%"},
        "points": results_points(RUNS),
    }
    path = plot_sets(doc, tmp_path / "sets.png")
    assert path.read_bytes()[:4] == b"\x89PNG"

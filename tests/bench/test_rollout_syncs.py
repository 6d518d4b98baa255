"""bench/rollout's per-run syncs table: read from both managers' own metrics."""

from __future__ import annotations

from bench.rollout import (
    QUEUES,
    Run,
    concurrent_syncs_flags,
    controller_timings,
    process_cpu_seconds,
    syncs_table,
)

METRICS = """\
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
process_cpu_seconds_total 1.5
workqueue_work_duration_seconds_count{name="deployment"} 1000
workqueue_work_duration_seconds_sum{name="deployment"} 20
workqueue_queue_duration_seconds_count{name="deployment"} 1000
workqueue_queue_duration_seconds_sum{name="deployment"} 10
workqueue_work_duration_seconds_count{name="replicaset"} 500.0
workqueue_work_duration_seconds_sum{name="replicaset"} 5.0
workqueue_queue_duration_seconds_count{name="replicaset"} 500.0
workqueue_queue_duration_seconds_sum{name="replicaset"} 50.0
workqueue_work_duration_seconds_count{name="job"} 7
replicaset_controller_stale_sync_skips_total{group="apps",resource="replicasets"} 40
replicaset_controller_stale_sync_skips_total{group="",resource="pods"} 2.0
"""


def _run(**fields: object) -> Run:
    return Run("50x3", "unthrottled", "kcontrol", 0, "10:00:00", 0.5, **fields)  # type: ignore[arg-type]


def test_process_cpu_seconds() -> None:
    assert process_cpu_seconds(METRICS) == 1.5
    assert process_cpu_seconds("process_cpu_seconds_total_other 3\n") is None


def test_syncs_table_row() -> None:
    run = _run(
        queues={q: controller_timings(METRICS, q) for q in QUEUES},
        process_cpu=process_cpu_seconds(METRICS),
    )
    rows = [line for line in syncs_table([run]) if line.startswith("| 50x3")]
    # 1,500 syncs; waits 10 and 100 ms, work 20 and 10 ms; 42 stale skips; 1.5 s / 1,500.
    assert rows == [
        "| 50x3 | unthrottled | 1 s | kcontrol | 0 | 1000 / 500 | 10.0 / 100.0 | 20.0 / 10.0 "
        "| 42 | 1.50 | 1.000 |"
    ]


def test_syncs_table_leaves_out_runs_stored_before_it() -> None:
    assert syncs_table([_run()]) == []


def test_concurrent_syncs_flags() -> None:
    assert concurrent_syncs_flags(0) == []  # the managers' own default, on both sides
    assert concurrent_syncs_flags(1) == [
        "--concurrent-deployment-syncs=1",
        "--concurrent-replicaset-syncs=1",
    ]

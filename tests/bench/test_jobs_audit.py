"""bench/jobs's attribution of audit-log writes to the job controller under test."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bench.jobs._audit import KCM, KCONTROL, WriterTail, is_job_controller, writes_between
from bench.jobs._run import CLUSTER_CONTROLLERS, controller_argv, controller_timings, side_order
from bench.rollout import AuditWrite, writer_of

KCM_AGENT = "kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/abcdef/job-controller"
KCONTROL_AGENT = "kcontrol-manager/host_1234/job-controller"


@pytest.mark.parametrize(
    ("impl", "agent", "expected"),
    [
        (KCM, KCM_AGENT, True),
        (KCM, KCONTROL_AGENT, False),
        (KCM, "kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/abcdef/"
         "generic-garbage-collector", False),
        (KCM, "kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/abcdef/"
         "ttl-after-finished-controller", False),
        (KCONTROL, KCONTROL_AGENT, True),
        (KCONTROL, KCM_AGENT, False),
        (KCONTROL, "kwok/v0.8.0", False),
    ],
    ids=["kcm", "kcm-not-kcontrol", "kcm-gc", "kcm-ttl", "kcontrol", "kcontrol-not-kcm", "kwok"],
)  # fmt: skip
def test_is_job_controller(impl: str, agent: str, expected: bool) -> None:
    assert is_job_controller(impl, writer_of(agent)) is expected


def write(at: float, agent: str, key: str = "POST pods", code: int = 201) -> AuditWrite:
    return AuditWrite(at=at, writer=writer_of(agent), key=key, code=code)


def test_writes_between() -> None:
    audit = [
        write(9.9, KCM_AGENT),  # before the window
        write(10.0, KCM_AGENT),
        write(11.0, KCM_AGENT, "PUT batch/jobs/status", 409),
        write(11.5, KCONTROL_AGENT),  # the other side: someone else here
        write(12.0, "kwok/v0.8.0", "PATCH pods/status", 200),
        write(20.0, KCM_AGENT),  # the window's end is open
    ]
    window = writes_between(audit, KCM, 10.0, 20.0)
    assert dict(window.writes) == {"POST pods": 1, "PUT batch/jobs/status": 1}
    assert dict(window.errors) == {"PUT batch/jobs/status 409": 1}
    assert dict(window.others) == {"kcontrol-manager": 1, "kwok": 1}
    assert window.total == 4


def event_line(at: str, agent: str) -> str:
    return json.dumps(
        {
            "stage": "ResponseComplete",
            "verb": "create",
            "userAgent": agent,
            "objectRef": {"resource": "pods", "namespace": "ns"},
            "responseStatus": {"code": 201},
            "requestReceivedTimestamp": at,
        }
    )


def test_tail_follows_only_the_side_under_test(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    log.write_text(event_line("2026-11-25T10:00:01Z", "kwok/v0.8.0") + "\n")
    tail = WriterTail(log, log.stat().st_size, KCONTROL)
    with log.open("a") as out:
        out.write(event_line("2026-11-25T10:00:02Z", KCONTROL_AGENT) + "\n")
        out.write(event_line("2026-11-25T10:00:05Z", KCM_AGENT) + "\n")
        out.write(event_line("2026-11-25T10:00:09Z", KCONTROL_AGENT)[:40])  # half a line
    tail.poll()
    assert tail.last_write == 1795600802.0
    with log.open("a") as out:
        out.write(event_line("2026-11-25T10:00:09Z", KCONTROL_AGENT)[40:] + "\n")
    tail.poll()
    assert tail.last_write == 1795600809.0


def test_wait_quiet_returns_once_nothing_is_written(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    log.write_text(event_line("2020-01-01T00:00:02Z", KCM_AGENT) + "\n")  # long ago
    tail = WriterTail(log, 0, KCM)
    last = asyncio.run(tail.wait_quiet(0.1, 60.0))
    assert last == 1577836802.0


def test_controller_argv_runs_only_the_job_controller() -> None:
    argv = [
        "kcm",
        "--kubeconfig=k",
        "--controllers=deployment-controller,x",
        "--leader-elect=false",
    ]
    assert controller_argv(argv) == [
        "kcm",
        "--kubeconfig=k",
        "--controllers=job-controller",
        "--leader-elect=false",
    ]


def test_the_clusters_kcm_runs_no_job_controller() -> None:
    assert "-job-controller" in CLUSTER_CONTROLLERS
    assert CLUSTER_CONTROLLERS[0] == "*"


def test_side_order_alternates() -> None:
    assert [side_order(i) for i in range(3)] == [
        (KCM, KCONTROL),
        (KCONTROL, KCM),
        (KCM, KCONTROL),
    ]


_SYNC = "job_controller_job_sync_duration_seconds"
_RECONCILING = 'action="reconciling",completion_mode="NonIndexed",result="success"'
_CREATED = 'action="pods_created",completion_mode="NonIndexed",result="success"'
METRICS = f"""\
# HELP {_SYNC} The time it took to sync a job
# TYPE {_SYNC} histogram
{_SYNC}_bucket{{{_RECONCILING},le="0.004"}} 3
{_SYNC}_sum{{{_RECONCILING}}} 1.5
{_SYNC}_count{{{_RECONCILING}}} 10
{_SYNC}_sum{{{_CREATED}}} 0.5
{_SYNC}_count{{{_CREATED}}} 5
workqueue_queue_duration_seconds_sum{{name="job"}} 7.25
workqueue_queue_duration_seconds_count{{name="job"}} 20
workqueue_queue_duration_seconds_sum{{name="job_orphan_pod"}} 100
workqueue_queue_duration_seconds_count{{name="job_orphan_pod"}} 100
workqueue_work_duration_seconds_sum{{name="job"}} 2
workqueue_work_duration_seconds_count{{name="job"}} 20
rest_client_requests_total{{code="201",host="127.0.0.1:6443",method="POST"}} 12
"""


def test_controller_timings_sum_the_job_queue_and_syncs() -> None:
    assert controller_timings(METRICS) == {
        "sync_sum": 2.0,
        "sync_count": 15.0,
        "queue_wait_sum": 7.25,
        "queue_wait_count": 20.0,
        "work_sum": 2.0,
        "work_count": 20.0,
    }

"""What a run measures, and the readers and checks that need no cluster: the runs'
dataclasses, the collectors' sync log lines, the graph-changes queue and client requests in
a ``/metrics`` text, and the verification of what a collector left behind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from bench.gc._workload import Cascade
from bench.jobs._audit import KCM, KCONTROL
from bench.rollout import _LABEL, controller_requests

__all__ = [
    "CLIENT_NAME",
    "CONTROLLER",
    "DELETE_QUEUE",
    "GRAPH_QUEUE",
    "IMPLS",
    "SYNC_LINES",
    "Phase",
    "Run",
    "Startup",
    "collector_argv",
    "describe",
    "graph_queue",
    "problems",
    "requests_by_method",
    "size_label",
    "sync_line",
]

IMPLS = (KCM, KCONTROL)
CONTROLLER = "garbage-collector-controller"
"""``--controllers`` of the process under test, on both sides."""
CLIENT_NAME = "generic-garbage-collector"
"""The name KCM gives the collector's clients (the last part of their user agent)."""
GRAPH_QUEUE = "garbage_collector_graph_changes"
DELETE_QUEUE = "garbage_collector_attempt_to_delete"
SYNC_LINES = {
    KCM: ("all resource monitors have synced", "not all resource monitors could be synced"),
    KCONTROL: ("all monitors synced", "timed out waiting for the monitors to sync"),
}
"""Each collector's log line once its monitors have listed, and the one when its 30 s
initial sync timeout passed first (both then start their workers)."""


@dataclass
class Startup:
    """From the process's exec: its monitors synced (its log line) and its graph synced (the
    graph-changes queue empty after at least every start-up object's event)."""

    sync_seconds: float = 0.0
    sync_cpu: float = 0.0
    graph_seconds: float = 0.0
    graph_cpu: float = 0.0
    rss_kb: int = 0  # VmHWM at graph synced
    plane_cpu: float = 0.0  # kube-apiserver + etcd CPU-seconds, exec -> graph synced
    graph_events: int = 0  # graph-changes adds at graph synced
    backlog: int = -1  # graph-changes depth at the first scrape after monitors synced
    timed_out: bool = False  # the collector's own 30 s sync timeout passed first
    completed: bool = True  # graph synced within --timeout
    writes: dict[str, int] = field(default_factory=dict)  # the collector's, exec -> synced


@dataclass
class Phase:
    """The cascade: the owners' deletes until every dependent is gone."""

    wall: float = 0.0  # first owner DELETE sent -> last dependent seen gone
    create_seconds: float = 0.0  # the benchmark's creation of the cascade objects
    cpu: float = 0.0  # the collector, first DELETE -> its quiet tail's end
    plane_cpu: float = 0.0  # kube-apiserver + etcd, same window
    completed: bool = True
    left: int = 0  # dependents left at the end
    lag: float = 0.0  # from the last dependent gone to the collector's last write
    writes: dict[str, int] = field(default_factory=dict)  # the collector's, by key
    errors: dict[str, int] = field(default_factory=dict)  # its non-2xx answers
    others: dict[str, int] = field(default_factory=dict)  # every other writer
    metric_writes: int = 0  # apiserver_request_total, every writer
    audit_writes: int = 0  # the audit log, every writer


@dataclass
class Run:
    size: str  # "50000/20 1000x10": objects / kinds, owners x dependents
    limit: str
    impl: str
    index: int
    started: str
    load: float
    startup: Startup = field(default_factory=Startup)
    cascade: Phase = field(default_factory=Phase)
    peak_rss_kb: int = 0  # VmHWM at the end of the run
    total_cpu: float = math.nan  # the process's CPU-seconds from exec to the end of the run
    requests: dict[str, int] = field(default_factory=dict)  # its own client, by method
    timings: dict[str, float] = field(default_factory=dict)  # attempt-to-delete queue
    problems: list[str] = field(default_factory=list)  # what the verification found

    @property
    def completed(self) -> bool:
        return self.startup.completed and self.cascade.completed and not self.problems


def size_label(objects: int, kinds: int, cascade: Cascade) -> str:
    return f"{objects}/{kinds} {cascade.label}"


def collector_argv(argv: list[str]) -> list[str]:
    """bench/rollout.py's controller command line with ``--controllers`` the collector."""
    return [f"--controllers={CONTROLLER}" if a.startswith("--controllers=") else a for a in argv]


def sync_line(impl: str, text: str) -> tuple[bool, bool]:
    """Whether ``text`` (log lines) holds the collector's sync line, and whether that line
    says its sync timed out."""
    synced, timed_out = SYNC_LINES[impl]
    if timed_out in text:
        return True, True
    return synced in text, False


def graph_queue(text: str, queue: str = GRAPH_QUEUE) -> tuple[float, float]:
    """``workqueue_adds_total`` and ``workqueue_depth`` of ``queue`` in a ``/metrics`` text
    (NaN where absent)."""
    adds = depth = float("nan")
    for line in text.splitlines():
        if not line.startswith(("workqueue_adds_total{", "workqueue_depth{")):
            continue
        series, _, value = line.rpartition(" ")
        name, _, labels = series.partition("{")
        if dict(_LABEL.findall(labels)).get("name") != queue:
            continue
        if name == "workqueue_adds_total":
            adds = float(value)
        else:
            depth = float(value)
    return adds, depth


def requests_by_method(text: str) -> dict[str, int]:
    """The process's ``rest_client_requests_total`` by method (bench/rollout's reader)."""
    return dict(controller_requests(text)[0])


def problems(
    run: Run,
    cascade: Cascade,
    survivors_seen: int,
    baseline: dict[str, int],
    after: dict[str, int],
) -> list[str]:
    """What shows a collector did not do its job, or did harm: dependents left, survivors
    (owners that were not deleted, and their dependents) missing, start-up objects gone,
    fewer or more successful deletes than dependents, writes to anything else."""
    found = []
    if not run.startup.completed:
        found.append("graph never synced")
    if run.cascade.left or not run.cascade.completed:
        found.append(f"{run.cascade.left} of {cascade.doomed} dependents left")
    expected = cascade.survivors * (1 + cascade.dependents)
    if survivors_seen != expected:
        found.append(f"{survivors_seen} of {expected} survivors and their dependents left")
    for kind, count in baseline.items():
        if after.get(kind) != count:
            found.append(f"{kind}: {after.get(kind)} objects after the run, {count} before")
    deletes = sum(
        c for k, c in run.cascade.writes.items() if k in ("DELETE configmaps", "DELETE secrets")
    )
    failed = sum(
        c
        for k, c in run.cascade.errors.items()
        if k.startswith(("DELETE configmaps ", "DELETE secrets "))
    )
    if deletes - failed != cascade.doomed:
        found.append(f"{deletes - failed} successful deletes of {cascade.doomed} dependents")
    other = {
        k: c
        for k, c in run.cascade.writes.items()
        if k not in ("DELETE configmaps", "DELETE secrets")
    }
    if other:
        found.append(f"other writes: {other}")
    if sum(run.startup.writes.values()):
        found.append(f"writes during start-up: {run.startup.writes}")
    return found


def describe(run: Run) -> str:
    """One line of progress for a run."""
    s, c = run.startup, run.cascade
    return (
        f"{run.size} {run.limit:>11} {run.impl:>8} run {run.index}: start-up synced "
        f"{s.sync_seconds:.1f}s graph {s.graph_seconds:.1f}s cpu {s.graph_cpu:.2f}s "
        f"rss {s.rss_kb / 1024:.0f}MB; cascade {c.wall:.1f}s cpu {c.cpu:.2f}s writes "
        f"{sum(c.writes.values())}; peak rss {run.peak_rss_kb / 1024:.0f}MB load "
        f"{run.load:.2f}" + (f" PROBLEMS: {'; '.join(run.problems)}" if run.problems else "")
    )

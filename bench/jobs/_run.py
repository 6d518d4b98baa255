"""One run: a controller manager with only its job controller, N Jobs, until all complete.

The cluster, the controller processes and the measurements are bench/rollout.py's
(``ControllerProcess``, ``Limit``, ``scrape_writes``, ``read_audit``), with the controller
list set to ``job-controller`` on both sides.
"""

from __future__ import annotations

import asyncio
import datetime
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import aiohttp

from bench._process import load_average, proc_cpu, proc_status_kb
from bench.jobs._audit import JOB_CONTROLLER, KCM, KCONTROL, WriterTail, writes_between
from bench.jobs._workload import Size, finished, job, job_names, node_count, succeeded_failed
from bench.rollout import (
    AUDIT_POLICY,
    ControllerProcess,
    Limit,
    controller_env,
    controller_requests,
    read_audit,
    scrape_controller,
    scrape_writes,
)
from bench.rollout import controller_timings as queue_timings
from kcontrol.client import JOBS, NAMESPACES, ApiClient, load_config
from kcontrol.envtest.cluster import WITHOUT_WORKLOAD_CONTROLLERS, Cluster
from kcontrol.errors import NotFound
from kcontrol.informers import SharedInformerFactory

__all__ = [
    "CLUSTER_CONTROLLERS",
    "DEFAULT_READY_DELAY",
    "IMPLS",
    "Bench",
    "ControllerBench",
    "Run",
    "controller_argv",
    "controller_timings",
    "describe",
    "run_size",
    "side_order",
]

IMPLS = (KCM, KCONTROL)
BENCH_USER_AGENT = "kcontrol-bench-jobs"
CLUSTER_CONTROLLERS = (*WITHOUT_WORKLOAD_CONTROLLERS, f"-{JOB_CONTROLLER}")
"""The cluster's own kube-controller-manager: everything but the workload controllers and
the job controller (garbage collector, namespace, service-account controllers keep running)."""
DEFAULT_READY_DELAY = 1.0
"""kwok's start -> Ready seconds of runs that do not record theirs (before it was a cell)."""
CREATE_CONCURRENCY = 16
SETTLE_SECONDS = 2.0
QUIET_SECONDS = 2.0
QUIET_TIMEOUT = 300.0
POLL_SECONDS = 0.1


@dataclass
class Run:
    size: str  # "20x10x5"
    limit: str  # "20:30" or "unthrottled"
    impl: str  # kcm or kcontrol
    index: int
    started: str  # UTC, HH:MM:SS
    load: float  # 1-minute load average at the start
    ready_delay: float = DEFAULT_READY_DELAY  # the cluster's kwok: pod start -> Ready, s
    start_cpu: float = 0.0  # the controller process's CPU-seconds, exec -> ready + 2 idle s
    peak_rss_kb: int = 0  # VmHWM, read just before stopping it
    wall: float = 0.0  # first Job POSTed -> every Job seen finished
    p50: float = 0.0  # the median Job's own finish time (from the same start)
    completed: bool = True  # every Job finished before the timeout
    lag: float = 0.0  # from the last Job finished to the controller's last write
    cpu: float = 0.0  # the controller's CPU-seconds, first write -> quiet tail's end
    plane_cpu: float = 0.0  # kube-apiserver + etcd over the same window
    total_cpu: float = -1.0  # its CPU-seconds, exec -> quiet tail's end (-1: not recorded)
    writes: dict[str, int] = field(default_factory=dict)  # the controller's, by key
    errors: dict[str, int] = field(default_factory=dict)  # its non-2xx answers, by key:code
    others: dict[str, int] = field(default_factory=dict)  # every other writer, by writer
    metric_writes: int = 0  # apiserver_request_total, every writer (a check of the audit)
    audit_writes: int = 0  # the audit log, every writer, same window
    succeeded: int = 0  # sum of the Jobs' status.succeeded at the end
    failed: int = 0  # and of status.failed
    jobs_failed: int = 0  # Jobs that ended Failed rather than Complete
    requests: dict[str, int] = field(default_factory=dict)  # its own client, by method
    events_dropped: int = -1  # kcontrol_events_dropped_total (kcontrol only)
    timings: dict[str, float] = field(default_factory=dict)  # see controller_timings
    note: str = ""


JOB_SYNC_HISTOGRAM = {"job_controller_job_sync_duration_seconds": "sync"}
"""The Job controller's own sync histogram (both managers export it under upstream's name),
read beside the ``job`` queue's as :attr:`Run.timings`."""


def controller_timings(text: str) -> dict[str, float]:
    """From a controller's ``/metrics`` text: how many Job syncs it ran and how long they took
    (``sync_count``, ``sync_sum``: ``job_controller_job_sync_duration_seconds``), how long
    keys of the ``job`` queue waited to be picked up (``queue_wait_*``) and were worked on
    (``work_*``), sums in seconds; and how many syncs were put off because the informers had
    not yet seen the controller's own writes (``stale_skips``:
    ``job_controller_stale_sync_skips_total``, where the manager exports it); over the
    process's life (bench/rollout's reader, for the ``job`` queue)."""
    return queue_timings(text, "job", extra=JOB_SYNC_HISTOGRAM, stale_prefix="job_controller_")


def side_order(index: int) -> tuple[str, ...]:
    """The sides of run ``index`` in turn: KCM first in even runs, kcontrol first in odd
    ones (A B B A ...), so neither always runs on the warmer cluster."""
    return IMPLS if index % 2 == 0 else IMPLS[::-1]


def controller_argv(argv: list[str]) -> list[str]:
    """bench/rollout.py's controller command line with ``--controllers=job-controller``."""
    return [
        f"--controllers={JOB_CONTROLLER}" if arg.startswith("--controllers=") else arg
        for arg in argv
    ]


class Sized(Protocol):
    """A suite's size: its label names the runs of it."""

    @property
    def label(self) -> str: ...


class Record(Protocol):
    """What :meth:`ControllerBench.run` fills in of a suite's run."""

    impl: str
    start_cpu: float
    peak_rss_kb: int
    requests: dict[str, int]
    events_dropped: int
    timings: dict[str, float]


SizeT = TypeVar("SizeT", bound=Sized)
RunT = TypeVar("RunT", bound=Record)


class ControllerBench(Generic[SizeT, RunT]):
    """The runs on one cluster, each in a namespace of its own against a fresh controller
    process (:meth:`run`). A suite says what its runs are through the hooks: the names
    (:attr:`namespace_prefix`, :attr:`user_agent`), :meth:`new_run`,
    :meth:`controller_argv`, :meth:`_measure` and :meth:`controller_timings`; bench/jobs's
    :class:`Bench` is one, bench/sets's another."""

    namespace_prefix: str
    """The start of each run's namespace name (the rest is the run's tag)."""
    user_agent: str
    """The user agent of the bench's own client (the controller's writes are told apart
    from it in the audit log)."""

    def __init__(self, cluster: Cluster, audit_log: Path, directory: Path, args: Any) -> None:
        self.cluster = cluster
        self.audit_log = audit_log
        self.directory = directory
        self.args = args
        self.apiserver_pid = cluster._apiserver.popen.pid  # type: ignore[union-attr]
        self.etcd_pid = cluster._etcd.popen.pid  # type: ignore[union-attr]

    def plane_cpu(self) -> float:
        return proc_cpu(self.apiserver_pid) + proc_cpu(self.etcd_pid)

    def new_run(self, **fields: Any) -> RunT:
        """The suite's run record of ``fields`` (size label, limit, impl, index, start)."""
        raise NotImplementedError

    def controller_argv(self, argv: list[str], size: SizeT) -> list[str]:
        """bench/rollout.py's controller command line, rewritten for ``size``'s runs."""
        raise NotImplementedError

    def controller_timings(self, text: str, size: SizeT) -> dict[str, float]:
        """The run's :attr:`Run.timings` from the controller's ``/metrics`` text."""
        raise NotImplementedError

    async def _measure(
        self,
        size: SizeT,
        namespace: str,
        client: ApiClient,
        metrics: aiohttp.ClientSession,
        controller: ControllerProcess,
        result: RunT,
    ) -> None:
        """The run itself, the controller started and settled: its figures into ``result``."""
        raise NotImplementedError

    async def run(self, size: SizeT, limit: Limit, impl: str, index: int) -> RunT:
        tag = f"{size.label}-{limit.label}-{impl}-{index}".replace(":", "-").replace("=", "-")
        namespace = f"{self.namespace_prefix}-{tag}".replace(".", "-")
        result = self.new_run(
            size=size.label,
            limit=limit.label,
            impl=impl,
            index=index,
            started=datetime.datetime.now(datetime.UTC).strftime("%H:%M:%S"),
            load=load_average(),
        )
        config = await load_config(kubeconfig=str(self.cluster.kubeconfig_path))
        connector = aiohttp.TCPConnector(ssl=self.cluster.ssl_context())
        headers = {"Authorization": f"Bearer {self.cluster.token()}"}
        async with (
            ApiClient(config, qps=0, user_agent=self.user_agent) as client,
            aiohttp.ClientSession(connector=connector, headers=headers) as metrics,
        ):
            await client.create(NAMESPACES, {"metadata": {"name": namespace}})
            await self.cluster.wait_for_service_account(namespace)
            controller = ControllerProcess(impl, self.cluster, limit, self.directory, tag)
            controller.argv = self.controller_argv(controller.argv, size)
            controller.env = controller_env(impl, self.args.kcm_gomaxprocs)
            if self.args.profile:
                controller.profile = Path(self.args.profile) / f"{tag}.txt"
            await controller.start()
            try:
                await asyncio.sleep(SETTLE_SECONDS)
                result.start_cpu = proc_cpu(controller.pid)
                await self._measure(size, namespace, client, metrics, controller, result)
                result.peak_rss_kb = proc_status_kb(controller.pid, "VmHWM:")
                await self._controller_metrics(controller, result, size)
            finally:
                controller.stop()
            await client.delete(NAMESPACES, namespace)
            await self._wait_gone(client, namespace)
        return result

    async def _controller_metrics(
        self, controller: ControllerProcess, result: RunT, size: SizeT
    ) -> None:
        """The controller's own ``rest_client_requests_total`` by method (its whole life,
        start-up included), its :meth:`controller_timings` and, for kcontrol, the events its
        recorder dropped."""
        text = await scrape_controller(controller, self.cluster.token())
        requests, dropped = controller_requests(text)
        result.requests = dict(requests)
        if controller.impl == KCONTROL:
            result.events_dropped = sum(dropped.values())
        result.timings = self.controller_timings(text, size)

    async def _wait_gone(self, client: ApiClient, namespace: str) -> None:
        deadline = time.monotonic() + self.args.timeout
        while time.monotonic() < deadline:
            try:
                await client.get(NAMESPACES, namespace)
            except NotFound:
                return
            await asyncio.sleep(0.5)
        raise RuntimeError(f"namespace {namespace} not gone in {self.args.timeout} s")


class Bench(ControllerBench[Size, Run]):
    """N Jobs per run, created at once, until every one finished."""

    namespace_prefix = "jobs"
    user_agent = BENCH_USER_AGENT

    def new_run(self, **fields: Any) -> Run:
        return Run(**fields, ready_delay=self.cluster.pod_ready_delay)

    def controller_argv(self, argv: list[str], size: Size) -> list[str]:
        return controller_argv(argv)

    def controller_timings(self, text: str, size: Size) -> dict[str, float]:
        return controller_timings(text)

    async def _measure(
        self,
        size: Size,
        namespace: str,
        client: ApiClient,
        metrics: aiohttp.ClientSession,
        controller: ControllerProcess,
        result: Run,
    ) -> None:
        names = job_names(size)
        factory = SharedInformerFactory(client, namespace=namespace)
        lister = factory.for_resource(JOBS).lister()
        semaphore = asyncio.Semaphore(CREATE_CONCURRENCY)
        audit_start = self.audit_log.stat().st_size
        tail = WriterTail(self.audit_log, audit_start, result.impl)

        async def create(name: str) -> None:
            async with semaphore:
                await client.create(
                    JOBS, job(name, size, self.args.pod_seconds), namespace=namespace
                )

        async def wait_finished(start: float) -> tuple[float, float, bool]:
            done: dict[str, float] = {}
            deadline = time.monotonic() + self.args.timeout
            while len(done) < len(names):
                now = time.monotonic()
                for obj in lister.list(namespace):
                    name = obj["metadata"]["name"]
                    if name not in done and finished(obj):
                        done[name] = now - start
                if now > deadline:
                    return now - start, statistics.median(done.values() or [0.0]), False
                await asyncio.sleep(POLL_SECONDS)
            return max(done.values()), statistics.median(done.values()), True

        async with asyncio.TaskGroup() as tasks:
            informer_task = tasks.create_task(factory.run())
            await factory.wait_for_cache_sync()
            before = await scrape_writes(metrics, self.cluster.host)
            t0, cpu0, plane0 = time.time(), proc_cpu(controller.pid), self.plane_cpu()
            start = time.monotonic()
            await asyncio.gather(*(create(name) for name in names))
            result.wall, result.p50, result.completed = await wait_finished(start)
            completed_at = time.time()
            last_write = await tail.wait_quiet(QUIET_SECONDS, QUIET_TIMEOUT)
            result.lag = max(0.0, last_write - completed_at)
            after = await scrape_writes(metrics, self.cluster.host)
            t1, cpu1, plane1 = time.time(), proc_cpu(controller.pid), self.plane_cpu()
            for obj in lister.list(namespace):
                succeeded, failed = succeeded_failed(obj)
                result.succeeded += succeeded
                result.failed += failed
                result.jobs_failed += finished(obj) == "Failed"
            informer_task.cancel()
        if not result.completed:
            result.note += f"timed out after {result.wall:.0f} s; "
        if result.succeeded != size.pods or result.failed:
            result.note += f"succeeded {result.succeeded} of {size.pods}, failed {result.failed}; "

        result.cpu = cpu1 - cpu0
        result.total_cpu = cpu1  # /proc's counters run from exec: the whole process so far
        result.plane_cpu = plane1 - plane0
        result.metric_writes = sum((after - before).values())
        audit = read_audit(self.audit_log, audit_start, self.audit_log.stat().st_size)
        window = writes_between(audit, result.impl, t0, t1)
        result.writes = dict(window.writes)
        result.errors = dict(window.errors)
        result.others = dict(window.others)
        result.audit_writes = window.total


def describe(run: Run) -> str:
    """One line of progress for a run."""
    writes = sum(run.writes.values())
    return (
        f"{run.size} {run.limit:>11} ready {run.ready_delay:g}s {run.impl:>8} run {run.index}: "
        f"{run.wall:.1f}s (p50 {run.p50:.1f}s) cpu {run.cpu:.2f}s "
        f"(whole-run {run.total_cpu:.2f}s) writes {writes} "
        f"rss {run.peak_rss_kb / 1024:.0f}MB load {run.load:.2f} {run.note}"
    )


async def run_size(
    size: Size,
    limits: list[Limit],
    args: Any,
    results: list[Run],
    on_run: Any = None,
    *,
    ready_delay: float = DEFAULT_READY_DELAY,
) -> None:
    """Start a cluster for ``size`` whose kwok makes pods Ready ``ready_delay`` s after they
    start, warm it up, then ``args.runs`` runs per limit and side; each finished run is
    appended to ``results`` (and passed to ``on_run``)."""
    directory = Path(tempfile.mkdtemp(prefix="kcontrol-jobs-"))
    policy = directory / "audit-policy.yaml"
    policy.write_text(AUDIT_POLICY)
    audit_log = directory / "audit.log"
    nodes = node_count(size)
    cluster = Cluster(
        nodes=nodes,
        pod_ready_delay=ready_delay,
        controllers=CLUSTER_CONTROLLERS,
        extra_apiserver_args=[
            f"--audit-policy-file={policy}",
            f"--audit-log-path={audit_log}",
            "--audit-log-format=json",
            "--audit-log-maxsize=0",
        ],
    )
    print(
        f"# {size.label}: starting a cluster with {nodes} kwok nodes, pods Ready {ready_delay:g} s "
        f"after they start ({directory})",
        flush=True,
    )
    async with cluster:
        bench = Bench(cluster, audit_log, directory, args)
        # A fresh apiserver, etcd and kwok are slower on their first Jobs: one small
        # unrecorded round with each side first, so neither run 0 pays for it.
        warmup = Size(min(size.jobs, 5), size.completions, size.parallelism)
        for impl in IMPLS:
            await bench.run(warmup, limits[0], impl, -1)
        print(f"# {size.label}: warmed up ({warmup.label} with each side)", flush=True)
        for limit in limits:
            for index in range(args.runs):
                for impl in side_order(index):
                    t0 = time.monotonic()
                    run = await bench.run(size, limit, impl, index)
                    results.append(run)
                    if on_run is not None:
                        on_run(run)
                    print(
                        describe(run) + f" ({time.monotonic() - t0:.0f}s with teardown)",
                        flush=True,
                    )
    if not args.keep_logs:
        shutil.rmtree(directory, ignore_errors=True)
    else:
        print(f"# logs kept in {directory}", flush=True)

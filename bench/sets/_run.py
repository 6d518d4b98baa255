"""One run: a controller manager with only its StatefulSet (or DaemonSet) controller, the
sets created until rolled out, then re-templated until rolled out again.

The cluster, the controller processes and the measurements are bench/rollout.py's
(``ControllerProcess``, ``Limit``, ``Phase``, ``scrape_writes``, ``read_audit``) and
bench/jobs's (its ``ControllerBench``: the run's namespace and controller process,
apiserver + etcd CPU, the controller's own metrics, the namespace teardown; ``side_order``;
the audit-log attribution, by the controller's KCM client name).
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bench._process import proc_cpu
from bench.jobs._audit import KCM, KCONTROL, WriterTail, writes_between
from bench.jobs._run import ControllerBench, side_order
from bench.rollout import (
    AUDIT_POLICY,
    ControllerProcess,
    Limit,
    Phase,
    controller_timings,
    read_audit,
    scrape_writes,
)
from bench.sets._reaction import PodTracker, Reactions, reactions, summary
from bench.sets._workload import (
    DS,
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
from kcontrol.client import DAEMONSETS, PODS, STATEFULSETS, ApiClient, PatchType
from kcontrol.envtest.cluster import WITHOUT_WORKLOAD_CONTROLLERS, Cluster
from kcontrol.informers import ResourceEventHandlerFuncs, SharedInformerFactory

__all__ = [
    "CLIENT_NAMES",
    "CLUSTER_CONTROLLERS",
    "CONTROLLERS",
    "IMPLS",
    "PHASES",
    "QUEUES",
    "Run",
    "controller_argv",
    "controller_timings",
    "describe",
    "run_sizes",
    "side_order",
]

IMPLS = (KCM, KCONTROL)
PHASES = ("create", "retemplate")
CONTROLLERS = {STS: "statefulset-controller", DS: "daemonset-controller"}
"""``--controllers`` of the process under test, on both sides."""
CLIENT_NAMES = {STS: "statefulset-controller", DS: "daemon-set-controller"}
"""The name KCM gives each controller's client, the last part of its user agent (its
events are sent by the same client)."""
QUEUES = {STS: "statefulset", DS: "daemonset"}
"""Each controller's workqueue name, in both managers."""
RESOURCES = {STS: STATEFULSETS, DS: DAEMONSETS}
BENCH_USER_AGENT = "kcontrol-bench-sets"
CLUSTER_CONTROLLERS = (*WITHOUT_WORKLOAD_CONTROLLERS, *(f"-{c}" for c in CONTROLLERS.values()))
"""The cluster's own kube-controller-manager: everything but the workload controllers and
the two under test (garbage collector, namespace, service-account controllers keep running)."""
CREATE_CONCURRENCY = 16
QUIET_SECONDS = 2.0
QUIET_TIMEOUT = 300.0
POLL_SECONDS = 0.1


@dataclass
class Run:
    size: str  # "sts=50x5" or "ds=5x50"
    limit: str  # "20:30" or "unthrottled"
    impl: str  # kcm or kcontrol
    index: int
    started: str  # UTC, HH:MM:SS
    load: float  # 1-minute load average at the start
    start_cpu: float = 0.0  # the controller process's CPU-seconds before the first write
    peak_rss_kb: int = 0  # VmHWM, read just before stopping it
    phases: dict[str, Phase] = field(default_factory=dict)  # create, retemplate
    requests: dict[str, int] = field(default_factory=dict)  # its own client, by method
    events_dropped: int = -1  # kcontrol_events_dropped_total (kcontrol only)
    timings: dict[str, float] = field(default_factory=dict)  # see controller_timings
    reactions: dict[str, Reactions] = field(default_factory=dict)  # by phase: _reaction.py
    note: str = ""

    @property
    def completed(self) -> bool:
        return all(p.completed for p in self.phases.values()) and len(self.phases) == 2

    @property
    def wall(self) -> float:
        """Both phases' times (each from its first write to every set rolled out)."""
        return sum(p.wall for p in self.phases.values())

    @property
    def cpu(self) -> float:
        return sum(p.cpu for p in self.phases.values())

    @property
    def plane_cpu(self) -> float:
        return sum(p.plane_cpu for p in self.phases.values())

    @property
    def writes(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for p in self.phases.values():
            total.update(p.writes)
        return total

    @property
    def errors(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for p in self.phases.values():
            total.update(p.errors)
        return total


def controller_argv(argv: list[str], kind: str) -> list[str]:
    """bench/rollout.py's controller command line with ``--controllers`` the one controller
    of ``kind``."""
    return [
        f"--controllers={CONTROLLERS[kind]}" if arg.startswith("--controllers=") else arg
        for arg in argv
    ]


class Bench(ControllerBench[Size, Run]):
    """The sets of one size per run: created until rolled out, then re-templated until
    rolled out again (:data:`PHASES`)."""

    namespace_prefix = "sets"
    user_agent = BENCH_USER_AGENT

    def new_run(self, **fields: Any) -> Run:
        return Run(**fields)

    def controller_argv(self, argv: list[str], size: Size) -> list[str]:
        return controller_argv(argv, size.kind)

    def controller_timings(self, text: str, size: Size) -> dict[str, float]:
        return controller_timings(text, QUEUES[size.kind])

    async def _measure(
        self,
        size: Size,
        namespace: str,
        client: ApiClient,
        metrics: aiohttp.ClientSession,
        controller: ControllerProcess,
        result: Run,
    ) -> None:
        names = set_names(size)
        resource = RESOURCES[size.kind]
        client_name = CLIENT_NAMES[size.kind]
        factory = SharedInformerFactory(client, namespace=namespace)
        lister = factory.for_resource(resource).lister()
        tracker = PodTracker(time.time)
        factory.for_resource(PODS).add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=tracker.on_add,
                update_func=tracker.on_update,
                delete_func=tracker.on_delete,
            )
        )
        semaphore = asyncio.Semaphore(CREATE_CONCURRENCY)
        generations: dict[str, int] = {}

        async def create(name: str) -> None:
            body = statefulset(name, size.n) if size.kind == STS else daemonset(name, size.n)
            async with semaphore:
                created = await client.create(resource, body, namespace=namespace)
            tracker.wrote(name)
            generations[name] = created["metadata"]["generation"]

        async def retemplate(name: str) -> None:
            async with semaphore:
                patched = await client.patch(
                    resource,
                    name,
                    template_patch(1),
                    namespace=namespace,
                    patch_type=PatchType.MERGE,
                )
            tracker.wrote(name)
            generations[name] = patched["metadata"]["generation"]

        async def wait_rolled_out(start: float) -> tuple[float, float, bool]:
            done: dict[str, float] = {}
            deadline = time.monotonic() + self.args.timeout
            while len(done) < len(names):
                now = time.monotonic()
                for obj in lister.list(namespace):
                    name = obj["metadata"]["name"]
                    if name in done or name not in generations:
                        continue
                    if is_rolled_out(size, obj, generations[name]):
                        done[name] = now - start
                if now > deadline:
                    return now - start, statistics.median(done.values() or [0.0]), False
                await asyncio.sleep(POLL_SECONDS)
            return max(done.values()), statistics.median(done.values()), True

        boundaries: list[float] = []  # wall-clock: phase starts, then the end of the last
        counters: list[Counter[str]] = []
        cpus: list[float] = []
        plane: list[float] = []
        audit_start = self.audit_log.stat().st_size
        tail = WriterTail(self.audit_log, audit_start, result.impl, client_name)

        def mark() -> None:
            boundaries.append(time.time())
            cpus.append(proc_cpu(controller.pid))
            plane.append(self.plane_cpu())

        async with asyncio.TaskGroup() as tasks:
            informer_task = tasks.create_task(factory.run())
            await factory.wait_for_cache_sync()
            for phase, action in zip(PHASES, (create, retemplate), strict=True):
                counters.append(await scrape_writes(metrics, self.cluster.host))
                mark()
                start = time.monotonic()
                generations.clear()  # a set counts once this phase's write of it is in
                await asyncio.gather(*(action(name) for name in names))
                wall, p50, completed = await wait_rolled_out(start)
                completed_at = time.time()
                last_write = await tail.wait_quiet(QUIET_SECONDS, QUIET_TIMEOUT)
                result.phases[phase] = Phase(
                    wall=wall, p50=p50, completed=completed, lag=max(0.0, last_write - completed_at)
                )
                if not completed:
                    stuck = [
                        f"{o['metadata']['name']}: {o.get('status')}"
                        for o in lister.list(namespace)
                        if not is_rolled_out(size, o, generations.get(o["metadata"]["name"], 0))
                    ]
                    result.note += (
                        f"{phase} timed out after {wall:.0f} s ({len(stuck)} not rolled out, "
                        f"first: {stuck[:1]}); "
                    )
            counters.append(await scrape_writes(metrics, self.cluster.host))
            mark()
            informer_task.cancel()

        audit = read_audit(self.audit_log, audit_start, self.audit_log.stat().st_size)
        for i, phase in enumerate(PHASES):
            p = result.phases[phase]
            p.cpu = cpus[i + 1] - cpus[i]
            p.plane_cpu = plane[i + 1] - plane[i]
            p.metric_writes = sum((counters[i + 1] - counters[i]).values())
            window = writes_between(
                audit, result.impl, boundaries[i], boundaries[i + 1], client_name
            )
            p.writes, p.errors, p.others = (
                dict(window.writes),
                dict(window.errors),
                dict(window.others),
            )
            p.audit_writes = window.total
            result.reactions[phase] = summary(
                reactions(tracker.marks, boundaries[i], boundaries[i + 1])
            )


def describe(run: Run) -> str:
    """One line of progress for a run."""
    phases = " ".join(
        f"{name} {p.wall:.1f}s cpu {p.cpu:.2f}s writes {sum(p.writes.values())}"
        for name, p in run.phases.items()
    )
    return (
        f"{run.size} {run.limit:>11} {run.impl:>8} run {run.index}: {phases} "
        f"rss {run.peak_rss_kb / 1024:.0f}MB load {run.load:.2f} {run.note}"
    )


async def run_sizes(
    sizes: list[Size], limits: list[Limit], args: Any, results: list[Run], on_run: Any = None
) -> None:
    """Start one cluster for all ``sizes`` (the DaemonSets' node pools, room for the
    StatefulSets' pods), warm it up, then ``args.runs`` runs per limit, size and side; each
    finished run is appended to ``results`` (and passed to ``on_run``)."""
    directory = Path(tempfile.mkdtemp(prefix="kcontrol-sets-"))
    policy = directory / "audit-policy.yaml"
    policy.write_text(AUDIT_POLICY)
    audit_log = directory / "audit.log"
    spare = spare_nodes(sizes)
    cluster = Cluster(
        nodes=spare,
        pod_ready_delay=args.pod_ready_delay,
        controllers=CLUSTER_CONTROLLERS,
        extra_apiserver_args=[
            f"--audit-policy-file={policy}",
            f"--audit-log-path={audit_log}",
            "--audit-log-format=json",
            "--audit-log-maxsize=0",
        ],
    )
    pools = node_pools(sizes)
    print(
        f"# starting a cluster with {spare} + {sum(c for c, _ in pools)} kwok nodes ({directory})",
        flush=True,
    )
    async with cluster:
        for count, labels in pools:
            await cluster.create_nodes(count, labels=labels)
        bench = Bench(cluster, audit_log, directory, args)
        # A fresh apiserver, etcd and kwok are slower on their first sets: one small
        # unrecorded round of each kind with each side first, so neither run 0 pays for it.
        for size in sizes:
            warmup = Size(size.kind, min(size.sets, 3 if size.kind == STS else 1), size.n)
            for impl in IMPLS:
                run = await bench.run(warmup, limits[0], impl, -1)
                print("# warm-up: " + describe(run), flush=True)
        for limit in limits:
            for index in range(args.runs):
                for size in sizes:
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

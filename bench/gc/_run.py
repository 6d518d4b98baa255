"""One cluster, its start-up population, and the runs: a collector started over it, its
graph synced, then a cascade deleted.

The controller processes are bench/rollout.py's ``ControllerProcess`` with
``--controllers=garbage-collector-controller`` on both sides, launched without waiting for
readiness (the start-up is what is measured); the apiserver + etcd CPU, the namespace
teardown and the side order are bench/jobs's; the audit-log attribution is bench/jobs's
``writes_between`` by KCM's client name ``generic-garbage-collector``.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import math
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Iterable
from pathlib import Path
from typing import Any

import aiohttp

from bench._process import load_average, proc_cpu, proc_status_kb
from bench.gc._measures import (
    CLIENT_NAME,
    DELETE_QUEUE,
    Run,
    collector_argv,
    describe,
    graph_queue,
    problems,
    requests_by_method,
    size_label,
    sync_line,
)
from bench.gc._workload import (
    CRDS,
    DEPENDENT,
    KINDS,
    ROLE_LABEL,
    SURVIVOR,
    SURVIVOR_DEPENDENT,
    Cascade,
    background_namespaces,
    cascade_objects,
    item_manifest,
    manifest,
    owner_names,
    owner_reference,
    plan,
)
from bench.jobs._audit import WriterTail, writes_between
from bench.jobs._run import Bench as JobsBench
from bench.jobs._run import side_order
from bench.rollout import (
    AUDIT_POLICY,
    ControllerProcess,
    Limit,
    controller_env,
    controller_timings,
    read_audit,
    scrape_writes,
)
from kcontrol.client import CONFIGMAPS, NAMESPACES, SECRETS, ApiClient, ListOptions, load_config
from kcontrol.client import Resource as ApiResource
from kcontrol.envtest.cluster import KUBE_SCHEDULER, KWOK, Cluster
from kcontrol.errors import AlreadyExists
from kcontrol.informers import SharedInformerFactory

__all__ = ["CLUSTER_CONTROLLERS", "Bench", "CollectorProcess", "count", "populate", "run_all"]

CLUSTER_CONTROLLERS = ("namespace-controller",)
"""The cluster's own kube-controller-manager: only the namespace controller (it removes
each run's namespace); no collector besides the one under test."""
BENCH_USER_AGENT = "kcontrol-bench-gc"
CREATE_CONCURRENCY = 48
DELETE_CONCURRENCY = 32
LOG_POLL = 0.05
METRICS_POLL = 0.1
QUIET_SECONDS = 2.0
QUIET_TIMEOUT = 120.0


class CollectorProcess(ControllerProcess):
    """The collector under test: ``ControllerProcess``'s command line with only the
    collector, launched without waiting for readiness; its log read as it grows."""

    def __init__(
        self, impl: str, cluster: Cluster, limit: Limit, directory: Path, tag: str
    ) -> None:
        super().__init__(impl, cluster, limit, directory, tag)
        self.argv = collector_argv(self.argv)

    def launch(self) -> None:
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
            )

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def tail(self) -> str:
        return "\n".join(self.log_text().splitlines()[-30:])

    def check_alive(self) -> None:
        assert self.popen is not None
        if self.popen.poll() is not None:
            raise RuntimeError(f"{self.impl} exited ({self.popen.returncode}):\n{self.tail()}")


async def _bounded(limit: int, jobs: Iterable[Awaitable[Any]]) -> list[Any]:
    semaphore = asyncio.Semaphore(limit)

    async def one(job: Awaitable[Any]) -> Any:
        async with semaphore:
            return await job

    return await asyncio.gather(*(one(j) for j in jobs))


async def count(client: ApiClient, resource: ApiResource) -> int:
    """Objects of ``resource`` in every namespace: one LIST of one item and its
    ``remainingItemCount``; every page when the server leaves that out."""
    page = await client.list(resource, options=ListOptions(limit=1))
    metadata = page.get("metadata") or {}
    if metadata.get("remainingItemCount") is not None or not metadata.get("continue"):
        return len(page["items"]) + int(metadata.get("remainingItemCount") or 0)
    total, token = 0, None
    while True:
        page = await client.list(resource, options=ListOptions(limit=5000, continue_=token))
        total += len(page["items"])
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return total


async def counts(client: ApiClient, kinds: int) -> dict[str, int]:
    return {KINDS[k].resource.plural: await count(client, KINDS[k].resource) for k in range(kinds)}


async def populate(client: ApiClient, objects: int, kinds: int, namespaces: int) -> float:
    """Create the start-up population (:func:`bench.gc._workload.plan`): the namespaces,
    the unowned objects, then the owned ones; the seconds it took."""
    start = time.monotonic()
    items = plan(objects, kinds, namespaces)
    for namespace in background_namespaces(namespaces):
        with contextlib.suppress(AlreadyExists):
            await client.create(NAMESPACES, {"metadata": {"name": namespace}})
    uids: dict[int, str] = {}

    async def create(i: int) -> None:
        item = items[i]
        owner = None
        if item.owner is not None:
            o = items[item.owner]
            owner = owner_reference(KINDS[o.kind].resource, o.name, uids[item.owner])
        created = await client.create(
            KINDS[item.kind].resource, item_manifest(item, owner), namespace=item.namespace
        )
        uids[i] = created["metadata"]["uid"]

    roots = [i for i, item in enumerate(items) if item.owner is None]
    owned = [i for i, item in enumerate(items) if item.owner is not None]
    for wave in (roots, owned):
        await _bounded(CREATE_CONCURRENCY, (create(i) for i in wave))
    return time.monotonic() - start


class Bench(JobsBench):
    """The runs on one cluster (see ``bench.gc``'s docstring)."""

    def __init__(
        self,
        cluster: Cluster,
        audit_log: Path,
        directory: Path,
        args: Any,
        baseline: dict[str, int],
    ) -> None:
        super().__init__(cluster, audit_log, directory, args)
        self.baseline = baseline
        self.cascade = Cascade(args.owners, args.dependents)

    async def measure(self, limit: Limit, impl: str, index: int) -> Run:
        tag = f"{limit.label.replace(':', '-')}-{impl}-{index}"
        result = Run(
            size=size_label(self.args.objects, self.args.kinds, self.cascade),
            limit=limit.label,
            impl=impl,
            index=index,
            started=datetime.datetime.now(datetime.UTC).strftime("%H:%M:%S"),
            load=load_average(),
        )
        config = await load_config(kubeconfig=str(self.cluster.kubeconfig_path))
        connector = aiohttp.TCPConnector(ssl=self.cluster.ssl_context())
        insecure = aiohttp.TCPConnector(ssl=False)  # KCM's self-signed serving certificate
        headers = {"Authorization": f"Bearer {self.cluster.token()}"}
        namespace = f"gc-cascade-{tag}".replace(".", "-")
        async with (
            ApiClient(config, qps=0, user_agent=BENCH_USER_AGENT) as client,
            aiohttp.ClientSession(connector=connector, headers=headers) as apiserver,
            aiohttp.ClientSession(connector=insecure, headers=headers) as metrics,
        ):
            controller = CollectorProcess(impl, self.cluster, limit, self.directory, tag)
            controller.env = controller_env(impl, self.args.kcm_gomaxprocs)
            if self.args.profile:
                controller.profile = Path(self.args.profile) / f"gc-{tag}.txt"
            try:
                await self._startup(controller, metrics, result)
                if result.startup.completed:
                    seen = await self._cascade(
                        namespace, client, apiserver, metrics, controller, result
                    )
                else:
                    seen = 0
                result.peak_rss_kb = proc_status_kb(controller.pid, "VmHWM:")
                result.total_cpu = proc_cpu(controller.pid)
                text = await self._scrape(metrics, controller)
                result.requests = requests_by_method(text)
                result.timings = controller_timings(text, DELETE_QUEUE)
            finally:
                controller.stop()
            with contextlib.suppress(Exception):
                await client.delete(NAMESPACES, namespace)
            await self._wait_gone(client, namespace)
            after = await counts(client, self.args.kinds)
        result.problems = problems(result, self.cascade, seen, self.baseline, after)
        return result

    async def _scrape(self, session: aiohttp.ClientSession, controller: ControllerProcess) -> str:
        async with session.get(controller.metrics_url) as response:
            return await response.text()

    async def _graph_synced(
        self,
        session: aiohttp.ClientSession,
        controller: CollectorProcess,
        events: float,
        deadline: float,
    ) -> float:
        """Wait until the graph-changes queue has taken at least ``events`` and is empty;
        its adds then (NaN at the deadline)."""
        while time.monotonic() < deadline:
            controller.check_alive()
            with contextlib.suppress(aiohttp.ClientError):
                adds, depth = graph_queue(await self._scrape(session, controller))
                if adds >= events and depth == 0:
                    return adds
            await asyncio.sleep(METRICS_POLL)
        return float("nan")

    async def _startup(
        self, controller: CollectorProcess, metrics: aiohttp.ClientSession, result: Run
    ) -> None:
        s = result.startup
        audit_start = self.audit_log.stat().st_size
        wall0, plane0 = time.time(), self.plane_cpu()
        t0 = time.monotonic()
        deadline = t0 + self.args.timeout
        controller.launch()
        profiling = False
        while True:
            controller.check_alive()
            now = time.monotonic()
            if not profiling and now - t0 > 0.3:
                controller._start_profile()
                profiling = True
            found, s.timed_out = sync_line(controller.impl, controller.log_text())
            if found:
                s.sync_seconds, s.sync_cpu = now - t0, proc_cpu(controller.pid)
                break
            if now > deadline:
                s.completed = False
                return
            await asyncio.sleep(LOG_POLL)
        with contextlib.suppress(aiohttp.ClientError):
            s.backlog = int(graph_queue(await self._scrape(metrics, controller))[1])
        adds = await self._graph_synced(metrics, controller, self.args.objects, deadline)
        if math.isnan(adds):
            s.completed = False
            return
        s.graph_seconds, s.graph_cpu = time.monotonic() - t0, proc_cpu(controller.pid)
        s.plane_cpu = self.plane_cpu() - plane0
        s.rss_kb = proc_status_kb(controller.pid, "VmHWM:")
        s.graph_events = int(adds)
        audit = read_audit(self.audit_log, audit_start, self.audit_log.stat().st_size)
        s.writes = dict(writes_between(audit, result.impl, wall0, time.time(), CLIENT_NAME).writes)

    async def _cascade(
        self,
        namespace: str,
        client: ApiClient,
        apiserver: aiohttp.ClientSession,
        metrics: aiohttp.ClientSession,
        controller: CollectorProcess,
        result: Run,
    ) -> int:
        """The cascade phase into ``result.cascade``; the survivors (and their dependents)
        seen at its end."""
        phase = result.cascade
        cascade = self.cascade
        await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        factory = SharedInformerFactory(client, namespace=namespace)
        listers = [
            factory.for_resource(r, metadata_only=True).lister() for r in (CONFIGMAPS, SECRETS)
        ]

        def roles() -> Counter[str]:
            return Counter(
                (o["metadata"].get("labels") or {}).get(ROLE_LABEL, "")
                for lister in listers
                for o in lister.list(namespace)
            )

        doomed, kept = owner_names(cascade)
        adds0, _ = graph_queue(await self._scrape(metrics, controller))
        async with asyncio.TaskGroup() as tasks:
            informers = tasks.create_task(factory.run())
            await factory.wait_for_cache_sync()
            start = time.monotonic()
            created = await _bounded(
                CREATE_CONCURRENCY,
                (
                    client.create(
                        CONFIGMAPS,
                        manifest(
                            CONFIGMAPS,
                            name,
                            {"data": {"key": name}},
                            {ROLE_LABEL: SURVIVOR if name in kept else "owner"},
                        ),
                        namespace=namespace,
                    )
                    for name in doomed + kept
                ),
            )
            uids = {o["metadata"]["name"]: o["metadata"]["uid"] for o in created}
            objects = cascade_objects(cascade, uids)
            await _bounded(
                CREATE_CONCURRENCY,
                (client.create(r, body, namespace=namespace) for r, body in objects),
            )
            phase.create_seconds = time.monotonic() - start
            deadline = time.monotonic() + self.args.timeout
            events = adds0 + len(created) + len(objects)
            if math.isnan(await self._graph_synced(metrics, controller, events, deadline)):
                raise RuntimeError(f"{result.impl}: the graph never took the cascade's objects")
            audit_start = self.audit_log.stat().st_size
            tail = WriterTail(self.audit_log, audit_start, result.impl, CLIENT_NAME)
            before = await scrape_writes(apiserver, self.cluster.host)
            t0, cpu0, plane0 = time.time(), proc_cpu(controller.pid), self.plane_cpu()
            start = time.monotonic()
            await _bounded(
                DELETE_CONCURRENCY,
                (
                    client.delete(
                        CONFIGMAPS, name, namespace=namespace, propagation_policy="Background"
                    )
                    for name in doomed
                ),
            )
            deadline = start + self.args.timeout
            while (left := roles()[DEPENDENT]) and time.monotonic() < deadline:
                controller.check_alive()
                await asyncio.sleep(0.1)
            phase.wall = time.monotonic() - start
            phase.left = left
            phase.completed = not left
            done_at = time.time()
            last_write = await tail.wait_quiet(QUIET_SECONDS, QUIET_TIMEOUT)
            phase.lag = max(0.0, last_write - done_at)
            after = await scrape_writes(apiserver, self.cluster.host)
            t1, cpu1, plane1 = time.time(), proc_cpu(controller.pid), self.plane_cpu()
            seen = roles()
            informers.cancel()
        phase.cpu = cpu1 - cpu0
        phase.plane_cpu = plane1 - plane0
        phase.metric_writes = sum((after - before).values())
        audit = read_audit(self.audit_log, audit_start, self.audit_log.stat().st_size)
        window = writes_between(audit, result.impl, t0, t1, CLIENT_NAME)
        phase.writes, phase.errors, phase.others = (
            dict(window.writes),
            dict(window.errors),
            dict(window.others),
        )
        phase.audit_writes = window.total
        return seen[SURVIVOR] + seen[SURVIVOR_DEPENDENT]


async def run_all(limits: list[Limit], args: Any, results: list[Run], on_run: Any = None) -> None:
    """Start one cluster, create the start-up population, then ``args.runs`` runs per
    client limit and side; each finished run is appended to ``results`` (and passed to
    ``on_run``)."""
    directory = Path(tempfile.mkdtemp(prefix="kcontrol-gc-"))
    policy = directory / "audit-policy.yaml"
    policy.write_text(AUDIT_POLICY)
    audit_log = directory / "audit.log"
    cluster = Cluster(
        nodes=0,
        controllers=CLUSTER_CONTROLLERS,
        crds=list(CRDS),
        extra_apiserver_args=[
            f"--audit-policy-file={policy}",
            f"--audit-log-path={audit_log}",
            "--audit-log-format=json",
            "--audit-log-maxsize=0",
        ],
    )
    print(f"# starting a cluster ({directory})", flush=True)
    async with cluster:
        for component in (KUBE_SCHEDULER, KWOK):  # no pods, no nodes: two fewer processes
            await cluster.stop_component(component)
        config = await load_config(kubeconfig=str(cluster.kubeconfig_path))
        async with ApiClient(config, qps=0, user_agent=BENCH_USER_AGENT) as client:
            seconds = await populate(client, args.objects, args.kinds, args.namespaces)
            baseline = await counts(client, args.kinds)
        print(
            f"# {args.objects} objects of {args.kinds} kinds in {args.namespaces} namespaces "
            f"created in {seconds:.0f}s ({args.objects / seconds:.0f}/s)",
            flush=True,
        )
        bench = Bench(cluster, audit_log, directory, args, baseline)
        for limit in limits:
            for index in range(args.runs):
                for impl in side_order(index):
                    t0 = time.monotonic()
                    run = await bench.measure(limit, impl, index)
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

"""One measured run: a fresh control plane, one operator, N Websites through every phase.

Each run has the control plane to itself (etcd and kube-apiserver from
kcontrol.envtest, with the audit policy of :mod:`bench.operator._audit`), so nothing
one operator left behind - objects, annotations, a warm watch cache - reaches the other.
The benchmark's own client is unthrottled (``qps=0``) and sends the user agent
:data:`BENCH_USER_AGENT` as the administrator; the operator runs as :data:`OPERATOR_USER`,
bound to ``cluster-admin``.
"""

from __future__ import annotations

import asyncio
import datetime
import math
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._process import load_average, proc_cpu
from bench.operator._audit import AuditLog, audit_policy, writes_between
from bench.operator._converge import problems
from bench.operator._operators import ROOT, Implementation, OperatorProcess
from kcontrol.client import (
    CLUSTERROLEBINDINGS,
    DEPLOYMENTS,
    NAMESPACES,
    SERVICES,
    ApiClient,
    PatchType,
    Resource,
    load_config,
)
from kcontrol.envtest import ControlPlane
from kcontrol.informers import SharedInformerFactory

__all__ = ["PHASES", "Phase", "Run", "run_once"]

CRD_PATH = ROOT / "examples" / "website" / "crd.yaml"
WEBSITES = Resource("demo.example.com", "v1", "websites", "Website")

OPERATOR_USER = "alice"  # one of envtest's users; bound to cluster-admin for the run
BENCH_USER_AGENT = "kcontrol-bench-operator"
NAMESPACE = "websites"
IMAGES = ("registry.example/web:1", "registry.example/web:2")
WATCHED = {"demo.example.com/websites", "apps/deployments", "services"}
CONCURRENCY = 16  # the benchmark's writes in flight
READY_TIMEOUT = 120.0
SETTLE_SECONDS = 2.0
QUIET_SECONDS = 2.0
QUIET_TIMEOUT = 120.0
PHASES = ("create", "update", "ready", "recreate")
"""create: N Websites; update: every Website's image changed; ready: every Deployment's status
says its replicas are ready (what kube-controller-manager would write; envtest runs none);
recreate: every Deployment and Service deleted."""


@dataclass
class Phase:
    wall: float = math.nan  # seconds from the first write to every Website converged
    p50: float = math.nan  # median of each Website's own time to converge
    cpu: float = 0.0  # the operator's CPU-seconds in the phase, its quiet tail included
    plane_cpu: float = 0.0  # kube-apiserver + etcd CPU-seconds, same window
    completed: bool = True
    lag: float = 0.0  # from convergence to the operator's last write of the phase
    writes: dict[str, int] = field(default_factory=dict)  # the operator's, by key
    errors: dict[str, int] = field(default_factory=dict)  # its non-2xx answers
    others: dict[str, int] = field(default_factory=dict)  # every other writer, by agent


@dataclass
class Run:
    implementation: str
    websites: int
    index: int
    started: str
    load: float
    ready_seconds: float = math.nan  # from the process start to its watches open
    start_cpu: float = 0.0  # CPU-seconds until then, plus the settle time
    peak_rss_kb: int = 0
    phases: dict[str, Phase] = field(default_factory=dict)
    note: str = ""


def website(name: str) -> dict[str, Any]:
    return {
        "apiVersion": WEBSITES.api_version,
        "kind": "Website",
        "metadata": {"name": name},
        "spec": {"image": IMAGES[0]},  # replicas: the CRD's default, 1
    }


class _Phases:
    """The phases of one run, against one operator process."""

    def __init__(
        self,
        client: ApiClient,
        factory: SharedInformerFactory,
        operator: OperatorProcess,
        plane_pids: list[int],
        log: AuditLog,
        names: list[str],
        timeout: float,
    ) -> None:
        self.client = client
        self.listers = {r: factory.lister(r) for r in (WEBSITES, DEPLOYMENTS, SERVICES)}
        self.operator = operator
        self.plane_pids = plane_pids
        self.log = log
        self.names = names
        self.timeout = timeout
        self.generations: dict[str, int] = {}  # each Website's generation the benchmark wrote
        self.stale: set[str] = set()  # uids of deleted objects that must be created again
        self.deployments_ready = False  # in the ready phase: the benchmark said they are
        self.semaphore = asyncio.Semaphore(CONCURRENCY)

    def _cached(self, resource: Resource) -> dict[str, Any]:
        return {o["metadata"]["name"]: o for o in self.listers[resource].list(NAMESPACE)}

    def unconverged(self) -> dict[str, list[str]]:
        """Every Website that has not converged, with why."""
        sites, deployments, services = (self._cached(r) for r in (WEBSITES, DEPLOYMENTS, SERVICES))
        out = {}
        for name in self.names:
            if name not in sites:
                out[name] = ["no website"]
                continue
            found = problems(
                sites[name],
                deployments.get(name),
                services.get(name),
                generation=self.generations.get(name, 0),
                stale_uids=self.stale,
                deployment_ready=self.deployments_ready,
            )
            if found:
                out[name] = found
        return out

    async def _each(self, action: Callable[[str], Awaitable[None]]) -> None:
        async def one(name: str) -> None:
            async with self.semaphore:
                await action(name)

        await asyncio.gather(*(one(name) for name in self.names))

    async def create(self, name: str) -> None:
        created = await self.client.create(WEBSITES, website(name), namespace=NAMESPACE)
        self.generations[name] = created["metadata"]["generation"]

    async def update(self, name: str) -> None:
        patch = {"spec": {"image": IMAGES[1]}}
        patched = await self.client.patch(WEBSITES, name, patch, namespace=NAMESPACE)
        self.generations[name] = patched["metadata"]["generation"]

    async def ready(self, name: str) -> None:
        self.deployments_ready = True
        deployment = self.listers[DEPLOYMENTS].get(NAMESPACE, name)
        replicas = deployment["spec"]["replicas"]
        status = {
            "observedGeneration": deployment["metadata"]["generation"],
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
        }
        await self.client.patch(
            DEPLOYMENTS,
            name,
            {"status": status},
            namespace=NAMESPACE,
            patch_type=PatchType.MERGE,
            subresource="status",
        )

    async def recreate(self, name: str) -> None:
        self.deployments_ready = False  # the new Deployments have no ready replicas
        for resource in (DEPLOYMENTS, SERVICES):
            self.stale.add(self.listers[resource].get(NAMESPACE, name)["metadata"]["uid"])
            await self.client.delete(resource, name, namespace=NAMESPACE)

    async def _converge(self, start: float) -> tuple[float, float, bool]:
        """Wait until every Website has converged: (wall, p50, completed)."""
        first_seen: dict[str, float] = {}
        deadline = start + self.timeout
        while True:
            if not self.operator.running():
                raise RuntimeError(f"the operator exited; log tail:\n{self.operator.log_tail()}")
            now = time.monotonic()
            pending = self.unconverged()
            for name in self.names:
                if name not in pending:
                    first_seen.setdefault(name, now - start)
            if not pending:
                return now - start, statistics.median(first_seen.values()), True
            if now > deadline:
                return now - start, statistics.median(first_seen.values() or [math.nan]), False
            await asyncio.sleep(0.1)

    def _mark(self) -> tuple[float, float, float]:
        return time.time(), self.operator.cpu(), sum(proc_cpu(p) for p in self.plane_pids)

    async def run(self, result: Run) -> None:
        """Every phase in turn, until one does not converge within the timeout."""
        marks = []  # (wall-clock time, operator CPU, apiserver + etcd CPU) at phase starts
        for name in PHASES:
            marks.append(self._mark())
            start = time.monotonic()
            await self._each(getattr(self, name))
            wall, p50, completed = await self._converge(start)
            converged_at = time.time()
            phase = result.phases[name] = Phase(wall=wall, p50=p50, completed=completed)
            if not completed:
                pending = self.unconverged()
                sample = "; ".join(f"{k}: {', '.join(v)}" for k, v in list(pending.items())[:3])
                result.note += f"{name}: {len(pending)} not converged in {wall:.0f} s ({sample}); "
                break
            last_write = await self.log.wait_quiet(OPERATOR_USER, QUIET_SECONDS, QUIET_TIMEOUT)
            phase.lag = max(0.0, last_write - converged_at)
        marks.append(self._mark())
        self.log.poll()
        for i, phase in enumerate(result.phases.values()):
            (start_at, cpu0, plane0), (end_at, cpu1, plane1) = marks[i], marks[i + 1]
            writes = writes_between(self.log.events, OPERATOR_USER, start_at, end_at)
            phase.cpu, phase.plane_cpu = cpu1 - cpu0, plane1 - plane0
            phase.writes, phase.errors = dict(writes.writes), dict(writes.errors)
            phase.others = dict(writes.others)


async def run_once(
    implementation: Implementation,
    websites: int,
    index: int,
    *,
    phase_timeout: float,
    keep: bool = False,
) -> Run:
    """Measure ``implementation`` with ``websites`` Websites on a control plane of its own."""
    directory = Path(tempfile.mkdtemp(prefix=f"kcontrol-bench-operator-{implementation.name}-"))
    policy = directory / "audit-policy.yaml"
    policy.write_text(audit_policy(OPERATOR_USER))
    audit_log = directory / "audit.log"
    result = Run(
        implementation=implementation.name,
        websites=websites,
        index=index,
        started=datetime.datetime.now(datetime.UTC).strftime("%H:%M:%S"),
        load=load_average(),
    )
    plane = ControlPlane(
        extra_apiserver_args=[
            f"--audit-policy-file={policy}",
            f"--audit-log-path={audit_log}",
            "--audit-log-format=json",
            "--audit-log-maxsize=0",
            # envtest's /24 holds 254 Services; 500 Websites need more ClusterIPs
            "--service-cluster-ip-range=10.0.0.0/16",
        ]
    )
    try:
        async with plane:
            await _measure(
                plane, implementation, websites, directory, audit_log, result, phase_timeout
            )
    finally:
        if keep:
            print(f"# logs kept in {directory}", flush=True)
        else:
            shutil.rmtree(directory, ignore_errors=True)
    return result


async def _measure(
    plane: ControlPlane,
    implementation: Implementation,
    websites: int,
    directory: Path,
    audit_log: Path,
    result: Run,
    phase_timeout: float,
) -> None:
    await plane.install_crds(CRD_PATH)
    config = await load_config(kubeconfig=str(plane.kubeconfig_path))
    async with ApiClient(config, qps=0, user_agent=BENCH_USER_AGENT) as client:
        await client.create(
            CLUSTERROLEBINDINGS,
            {
                "metadata": {"name": "bench-operator"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "cluster-admin",
                },
                "subjects": [
                    {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": OPERATOR_USER}
                ],
            },
        )
        await client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        factory = SharedInformerFactory(client, namespace=NAMESPACE)
        for resource in (WEBSITES, DEPLOYMENTS, SERVICES):
            factory.for_resource(resource)
        log = AuditLog(audit_log)
        operator = OperatorProcess(
            implementation, plane.user_kubeconfig(OPERATOR_USER), directory / "operator.log"
        )
        assert plane._apiserver is not None and plane._apiserver.popen is not None
        assert plane._etcd is not None and plane._etcd.popen is not None
        plane_pids = [plane._apiserver.popen.pid, plane._etcd.popen.pid]
        async with asyncio.TaskGroup() as tasks:
            informers = tasks.create_task(factory.run())
            await factory.wait_for_cache_sync()
            started = time.monotonic()
            operator.start()
            try:
                if not await log.wait_watching(OPERATOR_USER, WATCHED, READY_TIMEOUT):
                    raise RuntimeError(
                        f"{implementation.name} did not watch {sorted(WATCHED)} within "
                        f"{READY_TIMEOUT:g} s (watching {sorted(log.watched(OPERATOR_USER))}, "
                        f"running: {operator.running()}); log tail:\n{operator.log_tail()}"
                    )
                result.ready_seconds = time.monotonic() - started
                await asyncio.sleep(SETTLE_SECONDS)
                result.start_cpu = operator.cpu()
                names = [f"web-{i:04d}" for i in range(websites)]
                phases = _Phases(client, factory, operator, plane_pids, log, names, phase_timeout)
                await phases.run(result)
                result.peak_rss_kb = operator.peak_rss_kb()
                if not operator.running():
                    result.note += "the operator exited; "
            finally:
                operator.stop()
                informers.cancel()

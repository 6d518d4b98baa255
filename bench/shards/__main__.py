"""``python -m bench.shards``: the command line and the runs (see ``bench.shards``)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime
import json
import math
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # python bench/shards ...

import bench.shards
from bench._process import kcontrol_manager, load_average, proc_cpu, proc_status_kb
from bench._results import command_line, machine_facts, write_results
from bench.rollout import TEMPLATE_PATCH, _timestamp, free_port, is_complete
from kcontrol.client import (
    DEPLOYMENTS,
    LEASES,
    NAMESPACES,
    PODS,
    ApiClient,
    ListOptions,
    PatchType,
    load_config,
    shard_of,
)
from kcontrol.envtest.cluster import Cluster
from kcontrol.errors import NotFound
from kcontrol.informers import SharedInformerFactory
from kcontrol.leaderelection import shard_lease_name

ROOT = Path(__file__).resolve().parents[2]
LEASE, LEASE_NAMESPACE = "bench-shards", "kube-system"
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 4.0, 3.0, 0.5
CREATE_CONCURRENCY = 16
PODS_PER_NODE = 110
ROLLOUT = ("pods", "replicasets", "deployments")
USER_AGENT = "kcontrol-bench-shards"
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
  resources:
  - group: ""
    resources: ["pods"]
  - group: "apps"
    resources: ["replicasets", "replicasets/*", "deployments", "deployments/*"]
- level: Request
  verbs: ["create", "update", "patch", "delete"]
  resources:
  - group: "coordination.k8s.io"
    resources: ["leases"]
- level: None
"""
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection"}
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Config:
    replicas: int
    shards: int
    faults: bool

    @property
    def label(self) -> str:
        return f"{self.replicas}x{self.shards}" + ("!" if self.faults else "")

    @classmethod
    def parse(cls, text: str) -> Config:
        faults = text.endswith("!")
        replicas, shards = text.rstrip("!").split("x")
        return cls(int(replicas), int(shards), faults)


@dataclass
class ReplicaResult:
    identity: str
    cpu: dict[str, float] = field(default_factory=dict)
    start_cpu: float = 0.0
    peak_rss_mb: float = 0.0
    cached: dict[str, int] = field(default_factory=dict)
    """What its informers cached at the end of the create phase (its share, before faults)."""
    watch_events: int = 0
    """Watch events its informers received: to the end, or to the create phase's end for a
    replica that did not live to the end."""
    shards_held: int = 0
    fate: str = "ran"


@dataclass
class ConfigResult:
    gate: str
    label: str
    replicas: int
    shards: int
    deployments: int
    started: str
    load: float
    wall: dict[str, float] = field(default_factory=dict)
    completed: dict[str, bool] = field(default_factory=dict)
    replica_results: list[ReplicaResult] = field(default_factory=list)
    writes_outside_holds: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    faults: str = ""
    restart: str = ""


# --------------------------------------------------------------------------- processes


class Replica:
    """One ``kcontrol-manager`` process."""

    def __init__(self, cluster: Cluster, identity: str, shards: int, directory: Path) -> None:
        self.identity = identity
        self.port = free_port()
        self.log = directory / f"{identity}.log"
        self.argv = [
            str(kcontrol_manager()),
            f"--kubeconfig={cluster.kubeconfig_path}",
            "--controllers=deployment-controller,replicaset-controller",
            "--leader-elect=true",
            f"--leader-elect-lease-duration={LEASE_DURATION:g}s",
            f"--leader-elect-renew-deadline={RENEW_DEADLINE:g}s",
            f"--leader-elect-retry-period={RETRY_PERIOD * 1000:g}ms",
            f"--leader-elect-resource-namespace={LEASE_NAMESPACE}",
            f"--leader-elect-resource-name={LEASE}",
            f"--leader-elect-identity={identity}",
            f"--shards={shards}",
            "--kube-api-qps=0",
            "--bind-address=127.0.0.1",
            "--secure-port=0",
            f"--metrics-port={self.port}",
            "--log-format=json",
        ]
        self.popen: subprocess.Popen[bytes] | None = None
        self.last_cpu = 0.0
        self.peak_rss_kb = 0

    @property
    def user_agent(self) -> str:
        return f"kcontrol-manager/{self.identity}"

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
            )

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def cpu(self) -> float:
        """CPU-seconds so far (the last reading once the process is gone)."""
        assert self.popen is not None
        with contextlib.suppress(OSError):
            self.last_cpu = proc_cpu(self.popen.pid)
            self.peak_rss_kb = max(self.peak_rss_kb, proc_status_kb(self.popen.pid, "VmHWM:"))
        return self.last_cpu

    def signal(self, signum: int) -> None:
        assert self.popen is not None
        self.popen.send_signal(signum)

    async def wait(self, within: float) -> int | None:
        assert self.popen is not None
        popen = self.popen
        try:
            return await asyncio.wait_for(asyncio.to_thread(popen.wait), within)
        except TimeoutError:
            return popen.poll()

    async def stop(self) -> None:
        if self.running():
            self.signal(signal.SIGTERM)
            if await self.wait(30) is None:
                self.signal(signal.SIGKILL)
                await self.wait(10)

    async def metrics(self) -> dict[str, float]:
        """``name{labels}`` -> value of the families this benchmark reads."""
        wanted = (
            "kcontrol_informer_cached_objects",
            "kcontrol_informer_watch_events_total",
            "kcontrol_manager_shard_held",
        )
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session,
                session.get(f"http://127.0.0.1:{self.port}/metrics") as response,
            ):
                text = await response.text()
        except (aiohttp.ClientError, TimeoutError):
            return {}
        found = {}
        for line in text.splitlines():
            if line.startswith(wanted):
                key, _, value = line.rpartition(" ")
                found[key] = float(value)
        return found

    async def ready(self) -> bool:
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session,
                session.get(f"http://127.0.0.1:{self.port}/readyz") as response,
            ):
                return response.status == 200
        except (aiohttp.ClientError, TimeoutError):
            return False


async def until(probe: Callable[[], Awaitable[bool]], within: float, what: str) -> float:
    start = time.monotonic()
    while not await probe():
        if time.monotonic() - start > within:
            raise RuntimeError(f"{what}: not within {within:.0f} s")
        await asyncio.sleep(0.2)
    return time.monotonic() - start


async def holders(client: ApiClient, shards: int) -> dict[int, str]:
    """Shard -> the identity holding its Lease ("" when none); shards = 1: the single Lease."""
    names = [LEASE] if shards == 1 else [shard_lease_name(LEASE, k, shards) for k in range(shards)]
    found = {}
    for index, name in enumerate(names):
        try:
            lease = await client.get(LEASES, name, namespace=LEASE_NAMESPACE)
        except NotFound:
            found[index] = ""
            continue
        found[index] = (lease.get("spec") or {}).get("holderIdentity") or ""
    return found


# --------------------------------------------------------------------------- the audit log


@dataclass(frozen=True)
class Write:
    verb: str
    resource: str
    namespace: str
    name: str
    agent: str
    code: int
    received: float
    completed: float
    holder: str | None


def read_audit(path: Path, start: int) -> list[Write]:
    writes = []
    with path.open("rb") as log:
        log.seek(start)
        for line in log:
            try:
                raw = json.loads(line)
            except ValueError:
                continue
            if raw.get("stage") != "ResponseComplete" or raw.get("verb") not in WRITE_VERBS:
                continue
            ref = raw.get("objectRef") or {}
            body = raw.get("requestObject")
            holder = None
            if isinstance(body, dict) and body.get("kind") == "Lease":
                holder = str((body.get("spec") or {}).get("holderIdentity") or "")
            writes.append(
                Write(
                    verb=raw["verb"],
                    resource=ref.get("resource", ""),
                    namespace=ref.get("namespace", ""),
                    name=ref.get("name", ""),
                    agent=raw.get("userAgent", ""),
                    code=int((raw.get("responseStatus") or {}).get("code", 0)),
                    received=_timestamp(raw["requestReceivedTimestamp"]),
                    completed=_timestamp(raw["stageTimestamp"]),
                    holder=holder,
                )
            )
    return writes


def _by(write: Write, replica: Replica) -> bool:
    return write.agent == replica.user_agent or write.agent.startswith(replica.user_agent + "/")


def outside_holds(writes: list[Write], replicas: list[Replica], shards: int) -> list[str]:
    """Writes of ``replicas`` to a namespace's rollout objects not received while the latest
    write of its shard's Lease was the writer's own, naming itself, less than a lease
    duration before (``bench.shards``, step 6)."""
    lease_of = (
        (lambda ns: LEASE)
        if shards == 1
        else (lambda ns: shard_lease_name(LEASE, shard_of(ns, shards), shards))
    )
    leases: dict[str, list[Write]] = {}
    for w in writes:
        if w.resource == "leases" and 200 <= w.code < 300 and w.holder is not None:
            leases.setdefault(w.name, []).append(w)
    for ordered in leases.values():
        ordered.sort(key=lambda w: w.completed)
    found = []
    for w in writes:
        if w.resource not in ROLLOUT or not w.namespace or not 200 <= w.code < 300:
            continue
        writer = next((r for r in replicas if _by(w, r)), None)
        if writer is None:
            continue
        before = [lw for lw in leases.get(lease_of(w.namespace), []) if lw.completed <= w.received]
        last = before[-1] if before else None
        if (
            last is None
            or not _by(last, writer)
            or last.holder != writer.identity
            or w.received - last.completed >= LEASE_DURATION
        ):
            found.append(f"{w.verb} {w.resource} {w.namespace}/{w.name} by {writer.identity}")
    return found


def duplicates(writes: list[Write], deployments: int, replicas: int, revisions: int) -> list[str]:
    """What was done more than once: more ReplicaSets or pods created than the rollouts need,
    or a ReplicaSet deleted. A create cut off by its client's death (SIGKILL) is logged by the
    API server as 504 "context canceled" even when it took effect, so creates answered 2xx
    may fall short of the need by those; they are counted apart."""
    kcontrol = [w for w in writes if w.agent.startswith("kcontrol-manager/")]
    ok = [w for w in kcontrol if 200 <= w.code < 300]
    cut = sum(w.verb == "create" and w.code == 504 for w in kcontrol)
    rs_creates = sum(w.resource == "replicasets" and w.verb == "create" for w in ok)
    rs_deletes = sum(w.resource == "replicasets" and w.verb == "delete" for w in ok)
    pod_creates = sum(w.resource == "pods" and w.verb == "create" for w in ok)
    found = []
    if rs_creates > deployments * revisions:
        found.append(f"{rs_creates} ReplicaSets created, not {deployments * revisions}")
    if rs_deletes:
        found.append(f"{rs_deletes} ReplicaSets deleted")
    if pod_creates > deployments * revisions * replicas:
        found.append(f"{pod_creates} pods created, not {deployments * revisions * replicas}")
    short = deployments * revisions - rs_creates + deployments * revisions * replicas - pod_creates
    if short > cut:
        found.append(f"{short} creates missing from the audit log, {cut} cut off by a kill")
    return found


# --------------------------------------------------------------------------- one configuration


class Bench:
    def __init__(self, cluster: Cluster, audit: Path, directory: Path, args: Any) -> None:
        self.cluster, self.audit, self.directory, self.args = cluster, audit, directory, args

    def deployment(self, name: str, label: str) -> dict[str, Any]:
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "labels": {"bench": label}},
            "spec": {
                "replicas": self.args.replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]},
                },
            },
        }

    async def run(
        self, client: ApiClient, gate: str, config: Config, restart: bool
    ) -> ConfigResult:
        args = self.args
        tag = f"{gate}-{config.label.replace('!', 'f')}-{int(time.time()) % 100000}"
        result = ConfigResult(
            gate=gate,
            label=config.label,
            replicas=config.replicas,
            shards=config.shards,
            deployments=args.deployments,
            started=datetime.datetime.now(datetime.UTC).strftime("%H:%M:%S"),
            load=load_average(),
        )
        # The number first: FNV-1a's top bits, which the shard ranges cut, hardly depend on a
        # name's last two or three bytes, and names that differ only there share a shard.
        namespaces = [f"s{i:03d}-{tag}" for i in range(args.namespaces)]
        for ns in namespaces:
            await client.create(NAMESPACES, {"metadata": {"name": ns}})
        for ns in namespaces:
            await self.cluster.wait_for_service_account(ns)
        targets = [(namespaces[i % len(namespaces)], f"d-{i:05d}") for i in range(args.deployments)]
        replicas = [
            Replica(self.cluster, f"{tag}-{i}", config.shards, self.directory)
            for i in range(config.replicas)
        ]
        audit_start = self.audit.stat().st_size
        try:
            for r in replicas:
                r.start()
            await self._wait_serving(client, replicas, config.shards)
            await asyncio.sleep(2.0)
            starts = {r.identity: r.cpu() for r in replicas}
            factory = SharedInformerFactory(client)
            informer = factory.for_resource(DEPLOYMENTS, label_selector=f"bench={tag}")
            async with asyncio.TaskGroup() as tasks:
                running = tasks.create_task(factory.run())
                await factory.wait_for_cache_sync()
                before = {r.identity: r.cpu() for r in replicas}
                for phase in ("create", "update"):
                    faults = config.faults and phase == "update"
                    wall, done = await self._phase(
                        client, informer, targets, tag, phase, replicas, config, faults, result
                    )
                    result.wall[phase], result.completed[phase] = wall, done
                    now = {r.identity: r.cpu() for r in replicas}
                    for r in replicas:
                        rr = self._result_of(result, r)
                        rr.cpu[phase] = now[r.identity] - before[r.identity]
                        rr.start_cpu = starts[r.identity]
                    before = now
                    if phase == "create":
                        for r in replicas:
                            await self._read_metrics(r, self._result_of(result, r), cached=True)
                for r in replicas:
                    await self._read_metrics(r, self._result_of(result, r), cached=False)
                if restart:
                    result.restart = await self._restart(client, namespaces, replicas, config)
                running.cancel()
            for r in replicas:
                self._result_of(result, r).peak_rss_mb = r.peak_rss_kb / 1024
        finally:
            for r in replicas:
                await r.stop()
        writes = read_audit(self.audit, audit_start)
        result.writes_outside_holds = outside_holds(writes, replicas, config.shards)
        result.duplicates = duplicates(writes, args.deployments, args.replicas, 2)
        for ns in namespaces:
            with contextlib.suppress(NotFound):
                await client.delete(NAMESPACES, ns)
        await self._wait_gone(client, namespaces)
        return result

    def _result_of(self, result: ConfigResult, replica: Replica) -> ReplicaResult:
        for rr in result.replica_results:
            if rr.identity == replica.identity:
                return rr
        rr = ReplicaResult(replica.identity)
        result.replica_results.append(rr)
        return rr

    async def _wait_serving(self, client: ApiClient, replicas: list[Replica], shards: int) -> None:
        live = {r.identity for r in replicas if r.running()}

        async def serving() -> bool:
            for r in replicas:
                if not r.running():
                    raise RuntimeError(f"{r.identity} exited: {r.log.read_text()[-2000:]}")
            held = await holders(client, shards)
            if not all(held[k] in live for k in held):
                return False
            return all([await r.ready() for r in replicas])

        await until(serving, 120, "every shard held")

    async def _phase(
        self,
        client: ApiClient,
        informer: Any,
        targets: list[tuple[str, str]],
        tag: str,
        phase: str,
        replicas: list[Replica],
        config: Config,
        faults: bool,
        result: ConfigResult,
    ) -> tuple[float, bool]:
        semaphore = asyncio.Semaphore(CREATE_CONCURRENCY)
        generations: dict[tuple[str, str], int] = {}

        async def write(ns: str, name: str) -> None:
            async with semaphore:
                if phase == "create":
                    done = await client.create(
                        DEPLOYMENTS, self.deployment(name, tag), namespace=ns
                    )
                else:
                    done = await client.patch(
                        DEPLOYMENTS, name, TEMPLATE_PATCH, namespace=ns, patch_type=PatchType.MERGE
                    )
                generations[(ns, name)] = done["metadata"]["generation"]

        start = time.monotonic()
        audit_start = self.audit.stat().st_size
        await asyncio.gather(*(write(ns, name) for ns, name in targets))
        fault_task = None
        if faults:
            fault_task = asyncio.create_task(
                self._faults(client, replicas, config, audit_start, result)
            )
        deadline = start + self.args.phase_timeout
        done = False
        while time.monotonic() < deadline:
            complete = 0
            for d in informer.indexer.list():
                key = (d["metadata"]["namespace"], d["metadata"]["name"])
                if key in generations and is_complete(d, generations[key]):
                    complete += 1
            if complete == len(targets) and (fault_task is None or fault_task.done()):
                done = True
                break
            await asyncio.sleep(0.2)
        wall = time.monotonic() - start
        if fault_task is not None:
            if not fault_task.done():
                fault_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await fault_task
        return wall, done

    async def _faults(
        self,
        client: ApiClient,
        replicas: list[Replica],
        config: Config,
        audit_start: int,
        result: ConfigResult,
    ) -> None:
        """Kill shard 0's holder and stop another's once a tenth of the new ReplicaSets are
        in (``bench.shards``, step 4)."""

        async def under_way() -> bool:
            created = [
                w
                for w in read_audit(self.audit, audit_start)
                if w.resource == "replicasets" and w.verb == "create" and 200 <= w.code < 300
            ]
            return len(created) >= self.args.deployments // 10

        await until(under_way, self.args.phase_timeout, "a tenth of the rollouts started")
        held = await holders(client, config.shards)
        by_id = {r.identity: r for r in replicas}
        killed = by_id[held[0]]
        stopped = next(by_id[h] for h in held.values() if h and h != killed.identity)
        killed.signal(signal.SIGKILL)
        stopped.signal(signal.SIGSTOP)
        survivors = {r.identity for r in replicas} - {killed.identity, stopped.identity}

        async def taken_over() -> bool:
            return set((await holders(client, config.shards)).values()) <= survivors

        took = await until(taken_over, 120, "the faulted replicas' shards taken over")
        await asyncio.sleep(2.0)
        stopped.signal(signal.SIGCONT)
        code = await stopped.wait(60)
        for r, fate in ((killed, "SIGKILL"), (stopped, f"SIGSTOP, resumed: exit {code}")):
            self._result_of(result, r).fate = fate
        result.faults = (
            f"SIGKILL {killed.identity} and SIGSTOP {stopped.identity}; every shard held by "
            f"the others {took:.1f} s later; the stopped one, resumed, exited {code}"
        )

    async def _restart(
        self, client: ApiClient, namespaces: list[str], singles: list[Replica], config: Config
    ) -> str:
        """From the single leader to 3 sharded replicas and back, both kinds overlapping;
        no pod may be replaced (``bench.shards``, step 7)."""
        assert config.shards == 1 and len(singles) == 1
        (single,) = singles
        pods_before = await self._pod_uids(client, namespaces)
        audit_start = self.audit.stat().st_size
        sharded = [
            Replica(self.cluster, f"{single.identity}-s{i}", 3, self.directory) for i in range(3)
        ]
        back = Replica(self.cluster, f"{single.identity}-back", 1, self.directory)
        try:
            for r in sharded:
                r.start()
            await asyncio.sleep(10 * RETRY_PERIOD + 3)
            took_none = True
            for r in sharded:
                held = [v for k, v in (await r.metrics()).items() if "shard_held" in k]
                took_none = took_none and bool(held) and not any(held)  # answered, held none
            await single.stop()
            ids = {r.identity for r in sharded}

            async def sharded_hold() -> bool:
                return set((await holders(client, 3)).values()) <= ids and "" not in set(
                    (await holders(client, 3)).values()
                )

            took = await until(sharded_hold, 120, "the sharded replicas hold every shard")
            await asyncio.sleep(5)
            back.start()

            async def single_leads() -> bool:
                return (await holders(client, 1))[0] == back.identity and all(
                    h == "" for h in (await holders(client, 3)).values()
                )

            handed = await until(single_leads, 120, "the single leader back, every shard free")
            for r in sharded:
                await r.stop()
            await asyncio.sleep(5)
        finally:
            for r in sharded:
                await r.stop()
            await back.stop()
        pods_after = await self._pod_uids(client, namespaces)
        touched = [
            w
            for w in read_audit(self.audit, audit_start)
            if w.resource in ("pods", "replicasets")
            and w.verb in ("create", "delete")
            and w.namespace in set(namespaces)
        ]
        same = pods_before == pods_after
        return (
            f"sharded replicas beside the single leader took {'no' if took_none else 'SOME'} "
            f"shard; after it stopped they held every shard in {took:.1f} s; a single leader "
            f"started beside them led with every shard given back in {handed:.1f} s; "
            f"{len(pods_before)} pods {'unchanged' if same else 'CHANGED'}, "
            f"{len(touched)} pod/ReplicaSet creates or deletes meanwhile"
        )

    async def _pod_uids(self, client: ApiClient, namespaces: list[str]) -> set[str]:
        wanted = set(namespaces)
        page = await client.list(PODS, options=ListOptions(label_selector="app"))
        return {p["metadata"]["uid"] for p in page["items"] if p["metadata"]["namespace"] in wanted}

    async def _read_metrics(self, replica: Replica, rr: ReplicaResult, *, cached: bool) -> None:
        """The replica's cache sizes (``cached``) or watch events and shards held."""
        if not replica.running():
            return
        found = await replica.metrics()
        events, held = 0, 0
        for key, value in found.items():
            labels = dict(_LABEL.findall(key))
            if cached and key.startswith("kcontrol_informer_cached_objects"):
                rr.cached[labels.get("resource", "?")] = int(value)
            elif key.startswith("kcontrol_informer_watch_events_total"):
                events += int(value)
            elif key.startswith("kcontrol_manager_shard_held"):
                held += int(value)
        rr.watch_events = events
        if not cached:
            rr.shards_held = held

    async def _wait_gone(self, client: ApiClient, namespaces: list[str]) -> None:
        """Until the namespaces are gone (KCM's namespace controller empties them), at most
        three minutes: the next configuration starts on a quiet cluster, or nearly."""
        deadline = time.monotonic() + 180
        for ns in namespaces:
            while time.monotonic() < deadline:
                try:
                    await client.get(NAMESPACES, ns)
                except NotFound:
                    break
                await asyncio.sleep(1.0)


# --------------------------------------------------------------------------- orchestration


async def run_gate(gate: str, args: Any, results: list[ConfigResult]) -> None:
    directory = Path(tempfile.mkdtemp(prefix="kcontrol-shards-"))
    policy = directory / "audit-policy.yaml"
    policy.write_text(AUDIT_POLICY)
    audit = directory / "audit.log"
    nodes = math.ceil(2 * args.deployments * args.replicas / PODS_PER_NODE) + 1
    extra = [
        f"--audit-policy-file={policy}",
        f"--audit-log-path={audit}",
        "--audit-log-format=json",
        "--audit-log-maxsize=0",
    ]
    if gate == "on":
        extra.append("--feature-gates=ShardedListAndWatch=true")
    cluster = Cluster(nodes=nodes, pod_ready_delay=args.pod_ready_delay, extra_apiserver_args=extra)
    print(f"# gate {gate}: a cluster with {nodes} kwok nodes ({directory})", flush=True)
    async with cluster:
        config = await load_config(kubeconfig=str(cluster.kubeconfig_path))
        async with ApiClient(config, qps=0, user_agent=USER_AGENT) as client:
            bench = Bench(cluster, audit, directory, args)
            configs = [Config.parse(c) for c in args.configs.split(",")]
            for index, cfg in enumerate(configs):
                restart = args.restart and index == 0 and cfg.shards == 1 and cfg.replicas == 1
                t0 = time.monotonic()
                result = await bench.run(client, gate, cfg, restart)
                results.append(result)
                if args.dump:
                    dump(args.dump, results)
                print(
                    f"gate {gate} {cfg.label}: "
                    + " ".join(f"{p} {w:.1f}s" for p, w in result.wall.items())
                    + f"; outside holds {len(result.writes_outside_holds)}, duplicates "
                    f"{result.duplicates}; {time.monotonic() - t0:.0f} s with teardown",
                    flush=True,
                )
    if args.keep_logs:
        print(f"# logs kept in {directory}", flush=True)
    else:
        shutil.rmtree(directory, ignore_errors=True)


def dump(path: str, results: list[ConfigResult]) -> None:
    Path(path).write_text(json.dumps([dataclasses.asdict(r) for r in results], indent=1))


def summary() -> str:
    facts = machine_facts(go=False, kubernetes=False)
    return (
        f"{facts['cpus']} CPUs ({facts['cpu_model']}), {facts['memory_gb']} GB, "
        f"Python {facts['python']}, kube-apiserver v1.36.3 and kwok from hack/build-k8s.sh"
    )


def report(results: list[ConfigResult], command: str) -> str:
    out = [
        "# Sharding: kcontrol-manager over replicas",
        "",
        f"`{command}`, {datetime.date.today().isoformat()}. {summary()}",
        "",
        "| gate | replicas x shards | Deployments | create s | update s | CPU-s per replica "
        "(create + update) | peak RSS MB per replica | Deployments cached per replica after "
        "create | watch events per replica | writes outside holds | done twice |",
        "|---|---|--:|--:|--:|---|---|---|---|--:|---|",
    ]
    for r in results:
        rrs = r.replica_results

        def cell(values: list[str]) -> str:
            return " / ".join(values)

        out.append(
            f"| {r.gate} | {r.label} | {r.deployments} | {r.wall.get('create', 0):.1f} | "
            f"{r.wall.get('update', 0):.1f} | "
            f"{cell([f'{sum(x.cpu.values()):.1f}' for x in rrs])} | "
            f"{cell([f'{x.peak_rss_mb:.0f}' for x in rrs])} | "
            f"{cell([str(x.cached.get('deployments', '-')) for x in rrs])} | "
            f"{cell([str(x.watch_events) for x in rrs])} | "
            f"{len(r.writes_outside_holds)} | {'; '.join(r.duplicates) or 'nothing'} |"
        )
    notes = [f"- {r.gate} {r.label}: {r.faults}" for r in results if r.faults]
    notes += [
        f"- {r.gate} {r.label}, restart 1 -> 3 -> 1: {r.restart}" for r in results if r.restart
    ]
    notes += [
        f"- {r.gate} {r.label}: replica {x.identity} {x.fate}"
        for r in results
        for x in r.replica_results
        if x.fate != "ran"
    ]
    incomplete = [
        f"{r.gate} {r.label} {p}" for r in results for p, ok in r.completed.items() if not ok
    ]
    if incomplete:
        notes.append(f"- NOT COMPLETE within the phase timeout: {', '.join(incomplete)}")
    violations = [v for r in results for v in r.writes_outside_holds[:5]]
    if violations:
        notes.append("- writes outside holds (first ones): " + "; ".join(violations))
    median_cpu = [
        f"{r.gate} {r.label}: {statistics.median([sum(x.cpu.values()) for x in r.replica_results]):.1f}"
        for r in results
        if r.replica_results
    ]
    notes.append("- median CPU-s per replica: " + ", ".join(median_cpu))
    return "\n".join([*out, "", *notes, ""])


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.shards",
        description=bench.shards.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--gates", default="on,off", help="comma-separated: on, off")
    p.add_argument("--configs", default="1x1,3x3,3x6!", help="REPLICASxSHARDS[!], comma-separated")
    p.add_argument("--deployments", type=int, default=2000)
    p.add_argument("--namespaces", type=int, default=200)
    p.add_argument("--replicas", type=int, default=1, help="pods per Deployment")
    p.add_argument("--restart", action="store_true", help="1 -> 3 -> 1 after a 1x1 first config")
    p.add_argument("--pod-ready-delay", type=float, default=1.0)
    p.add_argument("--phase-timeout", type=float, default=900.0)
    p.add_argument("--out", help="write the report (Markdown) here")
    p.add_argument("--json", help="write the results (bench/_results.py's format) here")
    p.add_argument("--dump", help="write the raw results (JSON) here after every config")
    p.add_argument("--merge", action="append", help="earlier --dump files to include")
    p.add_argument("--keep-logs", action="store_true")
    return p


def points(results: list[ConfigResult]) -> list[dict[str, Any]]:
    """One point per gate and configuration: the walls, and per replica its CPU-seconds,
    peak RSS, cached Deployments and watch events."""
    return [
        {
            "gate": r.gate,
            "config": r.label,
            "replicas": r.replicas,
            "shards": r.shards,
            "deployments": r.deployments,
            "wall_s": r.wall,
            "completed": r.completed,
            "per_replica": [
                {
                    "cpu_s": x.cpu,
                    "start_cpu_s": x.start_cpu,
                    "peak_rss_mb": x.peak_rss_mb,
                    "cached": x.cached,
                    "watch_events": x.watch_events,
                    "shards_held": x.shards_held,
                    "fate": x.fate,
                }
                for x in r.replica_results
            ],
            "writes_outside_holds": len(r.writes_outside_holds),
            "done_twice": r.duplicates,
            "faults": r.faults,
            "restart": r.restart,
        }
        for r in results
    ]


def load(path: str) -> list[ConfigResult]:
    found = []
    for raw in json.loads(Path(path).read_text()):
        replicas = [ReplicaResult(**x) for x in raw.pop("replica_results")]
        found.append(ConfigResult(**raw, replica_results=replicas))
    return found


def main() -> None:
    args = parser().parse_args()
    results: list[ConfigResult] = [r for path in args.merge or () for r in load(path)]
    started = datetime.datetime.now(datetime.UTC)

    async def everything() -> None:
        for gate in [g for g in args.gates.split(",") if g]:
            await run_gate(gate, args, results)

    asyncio.run(everything())
    command = command_line("bench.shards")
    text = report(results, command)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    if args.json:
        write_results(
            args.json,
            "shards",
            started=started,
            finished=datetime.datetime.now(datetime.UTC),
            machine={**machine_facts([r.load for r in results], go=False), "kwok": "v0.8.0"},
            command=command,
            parameters={
                "configs": args.configs,
                "gates": args.gates,
                "deployments": args.deployments,
                "namespaces": args.namespaces,
                "pods_per_deployment": args.replicas,
                "pod_ready_delay_seconds": args.pod_ready_delay,
                "lease_seconds": [LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD],
            },
            points=points(results),
        )


if __name__ == "__main__":
    main()

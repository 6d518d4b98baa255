"""Rollout benchmark (benchmarks.md, scenario 5): kcontrol-manager side by side with
kube-controller-manager's Deployment and ReplicaSet controllers.

For each size ``NxR`` in ``--sizes`` and each pod timing in ``--pod-ready-delay``
(comma-separated seconds from a pod's start to Ready: ``1,0`` measures pods Ready 1 s after
they start and at once, as kwok's default stages and a cluster made by kwokctl have them -
issue 37) one kwok cluster is started (kcontrol.envtest.cluster: etcd, kube-apiserver,
kube-scheduler, kube-controller-manager without its deployment and replicaset controllers,
kwok with ``ceil(2*N*R/110) + 1`` nodes). Then, for each client limit in ``--qps``,
``--runs`` runs, each run measuring both controller managers one after the other (KCM, then
kcontrol, then KCM, ...: A, B, A, B), every one of them on the same apiserver:

1. a fresh namespace (its ``default`` ServiceAccount waited for);
2. the controller process under test is started **as a separate process** next to the
   cluster's own kube-controller-manager (which keeps the garbage collector, namespace
   controller and the rest), so its CPU and memory are only the two controllers':

   - ``kcm``: ``kube-controller-manager --controllers=deployment-controller,replicaset-controller
     --leader-elect=false --kube-api-qps=Q --kube-api-burst=B`` (the same binary as the
     cluster's, v1.36.3); ready once ``/healthz`` answers;
   - ``kcontrol``: ``kcontrol-manager --controllers=deployment-controller,replicaset-controller
     --leader-elect=false --kube-api-qps=Q --kube-api-burst=B --secure-port=0
     --metrics-port=P``; ready once ``/readyz`` answers (caches synced) on the plain-HTTP
     metrics port, which is served only for that check.

   Both then idle for 2 s before anything is measured. (Before the first run on a new
   cluster, one unrecorded warm-up round of ``min(N, 10)xR`` with each side.);
3. **create**: N Deployments (R replicas, RollingUpdate with the defaults: 25 % surge, 25 %
   unavailable) are POSTed, 16 at a time, by the benchmark's own unthrottled client, until
   every Deployment is complete: ``observedGeneration == generation`` and ``replicas ==
   updatedReplicas == availableReplicas == spec.replicas`` (no old pods left); then until the
   controller has sent no write for 2 s (its events may trail the rollout, above all when
   throttled);
4. **update**: every pod template is changed (a merge patch of the container image, ``:1`` ->
   ``:2``), until every Deployment is complete again at its new generation, and the
   controller quiet for 2 s;
5. the controller's peak RSS read, the controller stopped (SIGTERM), the namespace deleted and
   waited for until it is gone.

Completion is watched through a namespaced Deployment informer in the benchmark process,
checked every 0.1 s. A phase's ``wall`` runs from just before its first write to the moment
every Deployment was seen complete; ``p50`` is the median time of one Deployment's own
completion; ``lag`` is how long after completion the controller's last write of the phase
came (events, mostly).

What is measured per phase:

- wall seconds (above); the median over runs, and the ratio kcontrol/KCM of the medians;
- the controller process's CPU-seconds (user + sys of every thread, ``/proc/<pid>/stat``)
  during the phase, its quiet tail included (2 idle seconds cost next to nothing); its
  start-up (Python imports, cache sync) is reported apart as ``start CPU``; and apiserver +
  etcd CPU-seconds during the phase (a controller that sends more requests costs the control
  plane more);
- peak RSS of the controller process (``VmHWM``, start-up included), read before stopping it;
- API writes. The apiserver counts every request in ``apiserver_request_total``, but its
  labels (verb, group, resource, subresource, code) say nothing of *who* wrote, and other
  clients write the same resources during a rollout: kwok patches ``pods/status`` and, for a
  pod the ReplicaSet controller deletes, sends the final ``DELETE`` itself; kube-scheduler
  POSTs ``pods/binding`` and ``events.k8s.io`` events; the benchmark POSTs and PATCHes the
  Deployments. So the apiserver also writes an **audit log** (policy: level ``Metadata`` for
  create/update/patch/delete/deletecollection, nothing else, one event per request at
  ``ResponseComplete``), and writes are attributed by the request's user agent: KCM's
  controllers send ``kube-controller-manager/v1.36.3 (...)/deployment-controller`` and
  ``.../replicaset-controller`` (their events included: each controller's event sink uses
  its own client), kcontrol-manager ``kcontrol-manager/<identity>/<component>``. Each audit event
  falls into the phase its ``requestReceivedTimestamp`` does (a phase ends where the next
  starts: after the quiet tail). The scrape of ``apiserver_request_total`` before and after
  each phase is kept as a check: every writer's writes, which should equal the audit log's
  total for the same window up to the few requests in flight at a boundary (``all writers``
  in the raw table; the other writers are listed by user agent). Writes are quoted per
  Deployment (per rollout): the phase's writes / N. Answers other than 2xx (409 conflicts,
  mostly) count as writes, and are also shown apart.

Caveats:

- The client limits mean the same in both processes: kube-controller-manager gives every
  controller its own clientset (``ClientBuilder.ClientOrDie(name)``) and so its own token
  bucket, and so does kcontrol-manager (``ApiClient.for_component``, since 2026-11-23
  22:15; runs before that had one bucket for everything): at QPS 20 / burst 30 the
  Deployment controller (with its events), the ReplicaSet controller (with its events) and
  the shared informers may each send 20 requests a second. "Unthrottled" is QPS 10000 /
  burst 10000 for KCM and ``--kube-api-qps=0`` (no limiter) for kcontrol-manager.
- The machine has 2 cores, shared by etcd, kube-apiserver, kube-scheduler, kwok, the
  cluster's KCM, the controller under test, this script - and other people's work. Wall time
  is what contends most; CPU-seconds are steadier. The load average at the start of each
  run is recorded.
- Each run's first write may find the controller's connections cold; both sides alike.

Usage::

    .venv/bin/python -m bench.rollout --sizes 50x3,200x5,1000x1 --qps 20:30,unthrottled \\
        --runs 3 --pod-ready-delay 1,0 --out bench/results/tables/rollout.md \\
        --json bench/results/rollout.json --dump /tmp/rollout.json

(``python bench/rollout.py`` works too.) ``--merge FILE`` adds the runs of earlier ``--dump``
files to the tables and the results (``--runs 0`` with ``--merge`` only renders them).
``--profile DIR`` attaches py-spy to each kcontrol run and leaves its raw collapsed stacks
in ``DIR/<run>-ready-<timing>.txt`` (``python -m bench.profile`` summarises them; KCM is
never profiled).
``--json`` writes the medians and every run in ``bench/_results.py``'s format, for
``bench/report.py``'s plots. ``--kcm-gomaxprocs 1`` runs KCM on one core, as kcontrol's
controllers run on one event loop: a diagnosis of a time gap, not a figure to quote.
``--concurrent-syncs N`` gives both managers N workers per controller instead of their 5: a
diagnosis of how many events fold into one sync (the syncs table), not a figure to quote.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime
import json
import math
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # python bench/rollout.py

from bench._cli import add_ready_delays, ready_delays
from bench._process import kcontrol_manager, load_average, proc_cpu, proc_status_kb
from bench._results import machine_facts, write_results
from bench._tables import median, ratio, ratio_value, ready_label
from kcontrol.client import DEPLOYMENTS, NAMESPACES, ApiClient, PatchType, load_config
from kcontrol.envtest import K8S_VERSION, find_binary
from kcontrol.envtest.cluster import Cluster
from kcontrol.errors import NotFound
from kcontrol.informers import SharedInformerFactory

ROOT = Path(__file__).resolve().parent.parent
KCM = "kcm"
KCONTROL = "kcontrol"
IMPLS = (KCM, KCONTROL)
CONTROLLERS = "deployment-controller,replicaset-controller"
BENCH_USER_AGENT = "kcontrol-bench-rollout"
PODS_PER_NODE = 110
CREATE_CONCURRENCY = 16
SETTLE_SECONDS = 2.0
QUIET_SECONDS = 2.0
QUIET_TIMEOUT = 300.0
PHASES = ("create", "update")
QUEUES = ("deployment", "replicaset")
"""The workqueues of the controllers under test: the same names in both managers."""
WRITE_VERBS = {"POST", "PUT", "PATCH", "DELETE", "APPLY", "DELETECOLLECTION"}
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
"""
AUDIT_VERBS = {
    "create": "POST",
    "update": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
    "deletecollection": "DELETECOLLECTION",
}


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class Size:
    deployments: int
    replicas: int

    @property
    def label(self) -> str:
        return f"{self.deployments}x{self.replicas}"

    @classmethod
    def parse(cls, text: str) -> Size:
        n, r = text.lower().split("x")
        return cls(int(n), int(r))


@dataclass(frozen=True)
class Limit:
    label: str  # "20:30" or "unthrottled"
    qps: float | None  # None: unthrottled
    burst: int

    @classmethod
    def parse(cls, text: str) -> Limit:
        if text == "unthrottled":
            return cls(text, None, 0)
        qps, burst = text.split(":")
        return cls(text, float(qps), int(burst))

    def kcm_flags(self) -> list[str]:
        qps, burst = (10000.0, 10000) if self.qps is None else (self.qps, self.burst)
        return [f"--kube-api-qps={qps:g}", f"--kube-api-burst={burst}"]

    def kcontrol_flags(self) -> list[str]:
        if self.qps is None:
            return ["--kube-api-qps=0"]
        return [f"--kube-api-qps={self.qps:g}", f"--kube-api-burst={self.burst}"]


# --------------------------------------------------------------------------- ports


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# --------------------------------------------------------------------------- API writes


_SAMPLE = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def resource_key(group: str, resource: str, subresource: str) -> str:
    name = f"{resource}/{subresource}" if subresource else resource
    return f"{group}/{name}" if group else name


async def scrape_writes(session: aiohttp.ClientSession, host: str) -> Counter[str]:
    """``apiserver_request_total`` for write verbs, as ``"VERB resource"`` -> count."""
    async with session.get(f"{host}/metrics") as response:
        text = await response.text()
    writes: Counter[str] = Counter()
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if not match:
            continue
        labels = dict(_LABEL.findall(match["labels"]))
        verb = labels.get("verb", "")
        if verb not in WRITE_VERBS or labels.get("dry_run"):
            continue
        key = resource_key(
            labels.get("group", ""), labels.get("resource", ""), labels.get("subresource", "")
        )
        writes[f"{verb} {key}"] += int(float(match["value"]))
    return writes


def _timestamp(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def writer_of(user_agent: str) -> str:
    """A short name for the client that sent a request (its user agent)."""
    if user_agent.startswith("kcontrol-manager/"):
        return "kcontrol-manager"
    if user_agent.startswith("kube-controller-manager/"):
        return "kube-controller-manager/" + user_agent.rsplit("/", 1)[-1]
    return user_agent.split("/", 1)[0] or "(none)"


def is_controller_under_test(impl: str, writer: str) -> bool:
    if impl == KCONTROL:
        return writer == "kcontrol-manager"
    return writer in (
        "kube-controller-manager/deployment-controller",
        "kube-controller-manager/replicaset-controller",
    )


@dataclass
class AuditWrite:
    at: float
    writer: str
    key: str  # "VERB resource"
    code: int


def read_audit(path: Path, start: int, end: int) -> list[AuditWrite]:
    with path.open("rb") as log:
        log.seek(start)
        data = log.read(end - start)
    writes = []
    for line in data.splitlines():
        if not line.strip():
            continue
        event = json.loads(line)
        if event.get("stage") != "ResponseComplete":
            continue
        verb = AUDIT_VERBS.get(event.get("verb", ""))
        if verb is None:
            continue
        ref = event.get("objectRef") or {}
        key = resource_key(
            ref.get("apiGroup", ""), ref.get("resource", ""), ref.get("subresource", "")
        )
        writes.append(
            AuditWrite(
                at=_timestamp(event["requestReceivedTimestamp"]),
                writer=writer_of(event.get("userAgent", "")),
                key=f"{verb} {key}",
                code=int((event.get("responseStatus") or {}).get("code", 0)),
            )
        )
    return writes


class AuditTail:
    """Follows the audit log to tell when the controller under test has stopped writing."""

    def __init__(self, path: Path, offset: int, impl: str) -> None:
        self.path = path
        self.offset = offset
        self.impl = impl
        self.last_write = 0.0  # wall-clock time of its last write seen

    def poll(self) -> None:
        end = self.path.stat().st_size
        with self.path.open("rb") as log:
            log.seek(self.offset)
            data = log.read(end - self.offset)
        complete = data.rfind(b"\n") + 1  # a line still being written waits for next time
        self.offset += complete
        for line in data[:complete].splitlines():
            event = json.loads(line)
            if event.get("stage") == "ResponseComplete" and is_controller_under_test(
                self.impl, writer_of(event.get("userAgent", ""))
            ):
                self.last_write = max(
                    self.last_write, _timestamp(event["requestReceivedTimestamp"])
                )

    async def wait_quiet(self, quiet: float, longest: float) -> float:
        """Wait until the controller has written nothing for ``quiet`` seconds (at most
        ``longest``); the time of its last write."""
        since = time.time()
        deadline = since + longest
        while time.time() < deadline:
            self.poll()
            if time.time() - max(self.last_write, since) >= quiet:
                break
            await asyncio.sleep(0.25)
        return self.last_write


# --------------------------------------------------------------------------- objects


IMAGES = {"create": "registry.example/app:1", "update": "registry.example/app:2"}
"""The container image each phase writes (``update`` changes the pod template)."""


def deployment(name: str, replicas: int, image: str = IMAGES["create"]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"bench": "rollout"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
        },
    }


TEMPLATE_PATCH = {
    "spec": {"template": {"spec": {"containers": [{"name": "app", "image": IMAGES["update"]}]}}}
}


def is_complete(d: dict[str, Any], generation: int) -> bool:
    metadata = d["metadata"]
    status = d.get("status") or {}
    replicas: int = d["spec"].get("replicas", 1)
    current: int = metadata.get("generation", 0)
    return bool(
        current >= generation
        and status.get("observedGeneration", 0) >= current
        and status.get("updatedReplicas", 0) == replicas
        and status.get("replicas", 0) == replicas
        and status.get("availableReplicas", 0) == replicas
    )


# --------------------------------------------------------------------------- controllers


def concurrent_syncs_flags(workers: int) -> list[str]:
    """``--concurrent-syncs``: both controllers' workers on both sides (0: the managers'
    default, 5)."""
    if not workers:
        return []
    return [f"--concurrent-deployment-syncs={workers}", f"--concurrent-replicaset-syncs={workers}"]


def controller_env(impl: str, kcm_gomaxprocs: int) -> dict[str, str] | None:
    """The environment of a controller process: this one's, with ``GOMAXPROCS`` set for
    kube-controller-manager when ``kcm_gomaxprocs`` is not 0 (``--kcm-gomaxprocs``)."""
    if impl != KCM or not kcm_gomaxprocs:
        return None
    return {**os.environ, "GOMAXPROCS": str(kcm_gomaxprocs)}


class ControllerProcess:
    """The controller manager under test, as its own process with its log in ``directory``."""

    def __init__(
        self,
        impl: str,
        cluster: Cluster,
        limit: Limit,
        directory: Path,
        tag: str,
        extra: Sequence[str] = (),
    ):
        """``extra``: flags both managers take alike, appended to either command line."""
        self.impl = impl
        self.port = free_port()
        self.log = directory / f"{tag}.log"
        kubeconfig = str(cluster.kubeconfig_path)
        if impl == KCM:
            self.argv = [
                str(find_binary("kube-controller-manager")),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.port}",
                f"--cert-dir={directory / (tag + '-certs')}",
                f"--controllers={CONTROLLERS}",
                *limit.kcm_flags(),
                *extra,
            ]
            self.health_url = f"https://127.0.0.1:{self.port}/healthz"
            self.metrics_url = f"https://127.0.0.1:{self.port}/metrics"
        else:
            self.argv = [
                str(kcontrol_manager()),
                f"--kubeconfig={kubeconfig}",
                "--leader-elect=false",
                f"--controllers={CONTROLLERS}",
                *limit.kcontrol_flags(),
                "--bind-address=127.0.0.1",
                "--secure-port=0",  # no HTTPS port (its default, 10263, may be taken)
                f"--metrics-port={self.port}",
                *extra,
            ]
            self.health_url = f"http://127.0.0.1:{self.port}/readyz"
            self.metrics_url = f"http://127.0.0.1:{self.port}/metrics"
        self.popen: subprocess.Popen[bytes] | None = None
        self.profile: Path | None = None
        """Where to write py-spy's collapsed stacks of a kcontrol run (set before start())."""
        self.env: dict[str, str] | None = None
        """The process's environment, if not this one's (set before start())."""
        self._spy: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    async def start(self) -> None:
        """Start the process and wait (at most a minute) until it says it is ready."""
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(  # noqa: ASYNC220 - returns at once
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
            )
        deadline = time.monotonic() + 60.0
        connector = aiohttp.TCPConnector(ssl=False)  # "are you up?" only
        async with aiohttp.ClientSession(connector=connector) as session:
            while time.monotonic() < deadline:
                if self.popen.poll() is not None:
                    break
                with contextlib.suppress(aiohttp.ClientError):
                    async with session.get(self.health_url) as response:
                        if response.status == 200:
                            self._start_profile()
                            return
                await asyncio.sleep(0.1)
        tail = self.log.read_text(errors="replace").splitlines()[-30:]
        self.stop()
        raise RuntimeError(f"{self.impl} not ready; log tail:\n" + "\n".join(tail))

    def _start_profile(self) -> None:
        """Attach py-spy (sampling without pausing the process, so its CPU-seconds stay the
        controller's own) when a profile was asked for; KCM is never profiled."""
        if self.profile is None or self.impl == KCM:
            return
        spy = shutil.which("py-spy") or str(ROOT / ".venv" / "bin" / "py-spy")
        self.profile.parent.mkdir(parents=True, exist_ok=True)
        self._spy = subprocess.Popen(
            [
                *(spy, "record", "--pid", str(self.pid), "--nonblocking", "--rate", "250"),
                *("--format", "raw", "--output", str(self.profile)),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def stop(self) -> None:
        if self._spy is not None:  # py-spy writes its file on SIGINT
            self._spy.send_signal(signal.SIGINT)
            try:
                self._spy.wait(30)
            except subprocess.TimeoutExpired:
                self._spy.kill()
            self._spy = None
        if self.popen is None or self.popen.poll() is not None:
            return
        self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(20)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()


# --------------------------------------------------------------------------- one run


@dataclass
class Phase:
    wall: float = 0.0
    p50: float = 0.0
    cpu: float = 0.0
    plane_cpu: float = 0.0
    completed: bool = True
    lag: float = 0.0  # from completion to the controller's last write of the phase
    writes: dict[str, int] = field(default_factory=dict)  # controller under test, by key
    errors: dict[str, int] = field(default_factory=dict)  # its non-2xx answers, by key:code
    others: dict[str, int] = field(default_factory=dict)  # every other writer, by writer
    metric_writes: int = 0  # apiserver_request_total, every writer
    audit_writes: int = 0  # the audit log, every writer (same window)


@dataclass
class Run:
    size: str
    limit: str
    impl: str
    index: int
    started: str
    load: float
    start_cpu: float = 0.0
    peak_rss_kb: int = 0
    phases: dict[str, Phase] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)  # its own client's, by method
    events_dropped: int = -1  # kcontrol_events_dropped_total (kcontrol only)
    events_dropped_by_reason: dict[str, int] = field(default_factory=dict)
    # Per workqueue (QUEUES), over the process's life: see controller_timings.
    queues: dict[str, dict[str, float]] = field(default_factory=dict)
    process_cpu: float = -1.0  # its process_cpu_seconds_total when scraped (whole life)
    note: str = ""
    # kwok's seconds from a pod's start to Ready on the run's cluster; runs dumped before it
    # was recorded load with the default they were made with, 1 s (`--merge` of an older
    # dump of pods Ready at once would show them as 1 s: render those from their own files)
    ready_delay: float = 1.0


def row_start(size: str, limit: str, delay: float) -> str:
    """The first cells of a table row: size, client limit, pod timing."""
    return f"| {size} | {limit} | {ready_label(delay)}"


async def scrape_controller(controller: ControllerProcess, token: str) -> str:
    """The text of the controller process's ``/metrics`` (KCM's self-signed HTTPS port or
    kcontrol-manager's plain one), read with the administrator's ``token``."""
    connector = aiohttp.TCPConnector(ssl=False)  # KCM's self-signed serving certificate
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        aiohttp.ClientSession(connector=connector, headers=headers) as session,
        session.get(controller.metrics_url) as response,
    ):
        return await response.text()


def controller_requests(text: str) -> tuple[Counter[str], Counter[str]]:
    """From a controller's metrics: its ``rest_client_requests_total`` by method, and the
    events its recorder dropped (``kcontrol_events_dropped_total``) by reason."""
    requests: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    for line in text.splitlines():
        name, _, rest = line.partition("{")
        if name not in ("rest_client_requests_total", "kcontrol_events_dropped_total"):
            continue
        labels, _, value = rest.rpartition("} ")
        if name == "kcontrol_events_dropped_total":
            dropped[dict(_LABEL.findall(labels)).get("reason", "?")] += int(float(value))
        else:
            requests[dict(_LABEL.findall(labels)).get("method", "?")] += int(float(value))
    return requests, dropped


_QUEUE_HISTOGRAMS = {
    "workqueue_queue_duration_seconds": "queue_wait",
    "workqueue_work_duration_seconds": "work",
}


def controller_timings(
    text: str, queue: str, *, extra: Mapping[str, str] | None = None, stale_prefix: str = ""
) -> dict[str, float]:
    """From a controller's ``/metrics`` text: how many keys its ``queue`` handed to workers
    and how long they took (``work_count``, ``work_sum``: ``workqueue_work_duration_seconds``),
    how long they waited (``queue_wait_*``), sums in seconds; and syncs put off because the
    informers had not seen the controller's own writes yet (``stale_skips``, where the
    manager exports a ``*_stale_sync_skips_total`` whose name starts with
    ``stale_prefix``); over the process's life. ``extra`` adds histograms read whatever
    their labels, by name, each under its own key (``{"<name>": "sync"}``: ``sync_count``,
    ``sync_sum``)."""
    histograms = {**_QUEUE_HISTOGRAMS, **(extra or {})}
    timings: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        series, _, value = line.rpartition(" ")
        name, _, labels = series.partition("{")
        if name.endswith("_stale_sync_skips_total") and name.startswith(stale_prefix):
            timings["stale_skips"] = timings.get("stale_skips", 0.0) + float(value)
            continue
        for suffix in ("_count", "_sum"):
            base = name.removesuffix(suffix)
            if base == name or base not in histograms:
                continue
            if base in _QUEUE_HISTOGRAMS and dict(_LABEL.findall(labels)).get("name") != queue:
                continue
            key = f"{histograms[base]}{suffix}"
            timings[key] = timings.get(key, 0.0) + float(value)
    return timings


def process_cpu_seconds(text: str) -> float | None:
    """The process's own ``process_cpu_seconds_total`` in a ``/metrics`` text (both managers
    export it), or None."""
    for line in text.splitlines():
        if line.startswith("process_cpu_seconds_total "):
            return float(line.rpartition(" ")[2])
    return None


class Bench:
    def __init__(self, cluster: Cluster, audit_log: Path, directory: Path, args: Any):
        self.cluster = cluster
        self.audit_log = audit_log
        self.directory = directory
        self.args = args
        self.apiserver_pid = cluster._apiserver.popen.pid  # type: ignore[union-attr]
        self.etcd_pid = cluster._etcd.popen.pid  # type: ignore[union-attr]

    def plane_cpu(self) -> float:
        return proc_cpu(self.apiserver_pid) + proc_cpu(self.etcd_pid)

    async def run(self, size: Size, limit: Limit, impl: str, index: int) -> Run:
        tag = f"{size.label}-{limit.label.replace(':', '-')}-{impl}-{index}"
        namespace = f"rollout-{tag}".replace(".", "-")
        result = Run(
            size=size.label,
            limit=limit.label,
            impl=impl,
            index=index,
            started=datetime.datetime.now(datetime.UTC).strftime("%H:%M:%S"),
            load=load_average(),
            ready_delay=self.cluster.pod_ready_delay,
        )
        config = await load_config(kubeconfig=str(self.cluster.kubeconfig_path))
        connector = aiohttp.TCPConnector(ssl=self.cluster.ssl_context())
        headers = {"Authorization": f"Bearer {self.cluster.token()}"}
        async with (
            ApiClient(config, qps=0, user_agent=BENCH_USER_AGENT) as client,
            aiohttp.ClientSession(connector=connector, headers=headers) as metrics,
        ):
            await client.create(NAMESPACES, {"metadata": {"name": namespace}})
            await self.cluster.wait_for_service_account(namespace)
            controller = ControllerProcess(
                impl,
                self.cluster,
                limit,
                self.directory,
                tag,
                concurrent_syncs_flags(self.args.concurrent_syncs),
            )
            if self.args.profile:
                # one directory for every cluster of the invocation: the timing tells them apart
                ready = ready_label(self.cluster.pod_ready_delay).replace(" ", "-")
                controller.profile = Path(self.args.profile) / f"{tag}-ready-{ready}.txt"
            controller.env = controller_env(impl, self.args.kcm_gomaxprocs)
            await controller.start()
            try:
                await asyncio.sleep(SETTLE_SECONDS)
                result.start_cpu = proc_cpu(controller.pid)
                await self._phases(size, namespace, client, metrics, controller, result)
                result.peak_rss_kb = proc_status_kb(controller.pid, "VmHWM:")
                await self._controller_metrics(controller, result)
            finally:
                controller.stop()
            await client.delete(NAMESPACES, namespace)
            await self._wait_gone(client, namespace)
        return result

    async def _phases(
        self,
        size: Size,
        namespace: str,
        client: ApiClient,
        metrics: aiohttp.ClientSession,
        controller: ControllerProcess,
        result: Run,
    ) -> None:
        names = [f"d-{i:04d}" for i in range(size.deployments)]
        factory = SharedInformerFactory(client, namespace=namespace)
        lister = factory.for_resource(DEPLOYMENTS).lister()
        semaphore = asyncio.Semaphore(CREATE_CONCURRENCY)
        generations: dict[str, int] = {}

        async def create(name: str) -> None:
            async with semaphore:
                created = await client.create(
                    DEPLOYMENTS, deployment(name, size.replicas), namespace=namespace
                )
                generations[name] = created["metadata"]["generation"]

        async def patch(name: str) -> None:
            async with semaphore:
                patched = await client.patch(
                    DEPLOYMENTS,
                    name,
                    TEMPLATE_PATCH,
                    namespace=namespace,
                    patch_type=PatchType.MERGE,
                )
                generations[name] = patched["metadata"]["generation"]

        async def wait_complete(start: float) -> tuple[float, float, bool]:
            done: dict[str, float] = {}
            deadline = time.monotonic() + self.args.phase_timeout
            while len(done) < len(names):
                now = time.monotonic()
                for d in lister.list(namespace):
                    name = d["metadata"]["name"]
                    if name in done or name not in generations:
                        continue
                    if is_complete(d, generations[name]):
                        done[name] = now - start
                if now > deadline:
                    return now - start, statistics.median(done.values() or [0.0]), False
                await asyncio.sleep(0.1)
            return max(done.values()), statistics.median(done.values()), True

        boundaries: list[float] = []  # wall-clock: phase starts, then the end of the last
        counters: list[Counter[str]] = []
        audit_start = self.audit_log.stat().st_size
        watcher = AuditTail(self.audit_log, audit_start, result.impl)
        cpus: list[float] = []
        plane: list[float] = []

        def mark() -> None:
            boundaries.append(time.time())
            cpus.append(proc_cpu(controller.pid))
            plane.append(self.plane_cpu())

        async def apply(image: str) -> None:
            """``kubectl apply`` of every Deployment in one file, one request after another
            (``--writer kubectl``), then their generations read back."""
            manifest = self.directory / f"{namespace}-{image.rsplit(':', 1)[-1]}.json"
            items = [deployment(name, size.replicas, image) for name in names]
            manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
            process = await asyncio.create_subprocess_exec(
                str(find_binary("kubectl")),
                f"--kubeconfig={self.cluster.kubeconfig_path}",
                f"--namespace={namespace}",
                "apply",
                f"--filename={manifest}",
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            _, stderr = await process.communicate()
            if process.returncode:
                raise RuntimeError(f"kubectl apply failed: {stderr.decode()}")
            listed = await client.list(DEPLOYMENTS, namespace=namespace)
            generations.update(
                (d["metadata"]["name"], d["metadata"]["generation"]) for d in listed["items"]
            )

        async def write(phase: str) -> None:
            if self.args.writer == "kubectl":
                await apply(IMAGES[phase])
            else:
                action = create if phase == "create" else patch
                await asyncio.gather(*(action(name) for name in names))

        async with asyncio.TaskGroup() as tasks:
            informer_task = tasks.create_task(factory.run())
            await factory.wait_for_cache_sync()
            for phase in PHASES:
                counters.append(await scrape_writes(metrics, self.cluster.host))
                mark()
                start = time.monotonic()
                generations.clear()  # a Deployment counts once its write of this phase is in
                await write(phase)
                wall, p50, completed = await wait_complete(start)
                completed_at = time.time()
                last_write = await watcher.wait_quiet(QUIET_SECONDS, QUIET_TIMEOUT)
                result.phases[phase] = Phase(
                    wall=wall,
                    p50=p50,
                    completed=completed,
                    lag=max(0.0, last_write - completed_at),
                )
                if not completed:
                    result.note += f"{phase} timed out after {wall:.0f} s; "
            counters.append(await scrape_writes(metrics, self.cluster.host))
            mark()
            informer_task.cancel()
        audit_end = self.audit_log.stat().st_size

        audit = read_audit(self.audit_log, audit_start, audit_end)
        for i, phase in enumerate(PHASES):
            p = result.phases[phase]
            p.cpu = cpus[i + 1] - cpus[i]
            p.plane_cpu = plane[i + 1] - plane[i]
            p.metric_writes = sum((counters[i + 1] - counters[i]).values())
            lo, hi = boundaries[i], boundaries[i + 1]
            writes: Counter[str] = Counter()
            errors: Counter[str] = Counter()
            others: Counter[str] = Counter()
            for w in audit:
                if not lo <= w.at < hi:
                    continue
                p.audit_writes += 1
                if is_controller_under_test(result.impl, w.writer):
                    writes[w.key] += 1
                    if not 200 <= w.code < 300:
                        errors[f"{w.key} {w.code}"] += 1
                else:
                    others[w.writer] += 1
            p.writes, p.errors, p.others = dict(writes), dict(errors), dict(others)

    async def _controller_metrics(self, controller: ControllerProcess, result: Run) -> None:
        """The controller's own ``rest_client_requests_total`` by method (its whole life,
        start-up included) and, for kcontrol, the events its recorder dropped."""
        text = await scrape_controller(controller, self.cluster.token())
        requests, dropped = controller_requests(text)
        result.requests = dict(requests)
        result.queues = {queue: controller_timings(text, queue) for queue in QUEUES}
        cpu = process_cpu_seconds(text)
        result.process_cpu = -1.0 if cpu is None else cpu
        if controller.impl == KCONTROL:
            result.events_dropped = sum(dropped.values())
            result.events_dropped_by_reason = dict(dropped)

    async def _wait_gone(self, client: ApiClient, namespace: str) -> None:
        deadline = time.monotonic() + self.args.phase_timeout
        while time.monotonic() < deadline:
            try:
                await client.get(NAMESPACES, namespace)
            except NotFound:
                return
            await asyncio.sleep(0.5)
        raise RuntimeError(f"namespace {namespace} not gone in {self.args.phase_timeout} s")


# --------------------------------------------------------------------------- orchestration


async def run_size(
    size: Size, limits: list[Limit], args: Any, results: list[Run], ready_delay: float
) -> None:
    directory = Path(tempfile.mkdtemp(prefix="kcontrol-rollout-"))
    policy = directory / "audit-policy.yaml"
    policy.write_text(AUDIT_POLICY)
    audit_log = directory / "audit.log"
    nodes = math.ceil(2 * size.deployments * size.replicas / PODS_PER_NODE) + 1
    cluster = Cluster(
        nodes=nodes,
        pod_ready_delay=ready_delay,
        extra_apiserver_args=[
            f"--audit-policy-file={policy}",
            f"--audit-log-path={audit_log}",
            "--audit-log-format=json",
            "--audit-log-maxsize=0",
        ],
    )
    print(
        f"# {size.label}, pods Ready {ready_label(ready_delay)}: starting a cluster with "
        f"{nodes} kwok nodes ({directory})",
        flush=True,
    )
    async with cluster:
        bench = Bench(cluster, audit_log, directory, args)
        # A fresh apiserver, etcd and kwok are slower on their first rollouts: one small
        # unrecorded round with each side first, so neither run 0 pays for it.
        warmup = Size(min(size.deployments, 10), size.replicas)
        for impl in IMPLS:
            await bench.run(warmup, limits[0], impl, -1)
        print(f"# {size.label}: warmed up ({warmup.label} with each side)", flush=True)
        for limit in limits:
            for index in range(args.runs):
                for impl in IMPLS:
                    t0 = time.monotonic()
                    run = await bench.run(size, limit, impl, index)
                    results.append(run)
                    if args.dump:
                        dump(args.dump, results)
                    print(
                        f"{size.label} {limit.label:>11} {ready_label(ready_delay):>7} "
                        f"{impl:>8} run {index}: "
                        + "  ".join(
                            f"{name} {p.wall:.1f}s cpu {p.cpu:.1f}s writes {sum(p.writes.values())}"
                            for name, p in run.phases.items()
                        )
                        + f"  rss {run.peak_rss_kb / 1024:.0f}MB load {run.load:.2f}"
                        f"  ({time.monotonic() - t0:.0f}s with teardown) {run.note}",
                        flush=True,
                    )
    if not args.keep_logs:
        shutil.rmtree(directory, ignore_errors=True)
    else:
        print(f"# logs kept in {directory}", flush=True)


def dump(path: str, results: list[Run]) -> None:
    Path(path).write_text(json.dumps([dataclasses.asdict(r) for r in results], indent=1))


def load(path: str) -> list[Run]:
    runs = []
    for raw in json.loads(Path(path).read_text()):
        phases = {name: Phase(**p) for name, p in raw.pop("phases").items()}
        runs.append(Run(**raw, phases=phases))
    return runs


# --------------------------------------------------------------------------- report


Group = tuple[str, str, float]
"""Runs measured alike: size, client limit, pod timing."""


def grouped(results: list[Run]) -> dict[Group, dict[str, list[Run]]]:
    groups: dict[Group, dict[str, list[Run]]] = {}
    for r in results:
        groups.setdefault((r.size, r.limit, r.ready_delay), {}).setdefault(r.impl, []).append(r)
    return groups


@dataclass(frozen=True)
class PhaseMedians:
    """One side's medians of one phase over the runs of one cell (``NaN`` when none)."""

    runs: int
    wall: float
    cpu: float
    writes: float
    """Writes per Deployment."""
    plane_cpu: float


def phase_medians(runs: list[Run], phase: str, size: str) -> PhaseMedians:
    """The medians of ``runs`` (one side's, one cell's) in ``phase``."""
    n = Size.parse(size).deployments
    phases = [r.phases[phase] for r in runs if phase in r.phases]
    return PhaseMedians(
        len(phases),
        median([p.wall for p in phases]),
        median([p.cpu for p in phases]),
        median([sum(p.writes.values()) / n for p in phases]),
        median([p.plane_cpu for p in phases]),
    )


def _worse(ratios: dict[float, float]) -> str:
    """The largest of ``ratios`` (pod timing -> kcontrol/KCM) with the timing that gave it."""
    measured = {delay: value for delay, value in ratios.items() if not math.isnan(value)}
    if not measured:
        return "-"
    delay = max(measured, key=lambda d: measured[d])
    return f"{measured[delay]:.2f} ({ready_label(delay)})"


def _peak_rss_mb(run: Run) -> float:
    return run.peak_rss_kb / 1024


def _start_cpu(run: Run) -> float:
    return run.start_cpu


def worse_of_timings(results: list[Run]) -> list[str]:
    """Per cell (size, client limit), the worse of its pod timings' kcontrol/KCM ratios -
    time, CPU and writes by phase, peak RSS and start-up CPU: the figures to publish, since
    a figure that holds under one cluster timing only is not one (issue 37)."""
    cells: dict[tuple[str, str], dict[float, dict[str, list[Run]]]] = {}
    for (size, limit, delay), by_impl in grouped(results).items():
        cells.setdefault((size, limit), {})[delay] = by_impl
    out = [
        "## Per cell, the worse of its pod timings (kcontrol/KCM, the timing in brackets)\n",
        "Issue 37's targets: time <= 1.0, CPU <= 1.0, writes <= 0.9, peak RSS <= 0.6, "
        "start-up <= 1.5.\n",
        "| N x R | client limit | phase | time | CPU | writes |",
        "|---|---|---|--:|--:|--:|",
    ]
    for (size, limit), timings in cells.items():
        for phase in PHASES:
            by_delay = {
                delay: [phase_medians(by_impl.get(impl, []), phase, size) for impl in IMPLS]
                for delay, by_impl in timings.items()
            }
            columns = [
                _worse(
                    {d: ratio_value(getattr(c, f), getattr(k, f)) for d, (k, c) in by_delay.items()}
                )
                for f in ("wall", "cpu", "writes")
            ]
            out.append(f"| {size} | {limit} | {phase} | " + " | ".join(columns) + " |")
    out += ["", "| N x R | client limit | peak RSS | start-up CPU |", "|---|---|--:|--:|"]
    for (size, limit), timings in cells.items():
        columns = []
        for measure in (_peak_rss_mb, _start_cpu):
            medians = {
                delay: [median([measure(r) for r in by_impl.get(impl, [])]) for impl in IMPLS]
                for delay, by_impl in timings.items()
            }
            columns.append(_worse({d: ratio_value(c, k) for d, (k, c) in medians.items()}))
        out.append(f"| {size} | {limit} | " + " | ".join(columns) + " |")
    out.append("")
    return out


def report(results: list[Run]) -> str:
    out: list[str] = []
    groups = grouped(results)

    out.extend(worse_of_timings(results))
    out.append("## Medians (kcontrol/KCM ratios of the medians)\n")
    out.append(
        "| N x R | client limit | pods Ready | phase | runs | KCM wall s | kcontrol wall s | ratio "
        "| KCM CPU s | kcontrol CPU s | ratio | KCM writes/rollout | kcontrol writes/rollout "
        "| ratio | apiserver+etcd CPU s KCM / kcontrol |"
    )
    out.append("|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for (size, limit, delay), by_impl in groups.items():
        for phase in PHASES:
            k, c = (phase_medians(by_impl.get(impl, []), phase, size) for impl in IMPLS)
            out.append(
                f"{row_start(size, limit, delay)} | {phase} | {k.runs}+{c.runs} "
                f"| {k.wall:.1f} | {c.wall:.1f} | {ratio(c.wall, k.wall)} "
                f"| {k.cpu:.2f} | {c.cpu:.2f} | {ratio(c.cpu, k.cpu)} "
                f"| {k.writes:.2f} | {c.writes:.2f} | {ratio(c.writes, k.writes)} "
                f"| {k.plane_cpu:.1f} / {c.plane_cpu:.1f} |"
            )
    out.append("")
    out.append(
        "| N x R | client limit | pods Ready | KCM peak RSS MB | kcontrol peak RSS MB | ratio "
        "| KCM start CPU s | kcontrol start CPU s |"
    )
    out.append("|---|---|---|--:|--:|--:|--:|--:|")
    for (size, limit, delay), by_impl in groups.items():
        rss = {i: median([_peak_rss_mb(r) for r in by_impl.get(i, [])]) for i in IMPLS}
        start = {i: median([_start_cpu(r) for r in by_impl.get(i, [])]) for i in IMPLS}
        out.append(
            f"{row_start(size, limit, delay)} | {rss[KCM]:.0f} | {rss[KCONTROL]:.0f} "
            f"| {ratio(rss[KCONTROL], rss[KCM])} | {start[KCM]:.2f} | {start[KCONTROL]:.2f} |"
        )
    out.append("")

    out.append("## API writes per rollout by verb and resource (medians)\n")
    for (size, limit, delay), by_impl in groups.items():
        n = int(size.split("x")[0])
        keys = sorted(
            {
                k
                for runs in by_impl.values()
                for r in runs
                for p in r.phases.values()
                for k in p.writes
            }
        )
        out.append(
            f"{size}, client limit {limit}, pods Ready {ready_label(delay)}: "
            "writes per Deployment\n"
        )
        out.append(
            "| verb resource | KCM create | kcontrol create | KCM update | kcontrol update |"
        )
        out.append("|---|--:|--:|--:|--:|")
        for key in [*keys, "total", "non-2xx"]:
            cells = []
            for phase in PHASES:
                for impl in IMPLS:
                    values = []
                    for r in by_impl.get(impl, []):
                        p = r.phases.get(phase)
                        if p is None:
                            continue
                        if key == "total":
                            values.append(sum(p.writes.values()) / n)
                        elif key == "non-2xx":
                            values.append(sum(p.errors.values()) / n)
                        else:
                            values.append(p.writes.get(key, 0) / n)
                    cells.append(f"{median(values):.2f}")
            out.append(f"| {key} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def raw_table(results: list[Run]) -> str:
    out = [
        "| N x R | limit | pods Ready | side | run | started UTC | load | phase | wall s | p50 s "
        "| lag s | CPU s | apiserver+etcd CPU s | writes | non-2xx | other writers "
        "| all writers (metrics / audit) | peak RSS MB | start CPU s |",
        "|---|---|---|---|--:|---|--:|---|--:|--:|--:|--:|--:|--:|--:|---|---|--:|--:|",
    ]
    for r in results:
        for phase, p in r.phases.items():
            others = ", ".join(f"{w} {c}" for w, c in sorted(p.others.items(), key=lambda x: -x[1]))
            errors = ", ".join(f"{k} x{c}" for k, c in sorted(p.errors.items())) or "0"
            out.append(
                f"{row_start(r.size, r.limit, r.ready_delay)} | {r.impl} | {r.index} | {r.started} | {r.load:.2f} "
                f"| {phase}{'' if p.completed else ' (TIMED OUT)'} | {p.wall:.1f} | {p.p50:.1f} | {p.lag:.1f} "
                f"| {p.cpu:.2f} | {p.plane_cpu:.1f} | {sum(p.writes.values())} | {errors} "
                f"| {others} | {p.metric_writes} / {p.audit_writes} "
                f"| {r.peak_rss_kb / 1024:.0f} | {r.start_cpu:.2f} |"
            )
    out.append("")
    out.append(
        "Requests the controller process's own client sent over its whole life (its "
        "`rest_client_requests_total`, start-up included), and the events kcontrol's "
        "recorder dropped (`kcontrol_events_dropped_total`; KCM has no such counter):"
    )
    out.append("")
    out.append("| N x R | limit | pods Ready | side | run | requests by method | events dropped |")
    out.append("|---|---|---|---|--:|---|--:|")
    for r in results:
        if r.requests:
            methods = ", ".join(f"{m} {c}" for m, c in sorted(r.requests.items()))
            dropped = "-" if r.events_dropped < 0 else str(r.events_dropped)
            reasons = ", ".join(
                f"{reason} {count}"
                for reason, count in sorted(r.events_dropped_by_reason.items())
                if count
            )
            if reasons:
                dropped += f" ({reasons})"
            out.append(
                f"{row_start(r.size, r.limit, r.ready_delay)} | {r.impl} | {r.index} | {methods} | {dropped} |"
            )
    out += syncs_table(results)
    notes = [
        f"{r.size} {r.limit} {ready_label(r.ready_delay)} {r.impl} {r.index}: {r.note}"
        for r in results
        if r.note
    ]
    if notes:
        out.append("")
        out.append("Notes: " + "; ".join(notes))
    return "\n".join(out)


def syncs_table(results: list[Run]) -> list[str]:
    """Per run: the keys each controller's queue handed to its workers (its syncs), how
    long they waited in the queue and were worked on, and the process's CPU-seconds per
    sync - all over the process's life, from its own metrics scraped at the end; runs
    stored before these were recorded are left out."""
    rows = [r for r in results if r.queues and r.process_cpu >= 0]
    if not rows:
        return []
    names = " / ".join(QUEUES)
    out = [
        "",
        f"Syncs ({names}: keys handed to workers, `workqueue_work_duration_seconds_count`), "
        "their mean wait in the queue and mean work (wall ms), the syncs put off because "
        "the cache had not seen the controller's own write (`*_stale_sync_skips_total`), "
        "and the process's `process_cpu_seconds_total` per sync - each over the process's "
        "life, scraped at its end:",
        "",
        f"| N x R | limit | pods Ready | side | run | syncs {names} | queue wait ms | work ms "
        "| stale skips | process CPU s | CPU ms per sync |",
        "|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        counts = [r.queues[q].get("work_count", 0.0) for q in QUEUES]
        waits = [_mean_ms(r.queues[q], "queue_wait") for q in QUEUES]
        works = [_mean_ms(r.queues[q], "work") for q in QUEUES]
        skips = r.queues[QUEUES[0]].get("stale_skips")
        syncs = sum(counts)
        per_sync = f"{1000 * r.process_cpu / syncs:.3f}" if syncs else "-"
        out.append(
            f"{row_start(r.size, r.limit, r.ready_delay)} | {r.impl} | {r.index} "
            f"| {' / '.join(f'{c:.0f}' for c in counts)} "
            f"| {' / '.join(waits)} | {' / '.join(works)} "
            f"| {'-' if skips is None else f'{skips:.0f}'} | {r.process_cpu:.2f} | {per_sync} |"
        )
    return out


def _mean_ms(timings: dict[str, float], histogram: str) -> str:
    count = timings.get(f"{histogram}_count", 0.0)
    return f"{1000 * timings.get(f'{histogram}_sum', 0.0) / count:.1f}" if count else "-"


IMPL_NAMES = {KCM: "KCM", KCONTROL: "kcontrol"}
"""Implementation names in the results file (bench/_results.py), as the tables name them."""


def results_points(results: list[Run]) -> list[dict[str, Any]]:
    """One point per (size, client limit, pod timing, implementation, phase): the medians
    over its runs, as in :func:`report` (writes per rollout = the phase's writes / N)."""
    points = []
    for (size, limit, delay), by_impl in grouped(results).items():
        parsed, bound = Size.parse(size), Limit.parse(limit)
        n = parsed.deployments
        for impl in IMPLS:
            impl_runs = by_impl.get(impl, [])
            for phase in PHASES:
                runs = [r for r in impl_runs if phase in r.phases]
                if not runs:
                    continue
                phases = [r.phases[phase] for r in runs]
                keys = sorted({k for p in phases for k in p.writes})
                dropped = [r.events_dropped for r in runs if r.events_dropped >= 0]
                points.append(
                    {
                        "implementation": IMPL_NAMES[impl],
                        "size": size,
                        "deployments": n,
                        "replicas": parsed.replicas,
                        "client_limit": limit,
                        "qps": bound.qps,
                        "burst": bound.burst if bound.qps is not None else None,
                        "pod_ready_delay_seconds": delay,
                        "phase": phase,
                        "runs": len(runs),
                        "completed_runs": sum(p.completed for p in phases),
                        "wall_seconds": median([p.wall for p in phases]),
                        "p50_seconds": median([p.p50 for p in phases]),
                        "cpu_seconds": median([p.cpu for p in phases]),
                        "apiserver_etcd_cpu_seconds": median([p.plane_cpu for p in phases]),
                        "writes_per_rollout": median([sum(p.writes.values()) / n for p in phases]),
                        "writes_per_rollout_by_key": {
                            k: median([p.writes.get(k, 0) / n for p in phases]) for k in keys
                        },
                        "non_2xx_per_rollout": median([sum(p.errors.values()) / n for p in phases]),
                        "peak_rss_mb": median([r.peak_rss_kb / 1024 for r in runs]),
                        "start_cpu_seconds": median([r.start_cpu for r in runs]),
                        "events_dropped": median([float(d) for d in dropped]) if dropped else None,
                    }
                )
    return points


def machine_notes(command: str) -> str:
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return "\n".join(
        [
            f"- Command: `{command}`",
            f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC (end of run); "
            f"commit {commit} (working tree as it was at the time)",
            f"- Machine: {os.cpu_count()} CPUs, shared with other work; Python "
            f"{platform.python_version()}; Kubernetes {K8S_VERSION} binaries from "
            "hack/build-k8s.sh (apiserver, etcd, scheduler, kube-controller-manager), kwok v0.8.0",
            f"- kcontrol-manager: `{kcontrol_manager().relative_to(ROOT)}`",
        ]
    )


async def main_async(args: Any) -> list[Run]:
    sizes = [Size.parse(s) for s in args.sizes.split(",") if s]
    limits = [Limit.parse(q) for q in args.qps.split(",") if q]
    delays = ready_delays(args.pod_ready_delay)
    results: list[Run] = []
    for path in args.merge or []:
        results.extend(load(path))
    if args.runs > 0:
        for size in sizes:
            for delay in delays:
                await run_size(size, limits, args, results, delay)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="50x3,200x5,1000x1")
    parser.add_argument("--qps", default="20:30,unthrottled")
    parser.add_argument("--runs", type=int, default=3)
    add_ready_delays(parser)
    parser.add_argument("--phase-timeout", type=float, default=900.0)
    parser.add_argument(
        "--writer",
        choices=("client", "kubectl"),
        default="client",
        help="how the Deployments are written: the benchmark's client, 16 requests in flight, "
        "or one `kubectl apply` of them all (one request after another, as a user would)",
    )
    parser.add_argument("--out", help="write the report (markdown) here")
    parser.add_argument("--json", help="write the results (bench/_results.py's format) here")
    parser.add_argument("--dump", help="write the raw runs as JSON here (after every run)")
    parser.add_argument("--merge", action="append", help="earlier --dump files to include")
    parser.add_argument(
        "--profile",
        help="directory for py-spy's collapsed stacks of each kcontrol run (figures of such "
        "runs are not for quoting: the sampler shares the cores)",
    )
    parser.add_argument("--keep-logs", action="store_true")
    parser.add_argument(
        "--kcm-gomaxprocs",
        type=int,
        default=0,
        help="run kube-controller-manager with GOMAXPROCS set to this (0: Go's default, every "
        "core); 1 shows how much of a difference in time is KCM's second core (kcontrol's "
        "controllers share one event loop) - a diagnosis, not how KCM runs",
    )
    parser.add_argument(
        "--concurrent-syncs",
        type=int,
        default=0,
        help="both managers' --concurrent-deployment-syncs and --concurrent-replicaset-syncs "
        "(0: their default, 5); fewer workers leave keys longer in the queue, where more "
        "events fold into one sync - a diagnosis, not how either manager runs",
    )
    args = parser.parse_args()
    started = datetime.datetime.now(datetime.UTC)
    results = asyncio.run(main_async(args))
    text = report(results)
    print(text)
    print(raw_table(results))
    if args.out:
        command = " ".join([".venv/bin/python", "bench/rollout.py", *sys.argv[1:]])
        Path(args.out).write_text(
            "# Rollout benchmark (generated)\n\n"
            + machine_notes(command)
            + "\n\n"
            + text
            + "\n\n## Raw runs\n\n"
            + raw_table(results)
            + "\n"
        )
    if args.json:
        write_results(
            args.json,
            "rollout",
            started=started,
            finished=datetime.datetime.now(datetime.UTC),
            machine={**machine_facts([r.load for r in results], go=False), "kwok": "v0.8.0"},
            command=" ".join([".venv/bin/python", "-m", "bench.rollout", *sys.argv[1:]]),
            parameters={
                "sizes": list(dict.fromkeys(r.size for r in results)),
                "client_limits": list(dict.fromkeys(r.limit for r in results)),
                "runs": args.runs,
                "pod_ready_delays_seconds": sorted({r.ready_delay for r in results}, reverse=True),
                "writer": args.writer,
                "phase_timeout_seconds": args.phase_timeout,
                "merged": args.merge or [],
            },
            points=results_points(results),
            runs=[dataclasses.asdict(r) for r in results],
        )


if __name__ == "__main__":
    main()

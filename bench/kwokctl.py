"""The rollout measured as issue 37's outside harness measured it: on a cluster made by kwok's
own ``kwokctl``, Deployments written with ``kubectl apply``, CPU read from ``/proc``.

Where bench/rollout.py builds its cluster with kcontrol's own pieces (kcontrol.envtest.cluster:
its kwok stages, its API server flags, an audit log), this one leaves that to kwokctl, so that
a figure which only holds on kcontrol's cluster shows up as a disagreement:

- ``kwokctl create cluster --runtime binary --disable-qps-limits`` from the binaries
  hack/build-k8s.sh built (``hack/build-k8s.sh cluster kwokctl``): etcd, kube-apiserver
  (priority and fairness off, no in-flight limits - kwokctl's defaults), kube-scheduler, kwok
  with its default "fast" stages (a bound pod is Running and Ready at once, a deleted one
  gone at once), kube-controller-manager with every controller but the deployment and
  replicaset ones; ``--audit`` adds bench/rollout's audit policy (writes at ``Metadata``);
  ``ceil(2*N*R/110) + 1`` nodes (kwok's default node holds 110 pods; a rollout surges);
- for each run, the sides alternating (KCM first in even runs), the side under test is
  started as its own process, ``--leader-elect=false --kube-api-qps=1000
  --kube-api-burst=2000``, its secure port off: ``kube-controller-manager
  --controllers=deployment-controller,replicaset-controller`` or ``kcontrol-manager`` (its
  default controllers are those two; ``.venv-runtime``'s, as the image installs it); 5 s later
  its CPU so far is its ``start CPU``;
- ``create``: N Deployments of R replicas written by one ``kubectl apply`` into ``default``
  (one request after another), until every one is complete (observedGeneration, replicas,
  updated and available at spec, polled every 0.2 s with a LIST); then 2 s idle;
- ``rollout``: the same ``kubectl apply`` with every pod template's image changed, until
  complete again; then 2 s idle;
- its CPU per phase (user + sys of every thread), peak RSS (``VmHWM``) at the end, the load
  average at the run's start; then it is stopped and the Deployments, ReplicaSets and pods
  deleted and waited for.

Quoted: each side's median, and kcontrol/KCM of the medians. ``work CPU`` is create +
rollout, idle tails included. Caveats: as every benchmark here, 2 shared cores; CPU-seconds
of one process rise with the machine's load (issue 37: kcontrol's more than KCM's), so the
load is printed beside each run, and only runs at similar loads compare.

Usage::

    .venv/bin/python -m bench.kwokctl --sizes 50x3,200x3 --runs 2 [--audit] \\
        [--out FILE.md] [--json FILE.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench._process import kcontrol_manager, load_average, proc_cpu, proc_status_kb
from bench._results import machine_facts, write_results
from bench._tables import median, ratio
from bench.rollout import AUDIT_POLICY, IMAGES, Size, deployment, is_complete
from kcontrol.client import DEPLOYMENTS, PODS, ApiClient, load_config
from kcontrol.envtest import find_binary

KCM = "kcm"
KCONTROL = "kcontrol"
CLUSTER = "kcontrol-bench"
NAMESPACE = "default"
PODS_PER_NODE = 110
START_SECONDS = 5.0
IDLE_SECONDS = 2.0
LIMITS = ["--kube-api-qps=1000", "--kube-api-burst=2000"]


@dataclass
class Run:
    size: str
    side: str
    run: int
    load: float
    start_cpu: float = 0.0
    create_s: float = 0.0
    create_cpu: float = 0.0
    rollout_s: float = 0.0
    rollout_cpu: float = 0.0
    peak_rss_mb: float = 0.0

    @property
    def work_cpu(self) -> float:
        return self.create_cpu + self.rollout_cpu


@dataclass
class KwokctlCluster:
    """A kwokctl cluster of kube-controller-manager without the two controllers under test."""

    workdir: Path
    nodes: int
    audit: bool
    kubeconfig: Path = field(init=False)

    def __post_init__(self) -> None:
        self.kubeconfig = self.workdir / "kubeconfig"

    def _kwokctl(self, *args: str) -> None:
        env = {**os.environ, "KWOK_WORKDIR": str(self.workdir / "kwok")}
        subprocess.run(
            [str(find_binary("kwokctl")), "--name", CLUSTER, *args],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def create(self) -> None:
        binaries = {
            "--etcd-binary": "etcd",
            "--kube-apiserver-binary": "kube-apiserver",
            "--kube-controller-manager-binary": "kube-controller-manager",
            "--kube-scheduler-binary": "kube-scheduler",
            "--kwok-controller-binary": "kwok",
        }
        args = [f"{flag}={find_binary(name)}" for flag, name in binaries.items()]
        if self.audit:
            policy = self.workdir / "audit-policy.yaml"
            policy.write_text(AUDIT_POLICY)
            args.append(f"--kube-audit-policy={policy}")
        self._kwokctl(
            "create",
            "cluster",
            "--runtime=binary",
            "--disable-qps-limits",
            "--extra-args=kube-controller-manager=controllers=*,"
            "-deployment-controller,-replicaset-controller",
            f"--kubeconfig={self.kubeconfig}",
            "--wait=2m",
            *args,
        )
        self._kwokctl("scale", "node", f"--replicas={self.nodes}")

    def delete(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._kwokctl("delete", "cluster")

    def kubectl(self, *args: str) -> None:
        subprocess.run(
            [str(find_binary("kubectl")), f"--kubeconfig={self.kubeconfig}", *args],
            check=True,
            stdout=subprocess.DEVNULL,
        )


def side_argv(side: str, kubeconfig: Path) -> list[str]:
    if side == KCM:
        return [
            str(find_binary("kube-controller-manager")),
            f"--kubeconfig={kubeconfig}",
            "--leader-elect=false",
            "--controllers=deployment-controller,replicaset-controller",
            "--secure-port=0",
            *LIMITS,
        ]
    return [
        str(kcontrol_manager()),
        f"--kubeconfig={kubeconfig}",
        "--leader-elect=false",
        "--secure-port=0",
        *LIMITS,
    ]


async def wait_complete(client: ApiClient, count: int, generations: dict[str, int]) -> None:
    while True:
        listed = (await client.list(DEPLOYMENTS, namespace=NAMESPACE))["items"]
        if len(listed) == count and all(
            is_complete(d, generations.get(d["metadata"]["name"], 0)) for d in listed
        ):
            return
        await asyncio.sleep(0.2)


def start(argv: list[str], log: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, stdout=log, stderr=log)


async def wait_empty(client: ApiClient) -> None:
    """Until the namespace holds no Deployment and no pod."""
    while True:
        pods = (await client.list(PODS, namespace=NAMESPACE))["items"]
        deployments = (await client.list(DEPLOYMENTS, namespace=NAMESPACE))["items"]
        if not pods and not deployments:
            return
        await asyncio.sleep(0.5)


async def one_run(
    cluster: KwokctlCluster, size: Size, side: str, index: int, directory: Path
) -> Run:
    result = Run(size.label, side, index, load_average())
    names = [f"d-{i:04d}" for i in range(size.deployments)]
    manifests = {}
    for phase, image in IMAGES.items():
        items = [deployment(name, size.replicas, image) for name in names]
        manifests[phase] = directory / f"{size.label}-{phase}.json"
        manifests[phase].write_text(
            json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
        )
    log = (directory / f"{size.label}-{side}-{index}.log").open("wb")
    process = start(side_argv(side, cluster.kubeconfig), log)
    config = await load_config(kubeconfig=str(cluster.kubeconfig))
    try:
        async with ApiClient(config) as client:
            await asyncio.sleep(START_SECONDS)
            result.start_cpu = proc_cpu(process.pid)
            for phase in IMAGES:
                before, started = proc_cpu(process.pid), time.monotonic()
                cluster.kubectl(
                    "apply", f"--namespace={NAMESPACE}", f"--filename={manifests[phase]}"
                )
                listed = (await client.list(DEPLOYMENTS, namespace=NAMESPACE))["items"]
                generations = {d["metadata"]["name"]: d["metadata"]["generation"] for d in listed}
                await wait_complete(client, len(names), generations)
                elapsed = time.monotonic() - started
                await asyncio.sleep(IDLE_SECONDS)
                cpu = proc_cpu(process.pid) - before
                if phase == "create":
                    result.create_s, result.create_cpu = elapsed, cpu
                else:
                    result.rollout_s, result.rollout_cpu = elapsed, cpu
            result.peak_rss_mb = proc_status_kb(process.pid, "VmHWM:") / 1024
            process.send_signal(signal.SIGTERM)
            process.wait(30)
            for kind in ("deployments", "replicasets"):
                cluster.kubectl("delete", kind, "--all", f"--namespace={NAMESPACE}", "--wait=false")
            cluster.kubectl("delete", "pods", "--all", f"--namespace={NAMESPACE}", "--wait=false")
            await wait_empty(client)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()
    return result


def median_of(runs: list[Run], figure: str) -> float:
    return median([float(getattr(r, figure)) for r in runs])


FIGURES = (
    ("work_cpu", "work CPU s"),
    ("create_cpu", "create CPU s"),
    ("rollout_cpu", "rollout CPU s"),
    ("create_s", "create s"),
    ("rollout_s", "rollout s"),
    ("peak_rss_mb", "peak RSS MB"),
    ("start_cpu", "start CPU s"),
)


def report(runs: list[Run], audit: bool) -> str:
    lines = [
        f"Cluster: kwokctl (binary runtime, QPS limits off, fast stages"
        f"{', audit log' if audit else ''}); writes: kubectl apply.",
        "",
        "| size | figure | KCM | kcontrol | kcontrol/KCM |",
        "|---|---|--:|--:|--:|",
    ]
    for size in dict.fromkeys(r.size for r in runs):
        kcm = [r for r in runs if r.size == size and r.side == KCM]
        ours = [r for r in runs if r.size == size and r.side == KCONTROL]
        if not kcm or not ours:
            continue
        for figure, label in FIGURES:
            a, b = median_of(kcm, figure), median_of(ours, figure)
            lines.append(f"| {size} | {label} | {a:.2f} | {b:.2f} | {ratio(b, a)} |")
    lines += [
        "",
        "| size | side | run | load | start CPU s | create s | create CPU s | rollout s "
        "| rollout CPU s | work CPU s | peak RSS MB |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    lines += [
        f"| {r.size} | {r.side} | {r.run} | {r.load:.2f} | {r.start_cpu:.2f} | {r.create_s:.1f} "
        f"| {r.create_cpu:.2f} | {r.rollout_s:.1f} | {r.rollout_cpu:.2f} | {r.work_cpu:.2f} "
        f"| {r.peak_rss_mb:.0f} |"
        for r in runs
    ]
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> list[Run]:
    runs: list[Run] = []
    for text in args.sizes.split(","):
        size = Size.parse(text)
        nodes = math.ceil(2 * size.deployments * size.replicas / PODS_PER_NODE) + 1
        directory = Path(tempfile.mkdtemp(prefix="kcontrol-kwokctl-"))
        cluster = KwokctlCluster(directory, nodes, args.audit)
        print(f"# {size.label}: a kwokctl cluster with {nodes} nodes ({directory})", flush=True)
        try:
            cluster.create()
            for index in range(args.runs):
                sides = (KCM, KCONTROL) if index % 2 == 0 else (KCONTROL, KCM)
                for side in sides:
                    run = await one_run(cluster, size, side, index, directory)
                    print(
                        f"{run.size} {run.side:8} run {run.run}: create {run.create_s:.1f}s "
                        f"cpu {run.create_cpu:.2f}  rollout {run.rollout_s:.1f}s cpu "
                        f"{run.rollout_cpu:.2f}  rss {run.peak_rss_mb:.0f}MB load {run.load:.2f}",
                        flush=True,
                    )
                    runs.append(run)
        finally:
            cluster.delete()
            if not args.keep_logs:
                shutil.rmtree(directory, ignore_errors=True)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", default="50x3,200x3")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--audit", action="store_true", help="the API server writes an audit log")
    parser.add_argument("--out", help="write the report (markdown) here")
    parser.add_argument("--json", help="write the results (bench/_results.py's format) here")
    parser.add_argument("--keep-logs", action="store_true")
    args = parser.parse_args()
    started = datetime.datetime.now(datetime.UTC)
    runs = asyncio.run(main_async(args))
    text = report(runs, args.audit)
    print(text)
    command = " ".join([".venv/bin/python", "-m", "bench.kwokctl", *sys.argv[1:]])
    if args.out:
        Path(args.out).write_text(
            f"# Rollout on a kwokctl cluster (generated)\n\n`{command}`\n\n{text}\n"
        )
    if args.json:
        write_results(
            args.json,
            "kwokctl",
            started=started,
            finished=datetime.datetime.now(datetime.UTC),
            machine={**machine_facts([r.load for r in runs], go=False), "kwok": "v0.8.0"},
            command=command,
            parameters={"sizes": args.sizes.split(","), "runs": args.runs, "audit": args.audit},
            points=_points(runs),
            runs=[asdict(r) for r in runs],
        )


def _points(runs: list[Run]) -> list[dict[str, Any]]:
    points = []
    for size in dict.fromkeys(r.size for r in runs):
        for side in (KCM, KCONTROL):
            chosen = [r for r in runs if r.size == size and r.side == side]
            if chosen:
                points.append(
                    {"size": size, "side": side}
                    | {figure: median_of(chosen, figure) for figure, _ in FIGURES}
                )
    return points


if __name__ == "__main__":
    main()

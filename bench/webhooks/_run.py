"""One measured run: a fresh control plane, one webhook server, N concurrent creates.

Each run has a control plane of its own (kcontrol.envtest), the Website CRD installed and
established first. The webhook server is started (:mod:`bench.webhooks._sides`) and is
ready once its configurations point the API server at it: a probe Website is stored with
its defaulted replicas and an unpinned one is denied (namespace ``probe``, before the first
scrape). Then the API server's ``/metrics`` is scraped, the webhook process's CPU read, and
the N creates sent at once (``asyncio.gather``, one unthrottled client); when the last is
answered the CPU is read again and ``/metrics`` scraped once more.

The checks, which fail the run loudly: every valid create answered with ``spec.replicas``
defaulted to 1, every invalid one refused with 422 by the validator, the namespace holding
exactly the valid Websites that were answered, and the API server's histogram counting a
call of each webhook type for each create allowed or denied. A create that fails otherwise (a
webhook call that failed: the API server answers 500) is no misconfiguration but a failure
under load: it is counted (``errors``, with the first error), not raised.
"""

from __future__ import annotations

import asyncio
import datetime
import math
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._process import load_average, proc_cpu
from bench.operator._operators import Implementation, OperatorProcess
from bench.webhooks._histogram import Histogram, delta, parse_histogram, quantile
from bench.webhooks._sides import ROOT, Side
from kcontrol.client import NAMESPACES, ApiClient, Resource
from kcontrol.envtest import ControlPlane
from kcontrol.errors import ApiError
from kcontrol.serving._tls import ensure_self_signed

__all__ = ["METRIC", "TYPES", "Run", "run_once", "website"]

CRD_PATH = ROOT / "examples" / "website" / "crd.yaml"
WEBSITES = Resource("demo.example.com", "v1", "websites", "Website")
NAMESPACE = "websites"
PROBE_NAMESPACE = "probe"
METRIC = "apiserver_admission_webhook_admission_duration_seconds"
TYPES = {"admit": "mutating", "validating": "validating"}
"""The histogram's ``type`` label: the webhook kind it stands for."""
READY_TIMEOUT = 120.0
DENIED_EVERY = 4  # every 4th Website has an unpinned image: a quarter are denied


@dataclass
class Latency:
    """The API server's view of one webhook type during the load (seconds)."""

    calls: float = 0.0
    p50: float = math.nan
    p99: float = math.nan
    mean: float = math.nan  # from _sum / _count: exact, where the buckets are coarse


@dataclass
class Run:
    implementation: str
    creates: int
    index: int
    started: str
    load: float
    ready_seconds: float = math.nan  # from the process start to the probes passing
    wall: float = math.nan  # from the first create sent to the last answered
    cpu: float = 0.0  # the webhook process's CPU-seconds over that window
    plane_cpu: float = 0.0  # kube-apiserver + etcd CPU-seconds, same window
    client_p50: float = math.nan  # each create's own time, as the benchmark's client saw it
    client_p99: float = math.nan
    allowed: int = 0
    denied: int = 0  # by the validator, as it should
    errors: int = 0  # creates that failed otherwise (a webhook call failed: 500)
    failed: list[str] = field(default_factory=list)  # their names
    error_sample: str = ""  # the first one's error
    latency: dict[str, Latency] = field(default_factory=dict)  # by TYPES' values
    peak_rss_kb: int = 0
    note: str = ""


def is_valid(i: int) -> bool:
    """Whether the ``i``-th Website of the load is valid (every 4th is not)."""
    return i % DENIED_EVERY != DENIED_EVERY - 1


def website(name: str, *, valid: bool) -> dict[str, Any]:
    """A Website without replicas (the defaulter sets them); ``valid=False``: its image has no
    tag (the validator refuses it)."""
    return {
        "apiVersion": WEBSITES.api_version,
        "kind": "Website",
        "metadata": {"name": name},
        "spec": {"image": "registry.example/web:1" if valid else "registry.example/web"},
    }


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


async def _scrape(client: ApiClient) -> dict[str, Histogram]:
    text = (await client.get_raw("/metrics", accept="text/plain")).decode()
    return parse_histogram(text, METRIC, "type")


async def _probe(client: ApiClient, attempt: int) -> bool:
    """Whether both webhooks answer: a Website stored defaulted, an unpinned one denied."""
    try:
        created = await client.create(
            WEBSITES, website(f"probe-{attempt}", valid=True), namespace=PROBE_NAMESPACE
        )
    except ApiError:
        return False
    if created["spec"].get("replicas") != 1:
        return False
    try:
        await client.create(
            WEBSITES, website(f"probe-bad-{attempt}", valid=False), namespace=PROBE_NAMESPACE
        )
    except ApiError as error:
        return error.code == 422 and "denied" in error.message
    return False


async def _wait_ready(client: ApiClient, process: OperatorProcess) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    attempt = 0
    while not await _probe(client, attempt):
        if not process.running():
            raise RuntimeError(f"the webhook server exited; log tail:\n{process.log_tail()}")
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"the webhooks did not answer within {READY_TIMEOUT:g} s; log tail:\n"
                f"{process.log_tail()}"
            )
        attempt += 1
        await asyncio.sleep(0.5)


async def _load(client: ApiClient, creates: int, result: Run) -> list[str]:
    """Send the creates at once; the problems found in the answers (a create that failed,
    not denied by the validator, is counted in ``result.errors`` instead)."""
    problems: list[str] = []
    latencies: list[float] = []

    async def one(i: int) -> None:
        name, valid = f"web-{i:04d}", is_valid(i)
        t0 = time.perf_counter()
        try:
            created = await client.create(WEBSITES, website(name, valid=valid), namespace=NAMESPACE)
        except ApiError as error:
            latencies.append(time.perf_counter() - t0)
            if error.code != 422 or "denied" not in error.message:
                result.errors += 1
                result.failed.append(name)
                result.error_sample = result.error_sample or str(error)
            elif valid:
                problems.append(f"{name}: a valid Website was denied ({error})")
            else:
                result.denied += 1
            return
        latencies.append(time.perf_counter() - t0)
        result.allowed += 1
        if not valid:
            problems.append(f"{name}: an unpinned image was allowed")
        elif created["spec"].get("replicas") != 1:
            problems.append(f"{name}: not defaulted ({created['spec']})")

    await asyncio.gather(*(one(i) for i in range(creates)))
    result.client_p50 = _percentile(latencies, 0.5)
    result.client_p99 = _percentile(latencies, 0.99)
    return problems


async def run_once(side: Side, creates: int, index: int, *, keep: bool = False) -> Run:
    """Measure ``side`` with ``creates`` concurrent creates on a control plane of its own."""
    directory = Path(tempfile.mkdtemp(prefix=f"kcontrol-bench-webhooks-{side.name}-"))
    result = Run(
        implementation=side.name,
        creates=creates,
        index=index,
        started=datetime.datetime.now(datetime.UTC).strftime("%H:%M:%S"),
        load=load_average(),
    )
    try:
        async with ControlPlane() as plane:
            await plane.install_crds(CRD_PATH)
            await _measure(plane, side, creates, directory, result)
    finally:
        if keep:
            print(f"# logs kept in {directory}", flush=True)
        else:
            shutil.rmtree(directory, ignore_errors=True)
    return result


async def _measure(
    plane: ControlPlane, side: Side, creates: int, directory: Path, result: Run
) -> None:
    kubeconfig = plane.kubeconfig_path
    process = OperatorProcess(
        Implementation(side.name, side.command, side.source), kubeconfig, directory / "server.log"
    )
    if side.needs_pair:
        cert, key = ensure_self_signed(directory, ["127.0.0.1", "localhost"])
        process.env.update(WEBHOOK_CERT_FILE=str(cert), WEBHOOK_KEY_FILE=str(key))
    assert plane._apiserver is not None and plane._apiserver.popen is not None
    assert plane._etcd is not None and plane._etcd.popen is not None
    plane_pids = [plane._apiserver.popen.pid, plane._etcd.popen.pid]
    async with plane.admin_client() as client:
        for namespace in (NAMESPACE, PROBE_NAMESPACE):
            await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        started = time.monotonic()
        process.start()
        try:
            await _wait_ready(client, process)
            result.ready_seconds = time.monotonic() - started
            await asyncio.sleep(1.0)  # let the probes' tail settle
            before = await _scrape(client)
            cpu0, plane0 = process.cpu(), sum(proc_cpu(p) for p in plane_pids)
            t0 = time.monotonic()
            problems = await _load(client, creates, result)
            result.wall = time.monotonic() - t0
            result.cpu = process.cpu() - cpu0
            result.plane_cpu = sum(proc_cpu(p) for p in plane_pids) - plane0
            after = await _scrape(client)
            result.peak_rss_kb = process.peak_rss_kb()
            if not process.running():
                problems.append("the webhook server exited")
        finally:
            process.stop()
        for label, kind in TYPES.items():
            observed = delta(after.get(label, Histogram()), before.get(label))
            result.latency[kind] = Latency(
                calls=observed.count,
                p50=quantile(0.5, observed),
                p99=quantile(0.99, observed),
                mean=observed.mean,
            )
            answered = result.allowed + result.denied  # each went through both webhooks
            if observed.count < answered:
                problems.append(
                    f"the API server counted {observed.count:g} {kind} webhook calls for "
                    f"{answered} creates answered"
                )
        stored = await client.list(WEBSITES, namespace=NAMESPACE)
        expected = {f"web-{i:04d}" for i in range(creates) if is_valid(i)} - set(result.failed)
        names = {item["metadata"]["name"] for item in stored["items"]}
        if names != expected:
            problems.append(
                f"{len(names)} Websites stored, {len(expected)} expected "
                f"(missing {sorted(expected - names)[:3]}, extra {sorted(names - expected)[:3]})"
            )
        undefaulted = [
            i["metadata"]["name"] for i in stored["items"] if i["spec"].get("replicas") != 1
        ]
        if undefaulted:
            problems.append(f"stored without the default: {undefaulted[:3]}")
    if result.errors:
        result.note += f"{result.errors} creates failed, e.g. {result.error_sample}; "
    if problems:
        raise RuntimeError(
            f"{side.name}: the webhooks did not do their work: "
            + "; ".join(problems[:5])
            + f" ({len(problems)} problems); log tail:\n{process.log_tail()}"
        )

"""One measured run: a fresh control plane, one writer process, N keys set then removed.

Each run has a control plane of its own (kcontrol.envtest) with the namespace ``ops`` and
no registry ConfigMap yet: the first write creates it. The writer runs as a process of its
own with the administrator's kubeconfig (:mod:`bench.registry._worker`'s protocol); once it
says it is ready, each phase is started by a ``go`` on its stdin and ends with its answer,
when every worker's last write has been answered. Around each phase the API server's
``/metrics`` is scraped (``apiserver_request_total`` for ConfigMaps: its writes by verb and
their 409s, its reads; ``etcd_requests_total``: its updates in storage, which exceed the
writes stored when concurrent writes made the API server retry inside a request), and after it the ConfigMap is read by the benchmark's own client:
after ``set`` it must hold exactly the N keys with their values, after ``remove`` none - a
lost or stray key fails the run.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import math
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._process import load_average, proc_cpu
from bench.registry._worker import NAME, NAMESPACE, PHASES, key_names, value_of
from bench.webhooks._histogram import counter_by
from kcontrol.client import CONFIGMAPS, NAMESPACES, ApiClient
from kcontrol.envtest import ControlPlane
from kcontrol.errors import NotFound

__all__ = ["IMPLEMENTATIONS", "KCONTROL", "KOPF_PATCH", "KOPF_RMW", "Phase", "Run", "run_once"]

ROOT = Path(__file__).resolve().parents[2]
KCONTROL = "kcontrol"
KOPF_RMW = "kopf-rmw"
KOPF_PATCH = "kopf-patch"
IMPLEMENTATIONS: dict[str, tuple[str, dict[str, str]]] = {
    KCONTROL: ("bench.registry.kcontrol_registry", {}),
    KOPF_RMW: ("bench.registry.kopf_registry", {"REGISTRY_WAY": "rmw"}),
    KOPF_PATCH: ("bench.registry.kopf_registry", {"REGISTRY_WAY": "patch"}),
}
"""Each side's module and environment."""
WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE")
START_TIMEOUT = 60.0


@dataclass
class Phase:
    wall: float = math.nan  # from "go" to every key written, as the writer timed it
    cpu: float = 0.0  # the writer process's CPU-seconds over it
    plane_cpu: float = 0.0  # kube-apiserver + etcd CPU-seconds, from go to its answer
    requests: int = 0  # as the writer counted them (reads included)
    writes: dict[str, int] = field(default_factory=dict)  # by verb, as the API server counted
    refused: dict[str, int] = field(default_factory=dict)  # writes answered non-2xx, by code
    conflicts: int = 0  # writes answered 409 (Conflict or AlreadyExists), retried
    reads: int = 0  # the writer's GETs of ConfigMaps, as the API server counted them
    storage_updates: int = 0  # the API server's updates in etcd: above the writes stored when
    # concurrent writes made it retry (a patch is re-applied to the newer object, unseen)
    keys_after: int = 0  # keys the ConfigMap held afterwards


@dataclass
class Run:
    implementation: str
    keys: int
    workers: int
    index: int
    started: str
    load: float
    peak_rss_kb: int = 0
    phases: dict[str, Phase] = field(default_factory=dict)
    note: str = ""


async def _requests(client: ApiClient) -> dict[tuple[str, ...], float]:
    """ConfigMap requests by (verb, code), and storage requests by ("etcd", operation)."""
    text = (await client.get_raw("/metrics", accept="text/plain")).decode()
    requests = counter_by(text, "apiserver_request_total", "verb", "code", resource="configmaps")
    storage = counter_by(text, "etcd_requests_total", "operation", resource="configmaps")
    return {**requests, **{("etcd", op): n for (op,), n in storage.items()}}


async def _stored(client: ApiClient) -> dict[str, str]:
    try:
        configmap = await client.get(CONFIGMAPS, NAME, namespace=NAMESPACE)
    except NotFound:
        return {}
    return dict(configmap.get("data") or {})


async def _line(stream: asyncio.StreamReader, process: asyncio.subprocess.Process) -> Any:
    async with asyncio.timeout(START_TIMEOUT * 10):
        line = await stream.readline()
    if not line:
        await process.wait()
        raise RuntimeError(f"the writer exited ({process.returncode}) without answering")
    return json.loads(line)


async def run_once(implementation: str, keys: int, workers: int, index: int) -> Run:
    """Measure ``implementation`` with ``keys`` keys and ``workers`` workers on a control
    plane of its own."""
    result = Run(
        implementation=implementation,
        keys=keys,
        workers=workers,
        index=index,
        started=datetime.datetime.now(datetime.UTC).strftime("%H:%M:%S"),
        load=load_average(),
    )
    directory = Path(tempfile.mkdtemp(prefix=f"kcontrol-bench-registry-{implementation}-"))
    try:
        async with ControlPlane() as plane, plane.admin_client() as client:
            await client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
            assert plane._apiserver is not None and plane._apiserver.popen is not None
            assert plane._etcd is not None and plane._etcd.popen is not None
            plane_pids = [plane._apiserver.popen.pid, plane._etcd.popen.pid]
            module, env = IMPLEMENTATIONS[implementation]
            with (directory / "writer.log").open("wb") as log:
                process = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    module,
                    str(plane.kubeconfig_path),
                    str(keys),
                    str(workers),
                    cwd=ROOT,
                    env={**os.environ, **env},
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=log,
                )
            try:
                await _phases(client, process, plane_pids, result)
            finally:
                if process.returncode is None:
                    process.kill()
                await process.wait()
            log_text = (directory / "writer.log").read_text(errors="replace")
            if result.note:
                raise RuntimeError(f"{implementation}: {result.note}; writer log:\n{log_text}")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return result


async def _phases(
    client: ApiClient, process: asyncio.subprocess.Process, plane_pids: list[int], result: Run
) -> None:
    assert process.stdin is not None and process.stdout is not None
    await _line(process.stdout, process)  # ready
    expected = {key: value_of(key) for key in key_names(result.keys)}
    for name in PHASES:
        before = await _requests(client)
        plane0 = sum(proc_cpu(p) for p in plane_pids)
        process.stdin.write(b"go\n")
        await process.stdin.drain()
        answer = await _line(process.stdout, process)
        result.peak_rss_kb = max(result.peak_rss_kb, answer["peak_rss_kb"])
        plane1 = sum(proc_cpu(p) for p in plane_pids)
        stored = await _stored(client)
        after = await _requests(client)
        growth = {k: after[k] - before.get(k, 0.0) for k in after if after[k] > before.get(k, 0.0)}
        writes: dict[str, int] = {}
        refused: dict[str, int] = {}
        for (verb, code), n in growth.items():
            if verb in WRITE_VERBS:
                writes[verb] = writes.get(verb, 0) + int(n)
                if not code.startswith("2"):
                    refused[code] = refused.get(code, 0) + int(n)
        result.phases[name] = Phase(
            wall=answer["wall"],
            cpu=answer["cpu"],
            plane_cpu=plane1 - plane0,
            requests=answer["requests"],
            writes=writes,
            refused=refused,
            conflicts=refused.get("409", 0),
            # less the benchmark's own read of the result, between the scrapes
            reads=int(sum(n for (v, _c), n in growth.items() if v == "GET")) - 1,
            storage_updates=int(growth.get(("etcd", "update"), 0)),
            keys_after=len(stored),
        )
        want = expected if name == "set" else {}
        if stored != want:
            lost = sorted(set(want) - set(stored))
            stray = sorted(set(stored) - set(want))
            wrong = sorted(k for k in want if k in stored and stored[k] != want[k])
            result.note += (
                f"after {name}: {len(lost)} keys lost {lost[:3]}, {len(stray)} stray "
                f"{stray[:3]}, {len(wrong)} wrong {wrong[:3]}; "
            )
            return
    process.stdin.close()

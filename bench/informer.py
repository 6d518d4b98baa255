"""Informer benchmark (benchmarks.md, scenarios 2 and 3): cold sync and watch throughput.

For each N in ``--pods`` (default 10,000 and 50,000) a fresh control plane (etcd +
kube-apiserver from kcontrol.testing.envtest) is started and N realistic pods
(bench/_pods.py: ~3.9 KB of JSON each as stored, 1.6 KB of it managedFields) are created in
namespace ``bench`` with ``ApiClient(qps=0)`` and 32 concurrent creates. The pods have no node and stay Pending. Then, ``--runs`` times, each
variant runs as its own process (so its RSS is its own), kcontrol and client-go alternating:

==========================  =================================================================
variant                     what runs
==========================  =================================================================
``kcontrol``                kcontrol SharedInformerFactory pod informer, default settings
                            (LIST with limit=500 at resourceVersion 0 - which the apiserver
                            answers from its watch cache in one piece - then watch; gzip;
                            fieldsV1 kept raw; short strings interned)
``client-go``               client-go v0.36 SharedInformerFactory pod informer
                            (bench/reference/informer), default settings: JSON, and the
                            streaming list (WatchListClient is on by default since v0.35)
``kcontrol trim``           as ``kcontrol`` with a transform dropping metadata.managedFields
``client-go trim``          as ``client-go`` with the same transform (kube-controller-manager
                            installs exactly this one)
``kcontrol no-intern``      kcontrol with ``ReflectorOptions(intern_strings=False)``
``kcontrol no-gzip``        kcontrol with ``ClientConfig(disable_compression=True)``: no gzip,
                            as the official client (urllib3 does not ask for it)
``kcontrol watch-list``     kcontrol with ``ReflectorOptions(use_watch_list=True)``
``client-go LIST``          client-go with ``KUBE_FEATURE_WatchListClient=false``
``kcontrol watch-list trim``  streaming list with the managedFields transform
``kcontrol manager``        as kcontrol-manager runs its informers: ``strip_managed_fields``
                            (and the default interning), and the sync settled with
                            ``gc.freeze()`` (``set_gc_freeze_after_sync``)
``client-go kcm``           client-go as kube-controller-manager configures it: protobuf,
                            ``DisableCompression``, and the managedFields transform
``official``                the official client's ``kubernetes.informer.SharedInformer`` over
                            ``CoreV1Api.list_pod_for_all_namespaces`` (threads, urllib3,
                            typed models; one unpaged LIST). Capped by ``--slow-timeout``.
``asyncio models``          bare kubernetes_asyncio: ``list_pod_for_all_namespaces`` paged 500
                            at resourceVersion 0 into a dict, generated models (what users of
                            that library get); no watch is started
``aiohttp floor``           one aiohttp session GETting the same LIST (limit=500,
                            resourceVersion=0: one response) and discarding the bytes
==========================  =================================================================

Every informer process also runs once against an empty namespace; ``RSS/pod`` is (VmRSS at
sync - VmRSS of that empty run) / N. ``settled`` is the same after a full collection and
giving free memory back (Go: runtime.GC + debug.FreeOSMemory; Python: gc.collect +
malloc_trim(0)). ``wall`` and ``CPU`` run from the start of the measured program's main (after
the interpreter's imports, reported apart as ``import CPU``) to has_synced.

Watch throughput: kcontrol (default, and as kcontrol-manager runs it) and client-go
informers (default settings) sync, then a writer process (``ApiClient(qps=0)``,
``--writer-concurrency`` merge patches in flight) patches an annotation holding its clock on
the pods for ``--churn-seconds``; all three informers watch at the same time, on the same
event stream, and count the update events their handler receives, the CPU they use, and the
delay from the writer's timestamp to the handler call.

Usage::

    .venv/bin/python bench/informer.py [--pods 10000,50000] [--runs 3] [--write results.md]

Other flags: ``--variants`` (comma list), ``--slow-runs`` (runs that include the official and
asyncio-models variants), ``--slow-timeout``, ``--churn-seconds`` (0: skip), ``--dump``
(raw measurements as JSON).
"""

# Children import only what they measure (their RSS and import CPU stay their own): imports
# inside functions are deliberate here.
# ruff: noqa: PLC0415

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import dataclasses
import datetime
import gc
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

NAMESPACE = "bench"
EMPTY_NAMESPACE = "empty"
RESULT = "RESULT "

# --------------------------------------------------------------------------- process metrics


def _vm_kb(field_name: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field_name):
                return int(line.split()[1])
    return -1


def _peak_kb() -> int:
    """Peak RSS (kB) of this program: VmHWM. Not ``ru_maxrss``, which on Linux also counts the
    parent's RSS at fork (it survives exec), i.e. the orchestrator's."""
    return _vm_kb("VmHWM:")


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _settle() -> int:
    """VmRSS (kB) after a full collection and returning free heap to the OS."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    return _vm_kb("VmRSS:")


def _emit(payload: dict[str, Any]) -> None:
    sys.stdout.write(RESULT + json.dumps(payload) + "\n")
    sys.stdout.flush()


@dataclass
class _Clock:
    """Start of the measured part of a child: after imports."""

    wall: float = field(default_factory=time.perf_counter)
    cpu: float = field(default_factory=_cpu)

    def sync_metrics(self, objects: int) -> dict[str, Any]:
        wall = time.perf_counter() - self.wall
        cpu_total = _cpu()
        return {
            "objects": objects,
            "wall_seconds": wall,
            "cpu_seconds": cpu_total - self.cpu,
            "import_cpu_seconds": self.cpu,
            "maxrss_kb": _peak_kb(),
            "rss_kb": _vm_kb("VmRSS:"),
        }


# --------------------------------------------------------------------------- transforms

_TRANSFORMS = ("none", "trim")


def _transform(name: str) -> Any:
    from kcontrol.informers import strip_managed_fields

    return {"none": None, "trim": strip_managed_fields}[name]


# --------------------------------------------------------------------------- children


def _quiet_logs() -> None:
    import logging

    # kcontrol logs through stdlib logging only (kcontrol.logging): this is all it takes.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)


class _Counter:
    """The informer handler of the kcontrol child: counts adds, times updates."""

    def __init__(self) -> None:
        self.adds = 0
        self.updates = 0
        self.lags: list[float] = []

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.adds += 1

    def on_update(self, old: Any, new: Any) -> None:
        self.updates += 1
        ts = ((new.get("metadata") or {}).get("annotations") or {}).get("bench/ts")
        if ts is not None:
            self.lags.append(time.time() - float(ts))

    def on_delete(self, obj: Any) -> None:
        pass


def _pct(values: list[float], p: float) -> float:
    if not values:
        return -1.0
    values = sorted(values)
    return values[int(p * (len(values) - 1))]


async def _child_kcontrol(args: argparse.Namespace, clock: _Clock) -> None:
    from kcontrol.client import PODS, ApiClient, load_config
    from kcontrol.informers import ReflectorOptions, SharedInformerFactory

    transform = _transform(args.transform)
    if args.gc_freeze:
        from kcontrol.informers import set_gc_freeze_after_sync

        set_gc_freeze_after_sync(True)  # as kcontrol-manager does
    config = await load_config(kubeconfig=args.kubeconfig)
    if args.no_compression:
        config = dataclasses.replace(config, disable_compression=True)
    options = ReflectorOptions(use_watch_list=args.watch_list, intern_strings=not args.no_intern)
    async with ApiClient(config, qps=0) as client:
        factory = SharedInformerFactory(
            client,
            namespace=args.namespace or None,
            transform=transform,
            reflector_options=options,
        )
        informer = factory.for_resource(PODS)
        counter = _Counter()
        informer.add_event_handler(counter)
        async with asyncio.TaskGroup() as group:
            task = group.create_task(factory.run())
            await informer.wait_for_cache_sync()
            result = clock.sync_metrics(len(informer.indexer))
            if not args.churn:
                result["rss_settled_kb"] = _settle()
                result["handler_adds"] = counter.adds
                _emit({"mode": "sync", **result})
            else:
                _emit({"mode": "synced", **result})
                await _churn_window(counter)
            task.cancel()


async def _churn_window(counter: _Counter) -> None:
    """Between stdin lines "start" and "stop": count updates; then emit the figures."""
    t0 = c0 = 0.0
    while True:
        line = (await asyncio.to_thread(sys.stdin.readline)).strip()
        if line == "start":
            counter.updates, counter.lags = 0, []
            t0, c0 = time.perf_counter(), _cpu()
        elif line == "stop" or not line:
            elapsed = time.perf_counter() - t0
            _emit(
                {
                    "mode": "churn",
                    "updates": counter.updates,
                    "seconds": elapsed,
                    "cpu_seconds": _cpu() - c0,
                    "events_per_second": counter.updates / elapsed if elapsed else 0.0,
                    "lag_p50": _pct(counter.lags, 0.50),
                    "lag_p99": _pct(counter.lags, 0.99),
                    "lag_max": _pct(counter.lags, 1.0),
                    "maxrss_kb": _peak_kb(),
                }
            )
            return


def _child_official(args: argparse.Namespace, clock: _Clock) -> None:
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config
    from kubernetes.informer import ADDED, SharedInformer

    k8s_config.load_kube_config(config_file=args.kubeconfig)
    api = k8s.CoreV1Api()
    adds = 0

    def on_add(obj: Any) -> None:
        nonlocal adds
        adds += 1

    if args.namespace:
        informer = SharedInformer(api.list_namespaced_pod, namespace=args.namespace)
    else:
        informer = SharedInformer(api.list_pod_for_all_namespaces)
    informer.add_event_handler(ADDED, on_add)
    informer.start()
    # The informer has no has_synced: its first LIST (and the ADDED callbacks) is complete
    # once it recorded the list's resourceVersion.
    while informer._resource_version is None:
        time.sleep(0.002)
    result = clock.sync_metrics(len(informer.cache.list_keys()))
    result["rss_settled_kb"] = _settle()
    result["handler_adds"] = adds
    _emit({"mode": "sync", **result})
    os._exit(0)  # the watch thread blocks in a socket read; do not wait for it


async def _child_asyncio_models(args: argparse.Namespace, clock: _Clock) -> None:
    from kubernetes_asyncio import client as k8s
    from kubernetes_asyncio import config as k8s_config

    configuration = k8s.Configuration()
    await k8s_config.load_kube_config(
        config_file=args.kubeconfig, client_configuration=configuration
    )
    cache: dict[str, Any] = {}
    async with k8s.ApiClient(configuration) as api_client:
        api = k8s.CoreV1Api(api_client)
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"limit": 500}
            if token:
                kwargs["_continue"] = token
            else:
                kwargs["resource_version"] = "0"
            if args.namespace:
                page = await api.list_namespaced_pod(args.namespace, **kwargs)
            else:
                page = await api.list_pod_for_all_namespaces(**kwargs)
            for pod in page.items:
                cache[f"{pod.metadata.namespace}/{pod.metadata.name}"] = pod
            token = page.metadata._continue
            if not token:
                break
        result = clock.sync_metrics(len(cache))
        result["rss_settled_kb"] = _settle()
        _emit({"mode": "sync", **result})


_CONTINUE = re.compile(rb'"continue":"([^"]*)"')


async def _child_aiohttp(args: argparse.Namespace, clock: _Clock) -> None:
    import aiohttp

    from kcontrol.client import load_config

    config = await load_config(kubeconfig=args.kubeconfig)
    authorization = await config.auth.authorization() if config.auth else None
    headers = {"Accept": "application/json"}
    if authorization:
        headers["Authorization"] = authorization
    path = f"/api/v1/namespaces/{args.namespace}/pods" if args.namespace else "/api/v1/pods"
    pages = total = 0
    connector = aiohttp.TCPConnector(ssl=config.ssl_context())
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        token = ""
        while True:
            params = {"limit": str(args.page_size)} if args.page_size else {}
            if token:
                params["continue"] = token
            else:
                params["resourceVersion"] = "0"
            async with session.get(config.host + path, params=params) as response:
                response.raise_for_status()
                body = await response.read()
            pages += 1
            total += len(body)
            # The list's metadata (with any continue token) comes before the items.
            match = _CONTINUE.search(body, 0, 4096)
            token = match.group(1).decode() if match else ""
            del body
            if not token:
                break
    result = clock.sync_metrics(-1)
    result.update(pages=pages, bytes=total)
    _emit({"mode": "sync", **result})


async def _child_writer(args: argparse.Namespace) -> None:
    """Patch pods round-robin as fast as possible for --seconds; emit patches/s."""
    from kcontrol.client import PODS, ApiClient, load_config

    config = await load_config(kubeconfig=args.kubeconfig)
    async with ApiClient(config, qps=0) as client:
        names = [
            p["metadata"]["name"]
            for p in (await client.list_all(PODS, namespace=args.namespace))[0]
        ]
        _emit({"mode": "ready", "pods": len(names)})
        await asyncio.to_thread(sys.stdin.readline)  # "go"
        deadline = time.monotonic() + args.seconds
        done = 0
        errors = 0
        start = time.perf_counter()

        async def worker(offset: int) -> None:
            nonlocal done, errors
            i = offset
            while time.monotonic() < deadline:
                name = names[i % len(names)]
                i += args.concurrency
                patch = {"metadata": {"annotations": {"bench/ts": f"{time.time():.6f}"}}}
                try:
                    await client.patch(
                        PODS, name, patch, namespace=args.namespace, field_manager="bench"
                    )
                    done += 1
                except Exception:
                    errors += 1

        async with asyncio.TaskGroup() as group:
            for k in range(args.concurrency):
                group.create_task(worker(k))
        elapsed = time.perf_counter() - start
        _emit(
            {
                "mode": "writer",
                "patches": done,
                "errors": errors,
                "seconds": elapsed,
                "patches_per_second": done / elapsed,
            }
        )


_PRELOAD = {
    "kcontrol": ("kcontrol.client", "kcontrol.informers"),
    "aiohttp": ("aiohttp", "kcontrol.client"),
    "writer": ("kcontrol.client",),
    "official": ("kubernetes.client", "kubernetes.config", "kubernetes.informer"),
    "asyncio-models": ("kubernetes_asyncio.client", "kubernetes_asyncio.config"),
}


def child_main(args: argparse.Namespace) -> None:
    import importlib

    kind = args.child
    for module in _PRELOAD.get(kind, ()):  # imports are not part of the measured sync
        importlib.import_module(module)
    _quiet_logs()
    clock = _Clock()
    if kind == "kcontrol":
        asyncio.run(_child_kcontrol(args, clock))
    elif kind == "official":
        _child_official(args, clock)
    elif kind == "asyncio-models":
        asyncio.run(_child_asyncio_models(args, clock))
    elif kind == "aiohttp":
        asyncio.run(_child_aiohttp(args, clock))
    elif kind == "writer":
        asyncio.run(_child_writer(args))
    else:
        raise SystemExit(f"unknown child {kind!r}")


# --------------------------------------------------------------------------- orchestrator


@dataclass(frozen=True)
class Variant:
    name: str
    runtime: str  # "kcontrol", "go", "official", "asyncio", "floor": selects the empty baseline
    argv: Callable[[str, str], list[str]]  # (kubeconfig, namespace) -> command
    env: dict[str, str] = field(default_factory=dict)
    slow: bool = False


def _py(kind: str, *extra: str) -> Callable[[str, str], list[str]]:
    def argv(kubeconfig: str, namespace: str) -> list[str]:
        return [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            kind,
            "--kubeconfig",
            kubeconfig,
            "--namespace",
            namespace,
            *extra,
        ]

    return argv


def _go(binary: Path, *extra: str) -> Callable[[str, str], list[str]]:
    def argv(kubeconfig: str, namespace: str) -> list[str]:
        return [str(binary), "-kubeconfig", kubeconfig, "-namespace", namespace, *extra]

    return argv


MANAGER_FLAGS = ("--transform", "trim", "--gc-freeze")
"""The kcontrol child as kcontrol-manager configures its informers (see kcontrol.manager)."""

KCM_FLAGS = ("-trim-managed-fields", "-protobuf", "-disable-compression")
"""The client-go child as kube-controller-manager configures its client and informers
(cmd/kube-controller-manager/app/options/options.go and controllermanager.go)."""


def variants(binary: Path) -> list[Variant]:
    no_watch_list = {"KUBE_FEATURE_WatchListClient": "false"}
    kc = "kcontrol"
    return [
        Variant("kcontrol", kc, _py(kc)),
        Variant("client-go", "go", _go(binary)),
        Variant("kcontrol trim", kc, _py(kc, "--transform", "trim")),
        Variant("client-go trim", "go", _go(binary, "-trim-managed-fields")),
        Variant("kcontrol no-intern", kc, _py(kc, "--no-intern")),
        Variant("kcontrol no-gzip", kc, _py(kc, "--no-compression")),
        Variant("kcontrol watch-list", kc, _py(kc, "--watch-list")),
        Variant("client-go LIST", "go", _go(binary), env=no_watch_list),
        Variant("kcontrol watch-list trim", kc, _py(kc, "--watch-list", "--transform", "trim")),
        Variant("kcontrol manager", kc, _py(kc, *MANAGER_FLAGS)),
        Variant("client-go kcm", "go", _go(binary, *KCM_FLAGS)),
        Variant("aiohttp floor", "floor", _py("aiohttp")),
        Variant("official", "official", _py("official"), slow=True),
        Variant("asyncio models", "asyncio", _py("asyncio-models"), slow=True),
    ]


def _proc_cpu(pid: int) -> float:
    """utime + stime of a running child, from /proc (for a child killed at the timeout)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def run_sync(variant: Variant, kubeconfig: str, namespace: str, timeout: float) -> dict[str, Any]:
    """Run one variant to sync in its own process; its RESULT line as a dict."""
    env = {**os.environ, **variant.env}
    start = time.perf_counter()
    proc = subprocess.Popen(
        variant.argv(kubeconfig, namespace),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        cpu = _proc_cpu(proc.pid)
        proc.kill()
        proc.communicate()
        return {"timeout": True, "wall_seconds": time.perf_counter() - start, "cpu_seconds": cpu}
    for line in out.splitlines():
        if line.startswith(RESULT):
            return dict(json.loads(line[len(RESULT) :]))
        if line.startswith("{"):  # the Go program prints bare JSON
            return dict(json.loads(line))
    raise RuntimeError(f"{variant.name} failed (rc {proc.returncode}):\n{err[-3000:]}")


class _Child:
    """A long-running child spoken to over stdin/stdout lines (churn mode)."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **(env or {})},
        )

    def read_result(self, timeout: float = 300.0) -> dict[str, Any]:
        assert self.proc.stdout is not None
        box: list[str] = []

        def reader() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                if line.startswith(RESULT) or line.startswith("{"):
                    box.append(line)
                    return

        thread = threading.Thread(target=reader, daemon=True)
        thread.start()
        thread.join(timeout)
        if not box:
            raise RuntimeError(f"no result from {self.proc.args[:4]} (rc {self.proc.poll()})")
        line = box[0]
        return dict(json.loads(line[len(RESULT) :] if line.startswith(RESULT) else line))

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def finish(self) -> None:
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


CHURN_KCONTROL = {"kcontrol": (), "kcontrol manager": MANAGER_FLAGS}
"""The kcontrol informers of the churn test: name -> extra flags of the kcontrol child."""


def run_churn(
    binary: Path,
    kubeconfig: str,
    seconds: float,
    concurrency: int,
    kcontrol: dict[str, tuple[str, ...]] | None = None,
) -> dict[str, dict[str, Any]]:
    """kcontrol and client-go informers watch while the writer patches; every result."""
    children = {
        name: _Child(_py("kcontrol", "--churn", *flags)(kubeconfig, ""))
        for name, flags in (kcontrol or CHURN_KCONTROL).items()
    }
    children["client-go"] = _Child(_go(binary, "-churn")(kubeconfig, ""))
    writer = _Child(
        _py("writer", "--seconds", str(seconds), "--concurrency", str(concurrency))(
            kubeconfig, NAMESPACE
        )
    )
    try:
        for child in children.values():
            child.read_result()  # synced
        writer.read_result()  # ready
        for child in children.values():
            child.send("start")
        writer.send("go")
        wrote = writer.read_result(seconds + 120)
        time.sleep(2.0)  # let the last events arrive
        results = {}
        for name, child in children.items():
            child.send("stop")
            results[name] = child.read_result()
        results["writer"] = wrote
        return results
    finally:
        for child in (*children.values(), writer):
            if child.proc.poll() is None and child.proc.stdin is not None:
                with contextlib.suppress(BrokenPipeError):
                    child.proc.stdin.close()
            child.finish()


async def populate(cp: Any, count: int, concurrency: int) -> float:
    from _pods import create_namespace, create_pods

    from kcontrol.client import ApiClient, ClientConfig

    config = ClientConfig.from_kube_configuration(await cp.kube_configuration())
    async with ApiClient(config, qps=0, timeout=120) as client:
        await create_namespace(client, NAMESPACE)
        await create_namespace(client, EMPTY_NAMESPACE)
        start = time.perf_counter()
        await create_pods(client, NAMESPACE, count, concurrency=concurrency)
        return time.perf_counter() - start


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _fmt(value: float, digits: int = 2) -> str:
    if value != value:  # NaN
        return "-"
    return f"{value:,.{digits}f}"


@dataclass
class Collected:
    sync: dict[tuple[int, str], list[dict[str, Any]]] = field(default_factory=dict)
    empty: dict[tuple[int, str], list[dict[str, Any]]] = field(default_factory=dict)
    churn: dict[int, list[dict[str, dict[str, Any]]]] = field(default_factory=dict)
    create_seconds: dict[int, float] = field(default_factory=dict)
    loads: list[float] = field(default_factory=list)


def _stat(runs: list[dict[str, Any]], key: str) -> float:
    return _median([float(r[key]) for r in runs if key in r and not r.get("timeout")])


def report(data: Collected, variant_list: list[Variant], counts: list[int], runs: int) -> str:
    lines: list[str] = []
    for n in counts:
        create = data.create_seconds.get(n, float("nan"))
        lines.append(
            f"\n### {n:,} pods (created in {create:.0f} s, {n / create:,.0f}/s)\n"
            if create == create
            else f"\n### {n:,} pods\n"
        )
        lines.append(
            "| variant | runs | wall s | CPU s | import CPU s | peak RSS MB | RSS/pod B "
            "| settled RSS/pod B | Go heap/pod B |"
        )
        lines.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
        medians: dict[str, dict[str, float]] = {}
        for v in variant_list:
            rs = data.sync.get((n, v.name))
            if not rs:
                continue
            ok = [r for r in rs if not r.get("timeout")]
            timeouts = len(rs) - len(ok)
            empty = data.empty.get((n, v.runtime), [])
            m = {
                "wall": _stat(ok, "wall_seconds"),
                "cpu": _stat(ok, "cpu_seconds"),
                "import": _stat(ok, "import_cpu_seconds"),
                "maxrss": _stat(ok, "maxrss_kb") / 1024,
                "rss_pod": (_stat(ok, "rss_kb") - _stat(empty, "rss_kb")) * 1024 / n,
                "settled_pod": (_stat(ok, "rss_settled_kb") - _stat(empty, "rss_settled_kb"))
                * 1024
                / n,
                "heap_pod": (_stat(ok, "heap_inuse_after_gc") - _stat(empty, "heap_inuse_after_gc"))
                / n,
            }
            if timeouts and not ok:
                m["wall"] = _median([r["wall_seconds"] for r in rs])
                m["cpu"] = _median([r["cpu_seconds"] for r in rs])
            medians[v.name] = m
            bound = ">" if timeouts and not ok else ""
            lines.append(
                f"| {v.name} | {len(ok)}{f' (+{timeouts} timed out)' if timeouts else ''} "
                f"| {bound}{_fmt(m['wall'])} | {bound}{_fmt(m['cpu'])} | {_fmt(m['import'])} "
                f"| {_fmt(m['maxrss'], 0)} | {_fmt(m['rss_pod'], 0)} "
                f"| {_fmt(m['settled_pod'], 0)} | {_fmt(m['heap_pod'], 0)} |"
            )
        floor = data.sync.get((n, "aiohttp floor"))
        if floor:
            f0 = floor[0]
            lines.append(
                f"\nLIST bytes: {f0.get('bytes', 0) / n:,.0f} B/pod in {f0.get('pages')} "
                f"page(s) of limit=500, resourceVersion=0."
            )
        pairs = [
            ("kcontrol", "client-go", "defaults: kcontrol LIST, client-go streaming list"),
            ("kcontrol trim", "client-go trim", "both drop managedFields"),
            ("kcontrol", "client-go LIST", "both LIST"),
            ("kcontrol watch-list", "client-go", "both streaming list"),
            ("kcontrol trim", "client-go LIST", "kcontrol trims, both LIST"),
            ("kcontrol watch-list trim", "client-go trim", "both streaming list, both trim"),
            ("kcontrol no-intern", "client-go", "kcontrol without interning"),
            ("kcontrol manager", "client-go trim", "kcontrol-manager vs client-go trim"),
            ("kcontrol manager", "client-go kcm", "kcontrol-manager vs kube-controller-manager"),
        ]
        lines.append(
            "\n| kcontrol / client-go | wall | CPU | peak RSS | RSS/pod | settled RSS/pod |"
        )
        lines.append("|---|--:|--:|--:|--:|--:|")
        for a, b, label in pairs:
            if a in medians and b in medians:
                ma, mb = medians[a], medians[b]
                lines.append(
                    f"| {a} / {b} ({label}) | {ma['wall'] / mb['wall']:.2f} "
                    f"| {ma['cpu'] / mb['cpu']:.2f} | {ma['maxrss'] / mb['maxrss']:.2f} "
                    f"| {ma['rss_pod'] / mb['rss_pod']:.2f} "
                    f"| {ma['settled_pod'] / mb['settled_pod']:.2f} |"
                )
        for slow in ("official", "asyncio models"):
            for ours in ("kcontrol", "kcontrol no-gzip", "kcontrol manager"):
                if slow not in medians or ours not in medians:
                    continue
                ms, mk = medians[slow], medians[ours]
                timed_out = not [r for r in data.sync[(n, slow)] if not r.get("timeout")]
                bound = "at least " if timed_out else ""
                lines.append(
                    f"\n{ours} vs {slow}: {bound}{ms['wall'] / mk['wall']:.1f}x faster (wall), "
                    f"{bound}{ms['cpu'] / mk['cpu']:.1f}x less CPU."
                )
        churns = data.churn.get(n)
        if churns:
            lines.append(
                f"\nWatch throughput ({len(churns)} runs, medians; both informers watch at once):\n"
            )
            lines.append(
                "| informer | writer patches/s | events/s delivered | delivered/written "
                "| CPU us/event | lag p50 ms | lag p99 ms |"
            )
            lines.append("|---|--:|--:|--:|--:|--:|--:|")
            for who in ("kcontrol", *CHURN_KCONTROL.keys() - {"kcontrol"}, "client-go"):
                rs = [c[who] for c in churns if who in c]
                ws = [c["writer"] for c in churns]
                written = _median([w["patches"] for w in ws])
                lines.append(
                    f"| {who} | {_median([w['patches_per_second'] for w in ws]):,.0f} "
                    f"| {_median([r['updates'] / w['seconds'] for r, w in zip(rs, ws, strict=True)]):,.0f} "
                    f"| {_median([r['updates'] for r in rs]) / written:.3f} "
                    f"| {_median([r['cpu_seconds'] / max(r['updates'], 1) * 1e6 for r in rs]):,.0f} "
                    f"| {_median([r['lag_p50'] * 1e3 for r in rs]):,.1f} "
                    f"| {_median([r['lag_p99'] * 1e3 for r in rs]):,.1f} |"
                )
    return "\n".join(lines)


async def orchestrate(
    args: argparse.Namespace,
) -> tuple[Collected, list[Variant], list[int], datetime.datetime]:
    from _reference import build_reference

    from kcontrol.testing.envtest import ControlPlane

    binary = await asyncio.to_thread(build_reference, "informer")
    all_variants = variants(binary)
    if args.variants:
        wanted = {v.strip() for v in args.variants.split(",")}
        all_variants = [v for v in all_variants if v.name in wanted]
    counts = [int(n) for n in args.pods.split(",")]
    data = Collected()
    started = datetime.datetime.now(datetime.UTC)
    apiserver_args = [
        "--max-requests-inflight=2000",
        "--max-mutating-requests-inflight=1000",
    ]
    for n in counts:
        async with ControlPlane(extra_apiserver_args=apiserver_args, start_timeout=120) as cp:
            kubeconfig = str(cp.kubeconfig_path)
            print(f"[{n} pods] creating...", file=sys.stderr, flush=True)
            data.create_seconds[n] = await populate(cp, n, args.create_concurrency)
            print(
                f"[{n} pods] created in {data.create_seconds[n]:.1f} s", file=sys.stderr, flush=True
            )
            runtimes = sorted({v.runtime for v in all_variants if v.runtime != "floor"})
            slow_runs = args.slow_runs
            if slow_runs < 0:  # auto: every run up to 20,000 pods, one run above
                slow_runs = args.runs if n <= 20_000 else 1
            for run in range(args.runs):
                data.loads.append(os.getloadavg()[0])
                for v in all_variants:
                    if v.slow and run >= slow_runs:
                        continue
                    result = await asyncio.to_thread(
                        run_sync, v, kubeconfig, "", args.slow_timeout if v.slow else 600
                    )
                    if not result.get("timeout") and result.get("objects", n) not in (n, -1):
                        print(
                            f"  WARNING {v.name}: {result.get('objects')} objects", file=sys.stderr
                        )
                    data.sync.setdefault((n, v.name), []).append(result)
                    print(
                        f"  run {run + 1} {v.name}: wall {result['wall_seconds']:.2f} s "
                        f"cpu {result['cpu_seconds']:.2f} s "
                        f"maxrss {result.get('maxrss_kb', 0) / 1024:.0f} MB"
                        + (" TIMEOUT" if result.get("timeout") else ""),
                        file=sys.stderr,
                        flush=True,
                    )
                for rt in runtimes:
                    if rt in ("official", "asyncio") and run >= slow_runs:
                        continue
                    v = next(v for v in all_variants if v.runtime == rt and not v.env)
                    result = await asyncio.to_thread(run_sync, v, kubeconfig, EMPTY_NAMESPACE, 120)
                    data.empty.setdefault((n, rt), []).append(result)
                if args.churn_seconds > 0:
                    churn = await asyncio.to_thread(
                        run_churn, binary, kubeconfig, args.churn_seconds, args.writer_concurrency
                    )
                    data.churn.setdefault(n, []).append(churn)
                    print(
                        f"  run {run + 1} churn: writer {churn['writer']['patches_per_second']:.0f}/s"
                        f" kcontrol {churn['kcontrol']['updates']} (p99 "
                        f"{churn['kcontrol']['lag_p99'] * 1e3:.0f} ms) client-go "
                        f"{churn['client-go']['updates']} (p99 "
                        f"{churn['client-go']['lag_p99'] * 1e3:.0f} ms)",
                        file=sys.stderr,
                        flush=True,
                    )
    return data, all_variants, counts, started


def finish(
    args: argparse.Namespace,
    data: Collected,
    all_variants: list[Variant],
    counts: list[int],
    started: datetime.datetime,
) -> None:
    from _reference import client_go_version

    from kcontrol.testing.envtest import K8S_VERSION

    finished = datetime.datetime.now(datetime.UTC)
    go_version = subprocess.run(
        ["go", "version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    header = (
        f"Informer cold sync and watch throughput, {started:%Y-%m-%d %H:%M}-{finished:%H:%M} UTC; "
        f"median of {args.runs} runs (official/asyncio models: all runs up to 20k pods, "
        f"else 1, unless --slow-runs); "
        f"{os.cpu_count()} CPUs, load average during runs {min(data.loads):.2f}-"
        f"{max(data.loads):.2f}; Python {platform.python_version()}, client-go "
        f"{client_go_version()} ({go_version}, default GOMAXPROCS), kube-apiserver {K8S_VERSION}."
    )
    table = header + "\n" + report(data, all_variants, counts, args.runs)
    print(table)
    if args.write:
        Path(args.write).write_text(table + "\n")
    if args.dump:
        Path(args.dump).write_text(
            json.dumps(
                {
                    "sync": {f"{k[0]}|{k[1]}": v for k, v in data.sync.items()},
                    "empty": {f"{k[0]}|{k[1]}": v for k, v in data.empty.items()},
                    "churn": {str(k): v for k, v in data.churn.items()},
                    "create_seconds": data.create_seconds,
                    "loads": data.loads,
                },
                indent=1,
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pods", default="10000,50000", help="comma-separated pod counts")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--variants", help="comma-separated variant names (default: all)")
    parser.add_argument(
        "--slow-runs",
        type=int,
        default=-1,
        help="runs that include the slow variants (default: all up to 20k pods, else 1)",
    )
    parser.add_argument("--slow-timeout", type=float, default=240.0, help="seconds")
    parser.add_argument("--churn-seconds", type=float, default=15.0)
    parser.add_argument("--writer-concurrency", type=int, default=32)
    parser.add_argument("--create-concurrency", type=int, default=32)
    parser.add_argument("--write", help="also write the table (Markdown) to this file")
    parser.add_argument("--dump", help="write every raw measurement (JSON) to this file")
    # child mode (internal)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    parser.add_argument("--namespace", default="", help=argparse.SUPPRESS)
    parser.add_argument("--transform", default="none", choices=_TRANSFORMS, help=argparse.SUPPRESS)
    parser.add_argument("--watch-list", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--churn", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--gc-freeze", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-compression", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-intern", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--page-size", type=int, default=500, help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=15.0, help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, default=32, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args)
    else:
        finish(args, *asyncio.run(orchestrate(args)))


if __name__ == "__main__":
    main()

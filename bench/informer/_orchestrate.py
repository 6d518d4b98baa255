"""Runs the informer benchmark: a control plane per object count, the pods, then the variants.

For each N a fresh envtest control plane is started (``--max-requests-inflight=2000
--max-mutating-requests-inflight=1000``) and N pods are created. Then, ``--runs`` times,
every variant runs to sync in its own process (kcontrol and client-go alternating), every
runtime once more against an empty namespace (the baseline of ``RSS/pod``), and, unless
``--churn-seconds 0``, the watch-throughput test. Everything is collected in a
:class:`Collected`; ``bench.informer._report`` turns it into tables and results.
"""

# The orchestrator imports the control plane lazily: ``--load`` renders without it.
# ruff: noqa: PLC0415

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._process import load_average, proc_cpu
from bench._results import command_line
from bench.informer import _client_go
from bench.informer._child import RESULT
from bench.informer._client_go import go_argv
from bench.informer._kcontrol import MANAGER_FLAGS
from bench.informer._variants import ROOT, Variant, py_argv, variants

NAMESPACE = "bench"
EMPTY_NAMESPACE = "empty"


def _cpu_or_nan(pid: int) -> float:
    """utime + stime of a running child (one killed at its timeout), NaN if it is gone."""
    try:
        return proc_cpu(pid)
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
        cwd=ROOT,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        cpu = _cpu_or_nan(proc.pid)
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
            cwd=ROOT,
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
        name: _Child(py_argv("kcontrol", "--churn", *flags)(kubeconfig, ""))
        for name, flags in (kcontrol or CHURN_KCONTROL).items()
    }
    children["client-go"] = _Child(go_argv(binary, "-churn")(kubeconfig, ""))
    writer = _Child(
        py_argv("writer", "--seconds", str(seconds), "--concurrency", str(concurrency))(
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
    from bench._pods import create_namespace, create_pods
    from kcontrol.client import ApiClient, ClientConfig

    config = ClientConfig.from_kube_configuration(await cp.kube_configuration())
    async with ApiClient(config, qps=0, timeout=120) as client:
        await create_namespace(client, NAMESPACE)
        await create_namespace(client, EMPTY_NAMESPACE)
        start = time.perf_counter()
        await create_pods(client, NAMESPACE, count, concurrency=concurrency)
        return time.perf_counter() - start


@dataclass
class Collected:
    """Every raw measurement of one benchmark run (what ``--dump`` writes, ``--load`` reads)."""

    sync: dict[tuple[int, str], list[dict[str, Any]]] = field(default_factory=dict)
    empty: dict[tuple[int, str], list[dict[str, Any]]] = field(default_factory=dict)
    churn: dict[int, list[dict[str, dict[str, Any]]]] = field(default_factory=dict)
    create_seconds: dict[int, float] = field(default_factory=dict)
    loads: list[float] = field(default_factory=list)
    started: datetime.datetime = field(default_factory=lambda: datetime.datetime.now(datetime.UTC))
    finished: datetime.datetime | None = None
    command: str = ""  # the command line that measured them

    def counts(self) -> list[int]:
        return sorted({n for n, _ in self.sync})

    def dump(self, path: str | Path) -> None:
        Path(path).write_text(
            json.dumps(
                {
                    "sync": {f"{k[0]}|{k[1]}": v for k, v in self.sync.items()},
                    "empty": {f"{k[0]}|{k[1]}": v for k, v in self.empty.items()},
                    "churn": {str(k): v for k, v in self.churn.items()},
                    "create_seconds": self.create_seconds,
                    "loads": self.loads,
                    "started": self.started.isoformat(),
                    "finished": self.finished.isoformat() if self.finished else None,
                    "command": self.command,
                },
                indent=1,
            )
        )

    @classmethod
    def load(cls, path: str | Path) -> Collected:
        """An earlier ``--dump``. Dumps from before ``started`` was recorded take the file's
        modification time as ``finished`` and ``started`` alike."""
        raw = json.loads(Path(path).read_text())

        def split(key: str) -> tuple[int, str]:
            n, name = key.split("|", 1)
            return int(n), name

        mtime = datetime.datetime.fromtimestamp(Path(path).stat().st_mtime, datetime.UTC)
        started = raw.get("started")
        finished = raw.get("finished")
        return cls(
            sync={split(k): v for k, v in raw["sync"].items()},
            empty={split(k): v for k, v in raw["empty"].items()},
            churn={int(k): v for k, v in raw["churn"].items()},
            create_seconds={int(k): v for k, v in raw["create_seconds"].items()},
            loads=raw["loads"],
            started=datetime.datetime.fromisoformat(started) if started else mtime,
            finished=datetime.datetime.fromisoformat(finished) if finished else mtime,
            command=raw.get("command", ""),
        )


async def orchestrate(args: argparse.Namespace) -> tuple[Collected, list[Variant], list[int]]:
    from kcontrol.envtest import ControlPlane

    binary = await asyncio.to_thread(_client_go.build)
    all_variants = variants(binary)
    if args.variants:
        wanted = {v.strip() for v in args.variants.split(",")}
        all_variants = [v for v in all_variants if v.name in wanted]
    counts = [int(n) for n in args.pods.split(",")]
    data = Collected(command=command_line("bench.informer"))
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
                data.loads.append(load_average())
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
    data.finished = datetime.datetime.now(datetime.UTC)
    return data, all_variants, counts

"""The kcontrol informer child: a SharedInformerFactory pod informer, synced and watched.

``--transform trim`` installs ``strip_managed_fields``; ``--gc-freeze``, ``--no-intern``,
``--no-compression`` and ``--watch-list`` each change one setting (see the variants in
``bench.informer``). With ``--churn`` the child reports its sync, then counts update events
between ``start`` and ``stop`` lines on stdin (the watch-throughput test).
"""

# ruff: noqa: PLC0415

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import time
from typing import Any

from bench._process import self_cpu, self_peak_rss_kb, settled_rss_kb
from bench.informer._child import Clock, emit

MANAGER_FLAGS = ("--transform", "trim", "--gc-freeze")
"""The kcontrol child as kcontrol-manager configures its informers (see kcontrol.manager)."""


def transform(name: str) -> Any:
    from kcontrol.informers import strip_managed_fields

    return {"none": None, "trim": strip_managed_fields}[name]


class CountingHandler:
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


def percentile(values: list[float], p: float) -> float:
    if not values:
        return -1.0
    values = sorted(values)
    return values[int(p * (len(values) - 1))]


async def run_kcontrol(args: argparse.Namespace, clock: Clock) -> None:
    from kcontrol.client import PODS, ApiClient, load_config
    from kcontrol.informers import ReflectorOptions, SharedInformerFactory

    trim = transform(args.transform)
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
            transform=trim,
            reflector_options=options,
        )
        informer = factory.for_resource(PODS)
        counter = CountingHandler()
        informer.add_event_handler(counter)
        async with asyncio.TaskGroup() as group:
            task = group.create_task(factory.run())
            await informer.wait_for_cache_sync()
            result = clock.sync_metrics(len(informer.indexer))
            if not args.churn:
                result["rss_settled_kb"] = settled_rss_kb()
                result["handler_adds"] = counter.adds
                emit({"mode": "sync", **result})
            else:
                emit({"mode": "synced", **result})
                await churn_window(counter)
            task.cancel()


async def churn_window(counter: CountingHandler) -> None:
    """Between stdin lines "start" and "stop": count updates; then emit the figures."""
    t0 = c0 = 0.0
    while True:
        line = (await asyncio.to_thread(sys.stdin.readline)).strip()
        if line == "start":
            counter.updates, counter.lags = 0, []
            t0, c0 = time.perf_counter(), self_cpu()
        elif line == "stop" or not line:
            elapsed = time.perf_counter() - t0
            emit(
                {
                    "mode": "churn",
                    "updates": counter.updates,
                    "seconds": elapsed,
                    "cpu_seconds": self_cpu() - c0,
                    "events_per_second": counter.updates / elapsed if elapsed else 0.0,
                    "lag_p50": percentile(counter.lags, 0.50),
                    "lag_p99": percentile(counter.lags, 0.99),
                    "lag_max": percentile(counter.lags, 1.0),
                    "maxrss_kb": self_peak_rss_kb(),
                }
            )
            return

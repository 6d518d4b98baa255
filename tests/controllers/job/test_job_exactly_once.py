"""Exactly once across a crash (issue 21): ``kcontrol-manager`` running only the job-controller
is SIGKILLed in the middle of 20 running Jobs, then started again; every finished pod is
counted once (:mod:`tests.controllers.job.exactly_once` says what is checked).

The Jobs: 8 NonIndexed and 6 Indexed that succeed, 3 NonIndexed whose pods all fail
(``backoffLimit`` 2) and 3 Indexed whose index 1 fails (``backoffLimitPerIndex`` 1); each of
4 completions, 2 at a time, every pod running 3 s.

The kill must land inside the tracking protocol - after a status write that lists finished
pods in ``uncountedTerminatedPods`` and before their finalizers are removed - and that window
lasts milliseconds. So the first process talks to the apiserver through a fault proxy: once
it has counted and released some pods normally, the proxy answers its pod PATCHes (the
finalizer removals) with 500, its syncs fail and retry with their counted pods still held,
and it is killed once Jobs' statuses hold such pods. Nothing runs the Jobs for 2 s (more
pods finish with nobody counting them), then a second process, straight to the apiserver,
takes over whatever the first left half-done.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import pytest
from aiohttp import web

from kcontrol.client import JOBS, ApiClient
from kcontrol.envtest.cluster import Cluster
from tests.controllers.job.exactly_once import (
    History,
    JobManagerProcess,
    check_exactly_once,
    job_mix,
    terminal,
    wait_all_finished,
    without_kcms_job_controller,
)
from tests.integration.helpers import new_proxy

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RELEASED_BEFORE = 6
"""Pods counted and released normally before the proxy starts refusing."""
HELD_AT_KILL = 3
"""Counted pods still holding their finalizer when the process is killed."""
DOWN = 2.0
"""Seconds with no job-controller between the kill and the second start."""


def finalizer_removal(request: web.Request) -> bool:
    return request.method == "PATCH" and "/pods/" in request.path


def kubeconfig_through(cluster: Cluster, host: str, path: Path) -> Path:
    """The cluster's admin kubeconfig with ``host`` as the server (same CA, same token)."""
    config = json.loads(cluster.kubeconfig_path.read_text())
    config["clusters"][0]["cluster"]["server"] = host
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    return path


async def test_sigkill_mid_flight_counts_every_pod_once(
    cluster: Cluster, cluster_namespace: str, client: ApiClient, tmp_path: Path
) -> None:
    ns = cluster_namespace
    cases = job_mix({"plain": 8, "indexed": 6, "failing": 3, "failing-index": 3}, completions=4)
    log_path = tmp_path / "kcontrol-manager.log"
    history = History(client, ns)
    first: JobManagerProcess | None = None
    second: JobManagerProcess | None = None
    async with (
        without_kcms_job_controller(cluster),
        history.recording(),
        new_proxy(cluster) as proxy,
    ):
        try:
            proxied = kubeconfig_through(cluster, proxy.host, tmp_path / "proxied.kubeconfig")
            first = JobManagerProcess(proxied, log_path)
            working = history.when(lambda h: h.released() >= RELEASED_BEFORE)
            await asyncio.gather(
                *(client.create(JOBS, case.manifest(), namespace=ns) for case in cases)
            )
            await asyncio.wait_for(working.wait(), timeout=120)

            proxy.inject(500, match=finalizer_removal, times=1_000_000)
            held = history.when(lambda h: h.counted_but_held() >= HELD_AT_KILL)
            await asyncio.wait_for(held.wait(), timeout=120)
            first.signal(signal.SIGKILL)
            assert await first.wait(within=30) == -signal.SIGKILL
            proxy.clear_injections()

            at_kill = {
                "unfinished jobs": sum(terminal(j) is None for j in history.jobs.values()),
                "counted pods holding the finalizer": history.counted_but_held(),
                "finished pods holding the finalizer": history.finished_with_finalizer(),
                "released pods": history.released(),
                "refused finalizer removals": proxy.count(lambda r: r.answered_by != "upstream"),
            }
            print("at the kill:", at_kill)
            assert at_kill["unfinished jobs"] > 0

            await asyncio.sleep(DOWN)  # pods finish with nobody counting them
            second = JobManagerProcess(cluster.kubeconfig_path, log_path)
            await wait_all_finished(client, ns, cases)
            await check_exactly_once(client, ns, cases, history)
            assert second.running(), "the second kcontrol-manager exited"
        finally:
            for process in (first, second):
                if process is not None:
                    process.stop()
            print(log_path.read_text(errors="replace")[-20000:])  # shown if the test fails

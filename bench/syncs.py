"""The CPU of a sync that changes nothing, per controller (``python -m bench.syncs``).

Most syncs a rollout runs find nothing to do: a pod's watch event wakes the ReplicaSet, the
ReplicaSet's status wakes the Deployment, and the sync reads the caches, computes, and
writes nothing. KCM runs such a sync for next to nothing; kcontrol pays for it in Python
(docs/benchmarks.md, "Where the small cell's CPU goes"). This times it, in process, on the
unit tests' fixtures (a fake client, caches filled by hand, a fake clock): each object
converged first, then ``--syncs`` syncs of the same key, CPU time per sync (the best of
``--repeat``), and a check that none of them wrote. Not a comparison with Go: a figure to
compare one commit's controllers with another's.

- deployment: 3 replicas, RollingUpdate 25 % / 25 %, one ReplicaSet with 3 ready pods;
- replicaset: 3 replicas, 3 ready pods;
- statefulset: 5 replicas with a claim template (the fixture's set), every pod ready;
- daemonset: RollingUpdate over 50 nodes, a ready pod on each.

``--profile`` prints cProfile's heaviest functions for each.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import cProfile
import pstats
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for fixtures in ("deployment", "replicaset", "statefulset", "daemonset"):
    sys.path.insert(0, str(ROOT / "tests" / "controllers" / fixtures))
sys.path.insert(0, str(ROOT / "tests"))

import daemonset_fixtures as ds_fixtures  # noqa: E402 - found through the path set above
import deployment_fixtures as d_fixtures  # noqa: E402
import replicaset_fixtures as rs_fixtures  # noqa: E402
import statefulset_controller_fixtures as sts_fixtures  # noqa: E402

from kcontrol.client import DEPLOYMENTS, PODS, REPLICASETS  # noqa: E402

Sync = Callable[[], Awaitable[object]]


async def deployment() -> tuple[Sync, Callable[[], int]]:
    f = d_fixtures.Fixture()
    d = d_fixtures.new_deployment("web", 3, max_surge="25%", max_unavailable="25%")
    d["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
    rs = d_fixtures.new_replica_set(d, "web-abc", 3, revision=1, available=3)
    pods = [d_fixtures.pod_of(rs, f"web-abc-{i}") for i in range(3)]
    for pod in pods:
        pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    f.seed(d, rs, *pods)
    for _ in range(3):  # converge: the status written, and seen by the cache
        await f.sync(d)
        for resource in (DEPLOYMENTS, REPLICASETS):
            for obj in f.client.tracker.objects(resource):
                f.informers.for_resource(resource).indexer.update(copy.deepcopy(obj))
    return (lambda: f.sync(d)), lambda: len(f.writes())


async def replicaset() -> tuple[Sync, Callable[[], int]]:
    f = rs_fixtures.Fixture()
    rs = rs_fixtures.new_replica_set(3)
    f.add_rs(rs)
    for i in range(3):
        f.add_pod(rs_fixtures.new_pod(f"p{i}", rs, ready=True))
    key = rs_fixtures.rs_key(rs)
    for _ in range(3):
        await f.rsc.sync(key)
        f.refresh_rs_cache()
    return (lambda: f.rsc.sync(key)), lambda: len(f.writes())


async def statefulset() -> tuple[Sync, Callable[[], int]]:
    f = sts_fixtures.Fixture()
    f.add(sts_fixtures.new_set(5))
    await f.converge()
    f.observe()
    return (lambda: f.ssc.sync(sts_fixtures.KEY)), lambda: len(f.writes())


async def daemonset() -> tuple[Sync, Callable[[], int]]:
    f = ds_fixtures.Fixture()
    f.add_nodes(50)
    f.add_ds(ds_fixtures.new_daemon_set(strategy=ds_fixtures.rolling_update()))
    for _ in range(4):
        await f.sync_and_observe()
        for pod in f.server_pods():
            f.update_server(PODS, ds_fixtures.mark_pod_ready(pod))
        f.observe()

    def writes() -> int:
        return sum(a.verb not in ("get", "list", "watch") for a in f.client.actions)

    return f.sync, writes


CONTROLLERS = {
    "deployment": deployment,
    "replicaset": replicaset,
    "statefulset": statefulset,
    "daemonset": daemonset,
}


async def measure(name: str, syncs: int, repeat: int, profile: bool) -> float:
    """CPU microseconds per sync (the best of ``repeat`` rounds); raises if any wrote."""
    sync, writes = await CONTROLLERS[name]()
    before = writes()
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        for _ in range(syncs):
            await sync()
        best = min(best, (time.process_time() - started) / syncs)
    if writes() != before:
        raise RuntimeError(f"{name}: the syncs wrote {writes() - before} times: not converged")
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(syncs):
            await sync()
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--controllers", default=",".join(CONTROLLERS))
    parser.add_argument("--syncs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    print("| controller | us per sync that changes nothing |")
    print("|---|--:|")
    for name in args.controllers.split(","):
        micros = asyncio.run(measure(name, args.syncs, args.repeat, args.profile))
        print(f"| {name} | {micros:.0f} |")


if __name__ == "__main__":
    main()

"""Takeover of running Jobs (issue 21): kube-controller-manager's job-controller runs 12 Jobs,
kcontrol's takes them over in the middle, and KCM's takes them back before they are done;
every finished pod is counted exactly once (:mod:`tests.controllers.job.exactly_once` says
what is checked).

The Jobs: 4 NonIndexed and 4 Indexed that succeed, 2 NonIndexed whose pods all fail
(``backoffLimit`` 2) and 2 Indexed whose index 1 fails (``backoffLimitPerIndex`` 1); each of
8 completions, 2 at a time, every pod running 3 s - four rounds of pods, so each controller
meets Jobs half done. The switches follow progress, not the clock: kcontrol takes over once
KCM has counted and released 12 pods, and hands back once it has created 16 pods and removed
16 finalizers itself. Neither runs while the other does (KCM restarts without its
job-controller before kcontrol's starts, and kcontrol's stops before KCM restarts with it).

The apiserver's audit log (:mod:`tests.dropin.dropin_helpers`) tells who did what: KCM's
job-controller created pods before kcontrol's first write and after its last, kcontrol
created pods and removed finalizers, and nobody else created a pod.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from pathlib import Path

import pytest

from kcontrol.client import JOBS, ApiClient
from kcontrol.envtest.cluster import Cluster
from kcontrol_controllers.job import NAME
from kcontrol_controllers.job import SPEC as JOB_SPEC
from tests.controllers.cluster_helpers import running_manager
from tests.controllers.job.exactly_once import (
    History,
    check_exactly_once,
    job_mix,
    wait_all_finished,
)
from tests.dropin.dropin_helpers import (
    NO_SECURE_SERVING,
    AuditEvent,
    AuditTail,
    describe,
    kcontrol_agent,
    sent_by,
    sent_by_kcm,
    successful_writes,
)
from tests.integration.helpers import poll

pytestmark = [pytest.mark.slow, pytest.mark.integration]

KCM_SHARE = 12
"""Pods KCM must have released before kcontrol takes over (half a round of pods)."""
KCONTROL_SHARE = 16
"""Pods kcontrol must have created, and finalizers it must have removed, before it hands
back (two thirds of a round)."""
WITHIN = 150.0


def by_kcm(event: AuditEvent) -> bool:
    return sent_by_kcm(event, NAME)


def pod_creates(events: list[AuditEvent]) -> list[AuditEvent]:
    return [e for e in events if e.resource == "pods" and not e.subresource and e.verb == "create"]


def pod_patches(events: list[AuditEvent]) -> list[AuditEvent]:
    return [e for e in events if e.resource == "pods" and not e.subresource and e.verb == "patch"]


async def test_running_jobs_taken_over_from_kcm_and_back_count_every_pod_once(
    cluster: Cluster, cluster_namespace: str, client: ApiClient, audit_log: Path
) -> None:
    ns = cluster_namespace
    cases = job_mix({"plain": 4, "indexed": 4, "failing": 2, "failing-index": 2}, completions=8)
    history = History(client, ns)
    tail = AuditTail(audit_log, ns)
    original = cluster.controllers
    assert f"-{NAME}" not in original, "KCM's job-controller runs at first"
    async with history.recording(), contextlib.AsyncExitStack() as stack:
        try:
            for case in cases:
                await client.create(JOBS, case.manifest(), namespace=ns)

            # KCM runs the Jobs until it has counted and released some pods.
            await poll(
                lambda: history.released() >= KCM_SHARE,
                within=WITHIN,
                message="KCM never released a pod",
            )
            kcm_released = history.released()

            # KCM -> kcontrol.
            await cluster.set_controller_manager_controllers((*original, f"-{NAME}"))
            manager = await stack.enter_async_context(
                running_manager(cluster, JOB_SPEC, **NO_SECURE_SERVING)
            )
            agent = kcontrol_agent(manager.identity)

            def kcontrol_did_its_share() -> bool:
                writes = [e for e in successful_writes(tail.refresh()) if sent_by(e, agent)]
                return (
                    len(pod_creates(writes)) >= KCONTROL_SHARE
                    and len(pod_patches(writes)) >= KCONTROL_SHARE
                )

            await poll(
                kcontrol_did_its_share,
                within=WITHIN,
                interval=0.2,
                message=lambda: "kcontrol never created and released pods",
            )

            # kcontrol -> KCM.
            await stack.aclose()
            await cluster.set_controller_manager_controllers(original)
            await wait_all_finished(client, ns, cases)
            await check_exactly_once(client, ns, cases, history)
        finally:
            await stack.aclose()
            if cluster.controllers != original:
                await cluster.set_controller_manager_controllers(original)

    writes = successful_writes(tail.refresh())
    print("pod writes by agent:", Counter((e.verb, e.user_agent) for e in pod_creates(writes)))
    ours = [e for e in writes if sent_by(e, agent)]
    assert ours, "kcontrol wrote nothing"
    first_ours, last_ours = min(e.received for e in ours), max(e.completed for e in ours)
    kcm_creates = [e for e in pod_creates(writes) if by_kcm(e)]
    assert [e for e in kcm_creates if e.completed < first_ours], "KCM created no pod first"
    assert [e for e in kcm_creates if e.received > last_ours], "KCM created no pod after"
    assert not [e for e in kcm_creates if first_ours <= e.received <= last_ours], describe(
        [e for e in kcm_creates if first_ours <= e.received <= last_ours]
    )
    assert len(pod_creates(ours)) >= KCONTROL_SHARE and len(pod_patches(ours)) >= KCONTROL_SHARE
    kcm_patches = [e for e in pod_patches(writes) if by_kcm(e)]
    assert [e for e in kcm_patches if e.received > last_ours], "KCM released no pod after"
    strangers = [e for e in pod_creates(writes) if not by_kcm(e) and not sent_by(e, agent)]
    assert strangers == [], describe(strangers)
    print(
        f"KCM released {kcm_released} pods before the takeover; pods created by KCM "
        f"{len(kcm_creates)}, by kcontrol {len(pod_creates(ours))}; finalizers removed by "
        f"KCM {len(kcm_patches)}, by kcontrol {len(pod_patches(ours))}"
    )

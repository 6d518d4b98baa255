"""A DaemonSet handed from kube-controller-manager's controller to kcontrol's and back
(issue 36), on kwok nodes of its own, with kcontrol-manager run as a process.

KCM's daemonset-controller places the DaemonSet on four nodes. At rest, KCM's controller
stops and ``kcontrol-manager --controllers=daemonset-controller`` starts: once it leads and has
synced, a quiet window shows nobody writing anything in the namespace (no pod, revision or
DaemonSet status: kcontrol computes the status KCM wrote), and every pod keeps its UID;
a fifth node joins and kcontrol places a pod there. Then the template changes (new pods
Ready 2 s after they start, ``maxUnavailable`` 1); once kcontrol has replaced two pods, it
stops and KCM's controller takes back and finishes the rollout.

Checked in the apiserver's audit log and the pods: kcontrol took KCM's ControllerRevision as
its own (two revisions created in all, none deleted), each node got exactly one pod per
template (five first, then five new, all created by one of the two controllers), no pod at
the new revision at the hand-back was replaced, and both controllers created pods. The new
template holds `<`, `>` and `&` (:data:`HTML_ANNOTATION`).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kcontrol.client import DAEMONSETS, ApiClient
from kcontrol.envtest.cluster import READY_DELAY_ANNOTATION, Cluster
from kcontrol.errors import NotFound
from kcontrol_controllers.daemonset import NAME
from tests.controllers.cluster_helpers import active, pods_of
from tests.controllers.daemonset.test_daemonset_cluster import (
    HASH,
    Nodes,
    daemonset,
    wait_settled,
)
from tests.dropin.dropin_helpers import (
    WORKLOAD_POLICY,
    AuditEvent,
    AuditTail,
    ManagerProcess,
    describe,
    manager_processes,
    read_audit_log,
    sent_by,
    sent_by_kcm,
    start_audited_cluster,
    successful_writes,
)
from tests.dropin.test_leadership_rollout import LEASE, logs_of, wait_holder
from tests.dropin.test_statefulset_faults import (
    KWOK_AGENT,
    QUIET,
    WITHIN,
    wait_synced,
    writes_in,
)
from tests.integration.helpers import poll

pytestmark = [pytest.mark.slow, pytest.mark.integration]

DS = "agent"
NODES = 4
HTML_ANNOTATION = {"example.com/run": "start <agent> && tail -f log > out"}
"""In the new template, which kcontrol's controller records: Go's JSON encoder writes ``<``,
``>`` and ``&`` as ``\\u003c``, ``\\u003e`` and ``\\u0026``, and KCM's DaemonSet controller
finds the current revision by comparing bytes - so kcontrol must write them the same way,
or KCM records a third revision at the hand-back and rolls the pods again."""


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path]]:
    cluster, log = start_audited_cluster(
        tmp_path_factory.mktemp("audit"), policy_text=WORKLOAD_POLICY
    )
    try:
        yield cluster, log
    finally:
        cluster.stop()


KCM_AGENT = "daemon-set-controller"
"""The user agent's last part of KCM's DaemonSet controller (``--controllers`` calls it
``daemonset-controller``)."""


def by_kcm(event: AuditEvent) -> bool:
    return sent_by_kcm(event, KCM_AGENT)


def is_pod_create(event: AuditEvent) -> bool:
    return (event.resource, event.subresource, event.verb) == ("pods", "", "create")


async def pods_by_node(client: ApiClient, ns: str) -> dict[str, tuple[str, str]]:
    """Each node's active pod of the DaemonSet: (UID, revision hash)."""
    return {
        pod["spec"].get("nodeName", ""): (pod["metadata"]["uid"], pod["metadata"]["labels"][HASH])
        for pod in active(await pods_of(client, ns, f"app={DS}"))
    }


def retemplate() -> dict[str, object]:
    return {
        "spec": {
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"annotations": {READY_DELAY_ANNOTATION: "2s", **HTML_ANNOTATION}},
                "spec": {"containers": [{"name": "app", "image": "registry.example/agent:2"}]},
            },
        }
    }


@pytest.mark.timeout(420)
async def test_daemonset_taken_over_from_kcm_and_back_replaces_no_pod(
    cluster: Cluster, cluster_namespace: str, client: ApiClient, audit_log: Path, tmp_path: Path
) -> None:
    ns = cluster_namespace
    suffix = uuid.uuid4().hex[:6]
    original = cluster.controllers
    assert f"-{NAME}" not in original, "KCM's daemonset-controller runs at first"
    nodes = Nodes(client, ns)
    tail = AuditTail(audit_log, ns)

    def creates_by(agent: str, after: datetime) -> int:
        return sum(
            1
            for e in successful_writes(tail.refresh())
            if is_pod_create(e) and e.received > after and sent_by(e, agent)
        )

    try:
        names = {await nodes.add(str(i)) for i in range(NODES)}
        await client.create(DAEMONSETS, daemonset(DS, ns), namespace=ns)
        await wait_settled(client, ns, DS, names)  # by KCM
        placed = await pods_by_node(client, ns)

        with manager_processes() as processes:

            def logs() -> str:
                return logs_of(processes)

            # At rest: KCM -> kcontrol; nobody touches a pod.
            quiet_from = datetime.now(UTC)
            await cluster.set_controller_manager_controllers((*original, f"-{NAME}"))
            manager = ManagerProcess(
                cluster, ns, LEASE, f"a-{suffix}", tmp_path, controllers=[NAME]
            )
            processes.append(manager)
            await wait_holder(client, ns, manager, logs())
            await wait_synced(manager, "daemonset", logs)
            await asyncio.sleep(QUIET)
            quiet_to = datetime.now(UTC)
            assert await pods_by_node(client, ns) == placed, "a pod was replaced at rest"

            # kcontrol acts: a node joins and gets a pod.
            names.add(await nodes.add("joined"))
            await wait_settled(client, ns, DS, names)
            joined = datetime.now(UTC)

            # A new template; once kcontrol has replaced two pods, KCM takes back.
            retemplated = datetime.now(UTC)
            await client.patch(DAEMONSETS, DS, retemplate(), namespace=ns)
            await poll(
                lambda: creates_by(manager.user_agent, retemplated) >= 2,
                within=WITHIN,
                interval=0.05,
                message=lambda: f"kcontrol never replaced a pod\n{logs()}",
            )
            manager.signal(signal.SIGTERM)
            assert await manager.wait(WITHIN) == 0, manager.log()[-3000:]
            at_handback = await pods_by_node(client, ns)
            update = {h for _, h in at_handback.values()} - {h for _, h in placed.values()}
            assert len(update) == 1, at_handback
            kept = {n: uid for n, (uid, h) in at_handback.items() if h in update}
            assert 0 < len(kept) < len(names), "the rollout was not under way at the hand-back"
            await cluster.set_controller_manager_controllers(original)
            given_back = datetime.now(UTC)
            await wait_settled(client, ns, DS, names)
            final = await pods_by_node(client, ns)
            await asyncio.sleep(1.0)  # any write still in flight has landed
            ended = datetime.now(UTC)
    finally:
        if cluster.controllers != original:
            await cluster.set_controller_manager_controllers(original)
        with contextlib.suppress(NotFound):
            await client.delete(DAEMONSETS, DS, namespace=ns)
        for name in list(nodes.names):
            await nodes.remove(name)

    assert {h for _, h in final.values()} == update
    lost = {n: uid for n, uid in kept.items() if final[n][0] != uid}
    assert lost == {}, f"pods of the new revision replaced after the hand-back: {lost}"

    events = [e for e in successful_writes(read_audit_log(audit_log, ns)) if e.received < ended]
    touched = writes_in(audit_log, ns, quiet_from, quiet_to)
    assert touched == [], describe(touched)
    revisions = [e for e in events if e.resource == "controllerrevisions"]
    assert [e.verb for e in revisions] == ["create", "create"], describe(revisions)
    first, second = revisions
    assert by_kcm(first) and first.received < quiet_from, "kcontrol made KCM's revision again"
    assert second.received > retemplated, describe(revisions)
    creates = [e for e in events if is_pod_create(e)]
    before = [e for e in creates if e.received < retemplated]
    after = [e for e in creates if e.received > retemplated]
    assert len(before) == len(names) and len(after) == len(names), describe(creates, limit=30)
    creators = [e for e in creates if not by_kcm(e) and not sent_by(e, manager.user_agent)]
    assert creators == [], describe(creators)
    ours = [e for e in creates if sent_by(e, manager.user_agent)]
    assert any(joined > e.received for e in ours), "kcontrol placed no pod on the new node"
    assert any(e.received > given_back for e in creates if by_kcm(e)), "KCM replaced no pod"
    deletes = [
        e
        for e in events
        if (e.resource, e.subresource, e.verb) == ("pods", "", "delete")
        and not e.user_agent.startswith(KWOK_AGENT)
    ]
    assert len(deletes) == len(names), describe(deletes)
    print(
        f"{len(names)} nodes; kcontrol created {len(ours)} pods, KCM "
        f"{sum(map(by_kcm, creates))}; {len(kept)} new pods kept across the hand-back"
    )

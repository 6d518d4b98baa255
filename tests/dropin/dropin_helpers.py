"""Shared pieces of the drop-in tests (issue 11): a test cluster whose apiserver writes an
audit log, a reader for that log, a recorder of a namespace's pods and ReplicaSets that checks
rolling-update bounds for many Deployments in every state they passed through, and
``kcontrol-manager`` processes that can be signalled.

Writers are told apart in the audit log by their user agent: kube-controller-manager's
controllers send ``kube-controller-manager/<version> (...) kubernetes/<commit>/<controller>``,
kcontrol-manager sends ``kcontrol-manager/<leader-election identity>/<component>``
(:mod:`kcontrol.manager._manager`; the component is a controller, ``shared-informers`` or
``leader-election``). Every audit timestamp comes from the apiserver's clock,
so writes of different processes are ordered on one clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from kcontrol.client import PODS, REPLICASETS, ApiClient, ListOptions, Object, Resource
from kcontrol.envtest.cluster import Cluster
from kcontrol.serving import ServingOptions
from tests.controllers.cluster_helpers import active, is_ready
from tests.processes import LoggedProcess, free_port

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})

AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted", "Panic"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
  resources:
  - group: ""
    resources: ["pods"]
  - group: "apps"
    resources: ["replicasets", "replicasets/*", "deployments", "deployments/*"]
  - group: "batch"
    resources: ["jobs", "jobs/*", "cronjobs", "cronjobs/*"]
  - group: "coordination.k8s.io"
    resources: ["leases"]
- level: None
"""
"""Metadata of every write to pods (not their status: kwok writes that), ReplicaSets,
Deployments, Jobs, CronJobs (subresources included) and Leases; nothing else."""

WORKLOAD_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted", "Panic"]
rules:
- level: RequestResponse
  verbs: ["create", "update", "patch"]
  resources:
  - group: ""
    resources: ["pods", "pods/status"]
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
  resources:
  - group: ""
    resources: ["pods", "persistentvolumeclaims", "persistentvolumeclaims/*"]
  - group: "apps"
    resources: ["statefulsets", "statefulsets/*", "daemonsets", "daemonsets/*",
                "controllerrevisions"]
  - group: "coordination.k8s.io"
    resources: ["leases"]
- level: None
"""
"""The policy of the StatefulSet and DaemonSet drop-in tests: the metadata of every write to
pods, claims, StatefulSets, DaemonSets, ControllerRevisions and Leases, and the bodies of pod
creates and pod (status included: kwok's) updates and patches, whose responses carry the
pod's UID and its readiness as the write left it."""

KCM_DEPLOYMENT_AGENT = "/deployment-controller"
KCM_REPLICASET_AGENT = "/replicaset-controller"


LEASE_BODIES_POLICY = AUDIT_POLICY.replace(
    """  - group: "coordination.k8s.io"
    resources: ["leases"]
""",
    "",
).replace(
    "- level: None\n",
    """- level: Request
  verbs: ["create", "update", "patch", "delete"]
  resources:
  - group: "coordination.k8s.io"
    resources: ["leases"]
- level: None
""",
)
""":data:`AUDIT_POLICY` with the Leases' request bodies: who each Lease write names as holder
(the sharded tests follow every shard's holder)."""


def start_audited_cluster(
    directory: Path, *, policy_text: str = AUDIT_POLICY, extra_apiserver_args: Iterable[str] = ()
) -> tuple[Cluster, Path]:
    """A started :class:`Cluster` (3 kwok nodes, pods Ready after 1 s, KCM without its
    workload controllers) whose apiserver audits by ``policy_text`` (:data:`AUDIT_POLICY`)
    into the returned file. Stop it with ``cluster.stop()``."""
    policy = directory / "audit-policy.yaml"
    policy.write_text(policy_text)
    log = directory / "audit.log"
    cluster = Cluster(
        nodes=3,
        pod_ready_delay=1.0,
        extra_apiserver_args=[
            f"--audit-policy-file={policy}",
            f"--audit-log-path={log}",
            "--audit-log-maxsize=0",  # one file, never rotated
            *extra_apiserver_args,
        ],
    )
    asyncio.run(cluster.start())
    return cluster, log


# -- the audit log -----------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditEvent:
    """One ResponseComplete audit event, as much of it as the tests read."""

    verb: str
    resource: str
    subresource: str
    namespace: str
    name: str
    user_agent: str
    username: str
    code: int
    received: datetime
    completed: datetime
    uri: str = ""
    """The request URI (path and query: a LIST's resourceVersion, selectors)."""
    holder: str | None = None
    """A Lease write's ``spec.holderIdentity`` (``""`` released), when the policy logs request
    bodies (:data:`LEASE_BODIES_POLICY`)."""

    @property
    def succeeded(self) -> bool:
        return 200 <= self.code < 300

    @property
    def is_write(self) -> bool:
        return self.verb in WRITE_VERBS

    def describe(self) -> str:
        target = self.resource + (f"/{self.subresource}" if self.subresource else "")
        return (
            f"{self.completed.isoformat()} {self.verb} {target} {self.namespace}/{self.name} "
            f"-> {self.code} by {self.user_agent!r}"
        )


def _timestamp(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _parse(line: bytes | str, namespace: str | None) -> AuditEvent | None:
    try:
        raw = json.loads(line)
    except ValueError:
        return None
    if raw.get("stage") != "ResponseComplete":
        return None
    ref = raw.get("objectRef") or {}
    if namespace is not None and ref.get("namespace") != namespace:
        return None
    return AuditEvent(
        verb=raw.get("verb", ""),
        resource=ref.get("resource", ""),
        subresource=ref.get("subresource", ""),
        namespace=ref.get("namespace", ""),
        name=ref.get("name", ""),
        user_agent=raw.get("userAgent", ""),
        username=(raw.get("user") or {}).get("username", ""),
        code=int((raw.get("responseStatus") or {}).get("code", 0)),
        received=_timestamp(raw["requestReceivedTimestamp"]),
        completed=_timestamp(raw["stageTimestamp"]),
        uri=raw.get("requestURI", ""),
        holder=_holder(raw.get("requestObject")),
    )


def _holder(body: object) -> str | None:
    if not isinstance(body, dict) or body.get("kind") != "Lease":
        return None
    return str((body.get("spec") or {}).get("holderIdentity") or "")


def read_audit_log(path: Path, namespace: str | None = None) -> list[AuditEvent]:
    """The ResponseComplete events in ``path`` (of ``namespace`` only, when given). A line
    still being written (the last one) is skipped."""
    with path.open("rb") as lines:
        parsed = (_parse(line, namespace) for line in lines)
        return [event for event in parsed if event is not None]


class AuditTail:
    """Follows the audit log as it grows (the events of ``namespace``, or all with ``None``):
    :meth:`refresh` parses only the lines added since the last call (cheap enough to poll
    every few tens of milliseconds)."""

    def __init__(self, path: Path, namespace: str | None) -> None:
        self.path = path
        self.namespace = namespace
        self.events: list[AuditEvent] = []
        self._offset = 0

    def refresh(self) -> list[AuditEvent]:
        with self.path.open("rb") as log:
            log.seek(self._offset)
            chunk = log.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.splitlines():
            event = _parse(line, self.namespace)
            if event is not None:
                self.events.append(event)
        return self.events


def successful_writes(events: Iterable[AuditEvent]) -> list[AuditEvent]:
    return [event for event in events if event.is_write and event.succeeded]


def kcontrol_agent(identity: str) -> str:
    """The user agent of the kcontrol-manager whose leader-election identity is ``identity``,
    up to the component (see :func:`sent_by`)."""
    return f"kcontrol-manager/{identity}"


def sent_by(event: AuditEvent, agent: str) -> bool:
    """Whether ``event`` was sent by ``agent`` (:func:`kcontrol_agent`) or one of its
    components (``<agent>/<component>``)."""
    return event.user_agent == agent or event.user_agent.startswith(f"{agent}/")


def sent_by_kcm(event: AuditEvent, controller: str) -> bool:
    """Whether ``event`` was sent by kube-controller-manager's ``controller``
    (``kube-controller-manager/<version> (...) kubernetes/<commit>/<controller>``)."""
    agent = event.user_agent
    return agent.startswith("kube-controller-manager/") and agent.endswith(f"/{controller}")


def describe(events: Iterable[AuditEvent], limit: int = 20) -> str:
    listed = list(events)
    lines = [event.describe() for event in listed[:limit]]
    if len(listed) > limit:
        lines.append(f"... and {len(listed) - limit} more")
    return "\n".join(lines)


# -- rolling-update bounds over a whole namespace ----------------------------------------------


@dataclass(frozen=True)
class Bounds:
    """One Deployment's rolling-update bounds: ``replicas + maxSurge`` and ``replicas -
    maxUnavailable``."""

    max_total: int
    min_ready: int


@dataclass
class RolloutReport:
    """What :meth:`NamespaceHistory.check` found, per Deployment (the ``app`` label)."""

    violations: list[str]
    states: int
    max_replicas: dict[str, int]
    max_active_pods: dict[str, int]
    min_ready_pods: dict[str, int]
    pod_surge_states: int
    """States in which a Deployment had more active pods than ``max_total`` (see
    :class:`NamespaceHistory`: upstream allows that while old pods await deletion)."""


class NamespaceHistory:
    """Records every state of a namespace's pods and ReplicaSets, then checks each
    Deployment's rolling-update bounds in every one of them.

    One LIST and one watch per resource, from :meth:`__aenter__` to the end of the block;
    :meth:`check` replays the events in resourceVersion order (one etcd: its revisions order
    writes across resources) and checks, after each event, for each Deployment in ``bounds``
    (pods and ReplicaSets grouped by their ``app`` label):

    - the sum of its ReplicaSets' ``spec.replicas`` is at most ``max_total`` (replicas +
      maxSurge) - the bound kube-controller-manager's deployment controller keeps;
    - its ready pods (active ones: neither terminating nor finished; minReadySeconds is 0,
      so ready is available) are at least ``min_ready`` (replicas - maxUnavailable);
    - no ReplicaSet has more active pods than the most replicas it has ever been asked for
      (two replicaset controllers creating pods for one ReplicaSet would break this).

    The number of active pods is *not* bounded by ``max_total``: upstream's deployment
    controller counts ``spec.replicas``, not pods, so a new ReplicaSet may be scaled up (and
    its pods created) while a pod the old ReplicaSet was scaled down for is not yet deleted.
    kube-controller-manager's own controllers do that too (20 parallel rollouts of 3
    replicas, maxSurge 1: 5 active pods seen); :attr:`RolloutReport.pod_surge_states` counts
    such states.
    """

    def __init__(self, client: ApiClient, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self._initial: dict[str, list[Object]] = {}
        self._events: list[tuple[int, int, str, str, Object]] = []
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> NamespaceHistory:
        for resource in (PODS, REPLICASETS):
            listed = await self.client.list(resource, namespace=self.namespace)
            self._initial[resource.plural] = listed["items"]
            self._tasks.append(
                asyncio.create_task(self._watch(resource, listed["metadata"]["resourceVersion"]))
            )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for task in self._tasks:
            task.cancel()
        results = await asyncio.gather(*self._tasks, return_exceptions=True)
        for result in results:
            if isinstance(result, Exception):
                raise result

    @property
    def events(self) -> int:
        return len(self._events)

    async def _watch(self, resource: Resource, version: str) -> None:
        while True:  # a watch may end (timeouts); resume from the last version seen
            async with self.client.watch(
                resource,
                namespace=self.namespace,
                options=ListOptions(resource_version=version, timeout_seconds=300),
            ) as stream:
                async for event in stream:
                    obj = event.object
                    version = obj["metadata"].get("resourceVersion", version)
                    if event.type == "BOOKMARK":
                        continue
                    if event.type == "ERROR":
                        raise AssertionError(f"{resource.plural} watch failed: {obj}")
                    order = len(self._events)
                    self._events.append((int(version), order, resource.plural, event.type, obj))

    def check(self, bounds: dict[str, Bounds]) -> RolloutReport:
        """Replay the recorded history and check ``bounds`` in every state (class docstring)."""
        state: dict[str, dict[str, Object]] = {
            plural: {obj["metadata"]["uid"]: obj for obj in items}
            for plural, items in self._initial.items()
        }
        report = RolloutReport([], 0, {}, {}, {}, 0)
        most_asked: dict[str, int] = {}

        def remember(rs: Object) -> None:
            uid = rs["metadata"]["uid"]
            most_asked[uid] = max(most_asked.get(uid, 0), rs["spec"].get("replicas", 1))

        def check_group(group: str, version: int) -> None:
            bound = bounds[group]
            sets = [rs for rs in state["replicasets"].values() if _app(rs) == group]
            pods = [pod for pod in active(list(state["pods"].values())) if _app(pod) == group]
            replicas = sum(rs["spec"].get("replicas", 1) for rs in sets)
            ready = sum(map(is_ready, pods))
            report.states += 1
            report.max_replicas[group] = max(report.max_replicas.get(group, 0), replicas)
            report.max_active_pods[group] = max(report.max_active_pods.get(group, 0), len(pods))
            report.min_ready_pods[group] = min(report.min_ready_pods.get(group, ready), ready)
            report.pod_surge_states += len(pods) > bound.max_total
            if replicas > bound.max_total:
                report.violations.append(
                    f"rv {version} {group}: ReplicaSets ask for {replicas} > {bound.max_total}"
                )
            if ready < bound.min_ready:
                report.violations.append(
                    f"rv {version} {group}: {ready} ready pods < {bound.min_ready}"
                )
            for rs in sets:
                uid = rs["metadata"]["uid"]
                owned = sum(_controller_uid(pod) == uid for pod in pods)
                if owned > most_asked[uid]:
                    report.violations.append(
                        f"rv {version} {group}: ReplicaSet {rs['metadata']['name']} has "
                        f"{owned} active pods, more than the {most_asked[uid]} it was ever "
                        f"asked for"
                    )

        for rs in state["replicasets"].values():
            remember(rs)
        for group in bounds:
            check_group(group, 0)
        for version, _, plural, kind, obj in sorted(self._events, key=lambda e: e[:2]):
            uid = obj["metadata"]["uid"]
            if kind == "DELETED":
                state[plural].pop(uid, None)
            else:
                state[plural][uid] = obj
                if plural == "replicasets":
                    remember(obj)
            group = _app(obj)
            if group in bounds:
                check_group(group, version)
        return report


def _app(obj: Object) -> str:
    return str((obj["metadata"].get("labels") or {}).get("app", ""))


def _controller_uid(obj: Object) -> str | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return ref.get("uid")  # type: ignore[no-any-return]
    return None


# -- kcontrol-manager processes ------------------------------------------------------------------


LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 4.0, 3.0, 0.5

NO_SECURE_SERVING: dict[str, ServingOptions] = {"serving": ServingOptions()}
"""Manager options that turn HTTPS serving off (a fixed default port that two managers on one
machine cannot share): the tests read the plain HTTP ``--metrics-port`` instead."""


class ManagerProcess(LoggedProcess):
    """``kcontrol-manager`` with ``controllers`` (the deployment and replicaset controllers
    by default), electing on the Lease ``namespace/lease`` as ``identity`` (``extra_args``:
    more flags, e.g. ``--shards``), in its own session, logging JSON lines to
    ``<log_dir>/<identity>.log``."""

    def __init__(
        self,
        cluster: Cluster,
        namespace: str,
        lease: str,
        identity: str,
        log_dir: Path,
        extra_args: Iterable[str] = (),
        *,
        controllers: Iterable[str] = ("deployment-controller", "replicaset-controller"),
    ) -> None:
        self.identity = identity
        self.port = free_port()
        super().__init__(
            [
                str(Path(sys.executable).parent / "kcontrol-manager"),
                f"--kubeconfig={cluster.kubeconfig_path}",
                f"--controllers={','.join(controllers)}",
                "--leader-elect=true",
                f"--leader-elect-lease-duration={LEASE_DURATION:g}s",
                f"--leader-elect-renew-deadline={RENEW_DEADLINE:g}s",
                f"--leader-elect-retry-period={RETRY_PERIOD * 1000:g}ms",
                f"--leader-elect-resource-namespace={namespace}",
                f"--leader-elect-resource-name={lease}",
                f"--leader-elect-identity={identity}",
                "--bind-address=127.0.0.1",
                f"--metrics-port={self.port}",
                "--secure-port=0",
                "--log-format=json",
                "-v=2",
                *extra_args,
            ],
            log_dir / f"{identity}.log",
        )

    @property
    def user_agent(self) -> str:
        return kcontrol_agent(self.identity)


@contextlib.contextmanager
def manager_processes() -> Iterator[list[ManagerProcess]]:
    """A list to put :class:`ManagerProcess` es in; every one still running at the end is
    killed."""
    processes: list[ManagerProcess] = []
    try:
        yield processes
    finally:
        for process in processes:
            process.stop()

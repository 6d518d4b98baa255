"""kwok's configuration for the test cluster: fake nodes, and pod lifecycles tests can steer.

kwok (sigs.k8s.io/kwok) plays kubelet for nodes that exist only as API objects: it moves the
pods the scheduler binds to them through *stages* (``kwok.x-k8s.io/v1alpha1`` ``Stage``
objects), each a jq selector over the object, a delay, and the status to patch in next (a Go
template, strategic-merge-patched into ``status``). Giving any stage replaces all of kwok's
built-in ones, so this module writes the whole set: node start-up and heartbeats, and the pod
lifecycle below.

Pods without the :data:`BEHAVIOR_LABEL` go ``Pending`` (with an IP) at once, then ``Running``
and ``Ready`` after the cluster's ready delay. A pod chooses otherwise through its labels and
annotations (set them in a pod template):

- label ``kwok.kcontrol.io/behavior``:

  - ``never-ready``: ``Running``, its containers running but never ready;
  - ``fail``: ``Running`` (not ready), then ``Failed`` after the fail delay;
  - ``restart``: ready, then every restart delay its containers restart (``restartCount`` + 1,
    not ready) and become ready again after the ready delay: a crash-looping pod;

- annotations (Go durations such as ``"1500ms"``, ``"5s"``): :data:`READY_DELAY_ANNOTATION`
  overrides the cluster's ready delay, :data:`FAIL_DELAY_ANNOTATION` (default 1 s),
  :data:`RESTART_DELAY_ANNOTATION` (default 5 s), and :data:`DELETE_DELAY_ANNOTATION`: how long
  a deleted pod stays ``Terminating`` before kwok removes it (default: removed at once, as
  kwok's own fast stages do; a kubelet would honour the grace period instead).

Pods whose ``restartPolicy`` is ``Never`` or ``OnFailure`` (Job pods) and that have no
behaviour label run their first container as its command says, emulated: a kwok stage reads
the command (``exit 3``, ``sleep infinity``, a test of ``$JOB_COMPLETION_INDEX``, ...), writes
the decided exit code and run time on the pod (:data:`EXIT_CODE_ANNOTATION`,
:data:`RUN_TIME_ANNOTATION`), and the pod then succeeds, fails or restarts its container
accordingly. :mod:`kcontrol.envtest.cluster._kwok_job` states the grammar and the outcomes.

Stages act only on pods bound to nodes kwok manages (:data:`NODE_ANNOTATION`).

kwok itself is configured (``KwokConfiguration``) to play up to :data:`POD_PLAY_PARALLELISM`
pod stages at once rather than its default 4: a cluster's kubelets act on their own pods in
parallel, and with 4 workers for 20 nodes kwok fell seconds behind in a 1,000-pod rollout
(a deleted pod stayed Terminating 2.7 s at the median behind kube-controller-manager and
8.5 s behind kcontrol-manager, whose larger CPU use slowed kwok further on the shared
machine), so the states a controller observed depended on kwok's backlog.
"""

from __future__ import annotations

import json
from typing import Any

from kcontrol.envtest.cluster._kwok_job import (
    DECIDE_TEMPLATE,
    EXIT_CLASS,
    EXIT_CODE_ANNOTATION,
    KILLED_STATUS,
    RESTARTED_STATUS,
    RUN_TIME_ANNOTATION,
    SUCCEEDED_OR_FAILED_STATUS,
)

__all__ = [
    "BEHAVIOR_FAIL",
    "BEHAVIOR_LABEL",
    "BEHAVIOR_NEVER_READY",
    "BEHAVIOR_RESTART",
    "DELETE_DELAY_ANNOTATION",
    "EXIT_CODE_ANNOTATION",
    "FAIL_DELAY_ANNOTATION",
    "NODE_ANNOTATION",
    "READY_DELAY_ANNOTATION",
    "RESTART_DELAY_ANNOTATION",
    "RUN_TIME_ANNOTATION",
    "kwok_config",
    "node_manifest",
]

BEHAVIOR_LABEL = "kwok.kcontrol.io/behavior"
"""The pod label choosing a lifecycle other than "Running and Ready after the ready delay"."""
BEHAVIOR_NEVER_READY = "never-ready"
""":data:`BEHAVIOR_LABEL` value: Running, its containers running but never ready."""
BEHAVIOR_FAIL = "fail"
""":data:`BEHAVIOR_LABEL` value: Running (not ready), then Failed after the fail delay."""
BEHAVIOR_RESTART = "restart"
""":data:`BEHAVIOR_LABEL` value: ready, then its containers restart every restart delay (a
crash loop: ``restartCount`` + 1, not ready, ready again after the ready delay)."""
READY_DELAY_ANNOTATION = "kwok.kcontrol.io/ready-delay"
"""Pod annotation, a Go duration (``"1500ms"``): start -> Ready, over the cluster's delay."""
FAIL_DELAY_ANNOTATION = "kwok.kcontrol.io/fail-delay"
"""Pod annotation, a Go duration: how long a ``fail`` pod runs before it fails (1 s)."""
RESTART_DELAY_ANNOTATION = "kwok.kcontrol.io/restart-delay"
"""Pod annotation, a Go duration: the period of a ``restart`` pod's restarts (5 s)."""
DELETE_DELAY_ANNOTATION = "kwok.kcontrol.io/delete-delay"
"""Pod annotation, a Go duration: how long a deleted pod stays Terminating (default: none)."""

NODE_ANNOTATION = "kwok.x-k8s.io/node"
"""Nodes annotated ``kwok.x-k8s.io/node: fake`` are the ones kwok manages (its convention)."""

_BEHAVIOR = f'.metadata.labels["{BEHAVIOR_LABEL}"]'
_NOT_DELETED = {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"}
_READY = '.status.conditions.[] | select( .type == "Ready" ) | .status'
_JOB_POD = f'.spec.restartPolicy != "Always" and {_BEHAVIOR} == null'
"""Pods whose container's end is emulated: restartPolicy Never or OnFailure, no behaviour."""
_UNDECIDED = f'({_JOB_POD}) and .metadata.annotations["{EXIT_CODE_ANNOTATION}"] == null'
_DEFAULT_RUN_TIME_MS = 1_000


def _annotation(key: str) -> str:
    return f'.metadata.annotations["{key}"]'


def _in(key: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(values)}


def _is(key: str, value: bool) -> dict[str, Any]:
    """``key`` (a jq boolean expression) evaluates to ``value``."""
    return _in(key, "true" if value else "false")


def _stage(
    name: str,
    kind: str,
    selector: list[dict[str, Any]],
    next_: dict[str, Any],
    *,
    delay_ms: int = 0,
    delay_from: str | None = None,
    jitter_ms: int = 0,
) -> dict[str, Any]:
    delay: dict[str, Any] = {}
    if delay_ms:
        delay["durationMilliseconds"] = delay_ms
    if delay_from:
        delay["durationFrom"] = {"expressionFrom": _annotation(delay_from)}
    if jitter_ms:
        delay["jitterDurationMilliseconds"] = jitter_ms
    spec: dict[str, Any] = {
        "resourceRef": {"apiGroup": "v1", "kind": kind},
        "selector": {"matchExpressions": selector},
        "next": next_,
    }
    if delay:
        spec["delay"] = delay
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Stage",
        "metadata": {"name": name},
        "spec": spec,
    }


# -- status templates (Go text/template producing YAML; kwok adds Now, NodeIP, PodIPWith...) --

_NODE_CONDITIONS = """\
{{ $now := Now }}
{{ $since := or .metadata.creationTimestamp $now }}
conditions:
{{ range NodeConditions }}
- lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $since | Quote }}
  message: {{ .message | Quote }}
  reason: {{ .reason | Quote }}
  status: {{ .status | Quote }}
  type: {{ .type | Quote }}
{{ end }}
"""

_NODE_STATUS = (
    _NODE_CONDITIONS
    + """\
addresses:
- address: {{ NodeIP | Quote }}
  type: InternalIP
- address: {{ NodeName | Quote }}
  type: Hostname
allocatable:
{{ with .status.allocatable }}{{ YAML . 1 }}{{ else }}
  cpu: "32"
  memory: 256Gi
  pods: "110"
{{ end }}
capacity:
{{ with .status.capacity }}{{ YAML . 1 }}{{ else }}
  cpu: "32"
  memory: 256Gi
  pods: "110"
{{ end }}
nodeInfo:
  architecture: amd64
  operatingSystem: linux
  kubeletVersion: fake
  kubeProxyVersion: fake
phase: Running
"""
)

_NODE_HEARTBEAT = _NODE_CONDITIONS
"""A heartbeat only renews the conditions (kwok renews the node's Lease itself)."""


_POD_PENDING = """\
{{ $now := Now }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Initialized
- lastTransitionTime: {{ $now | Quote }}
  reason: ContainersNotReady
  status: "False"
  type: Ready
- lastTransitionTime: {{ $now | Quote }}
  reason: ContainersNotReady
  status: "False"
  type: ContainersReady
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    waiting:
      reason: ContainerCreating
{{ end }}
hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) \
( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
phase: Pending
startTime: {{ $now | Quote }}
"""


def _pod_running(*, ready: bool, restart: bool = False) -> str:
    """Running containers, ready or not; ``restart`` bumps each container's restartCount."""
    status = '"True"' if ready else '"False"'
    reason = "" if ready else "\n  reason: ContainersNotReady"
    count = (
        "{{ add (or (index $root.status.containerStatuses $i).restartCount 0) 1 }}"
        if restart
        else "{{ or (index $root.status.containerStatuses $i).restartCount 0 }}"
    )
    last_state = (
        """
  lastState:
    terminated:
      exitCode: 1
      finishedAt: {{ $now | Quote }}
      reason: Error
      startedAt: {{ $now | Quote }}"""
        if restart
        else ""
    )
    return f"""\
{{{{ $now := Now }}}}
{{{{ $root := . }}}}
conditions:
- lastTransitionTime: {{{{ $now | Quote }}}}{reason}
  status: {status}
  type: Ready
- lastTransitionTime: {{{{ $now | Quote }}}}{reason}
  status: {status}
  type: ContainersReady
containerStatuses:
{{{{ range $i, $c := .spec.containers }}}}
- image: {{{{ $c.image | Quote }}}}
  name: {{{{ $c.name | Quote }}}}
  ready: {"true" if ready else "false"}
  restartCount: {count}
  started: true{last_state}
  state:
    running:
      startedAt: {{{{ $now | Quote }}}}
{{{{ end }}}}
phase: Running
"""


_POD_FAILED = """\
{{ $now := Now }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  reason: PodFailed
  status: "False"
  type: Ready
- lastTransitionTime: {{ $now | Quote }}
  reason: PodFailed
  status: "False"
  type: ContainersReady
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    terminated:
      exitCode: 1
      finishedAt: {{ $now | Quote }}
      reason: Error
      startedAt: {{ $now | Quote }}
{{ end }}
phase: Failed
"""


def _stages(ready_delay_ms: int) -> list[dict[str, Any]]:
    not_ready = {"key": _READY, "operator": "NotIn", "values": ["True"]}
    pending = _in(".status.phase", "Pending")
    running = _in(".status.phase", "Running")
    has_ip = {"key": ".status.podIP", "operator": "Exists"}
    return [
        _stage("node-initialize", "Node", [not_ready], {"statusTemplate": _NODE_STATUS}),
        _stage(
            "node-heartbeat",
            "Node",
            [_in(".status.phase", "Running"), _in(_READY, "True")],
            {"statusTemplate": _NODE_HEARTBEAT},
            delay_ms=20_000,
            jitter_ms=25_000,
        ),
        _stage(
            "pod-job-decide",
            "Pod",
            [_NOT_DELETED, _is(_UNDECIDED, True)],
            {"patches": [{"root": "metadata", "template": DECIDE_TEMPLATE}]},
        ),
        _stage(
            "pod-create",
            "Pod",
            [
                _NOT_DELETED,
                {"key": ".status.podIP", "operator": "DoesNotExist"},
                _is(_UNDECIDED, False),
            ],
            {"statusTemplate": _POD_PENDING},
        ),
        _stage(
            "pod-ready",
            "Pod",
            [_NOT_DELETED, pending, has_ip, {"key": _BEHAVIOR, "operator": "DoesNotExist"}],
            {"statusTemplate": _pod_running(ready=True)},
            delay_ms=ready_delay_ms,
            delay_from=READY_DELAY_ANNOTATION,
        ),
        _stage(
            "pod-running-unready",
            "Pod",
            [_NOT_DELETED, pending, has_ip, _in(_BEHAVIOR, BEHAVIOR_NEVER_READY, BEHAVIOR_FAIL)],
            {"statusTemplate": _pod_running(ready=False)},
            delay_ms=ready_delay_ms,
            delay_from=READY_DELAY_ANNOTATION,
        ),
        _stage(
            "pod-fail",
            "Pod",
            [_NOT_DELETED, running, _in(_BEHAVIOR, BEHAVIOR_FAIL)],
            {"statusTemplate": _POD_FAILED},
            delay_ms=1_000,
            delay_from=FAIL_DELAY_ANNOTATION,
        ),
        _stage(
            "pod-restart-ready",
            "Pod",
            [
                _NOT_DELETED,
                _in(".status.phase", "Pending", "Running"),
                has_ip,
                not_ready,
                _in(_BEHAVIOR, BEHAVIOR_RESTART),
            ],
            {"statusTemplate": _pod_running(ready=True)},
            delay_ms=ready_delay_ms,
            delay_from=READY_DELAY_ANNOTATION,
        ),
        _stage(
            "pod-restart",
            "Pod",
            [_NOT_DELETED, running, _in(_READY, "True"), _in(_BEHAVIOR, BEHAVIOR_RESTART)],
            {"statusTemplate": _pod_running(ready=False, restart=True)},
            delay_ms=5_000,
            delay_from=RESTART_DELAY_ANNOTATION,
        ),
        *_job_stages(),
        _stage(
            "pod-delete",
            "Pod",
            [
                {"key": ".metadata.deletionTimestamp", "operator": "Exists"},
                {"key": ".metadata.finalizers", "operator": "DoesNotExist"},
            ],
            {"delete": True},
            delay_from=DELETE_DELAY_ANNOTATION,
        ),
    ]


def _job_stages() -> list[dict[str, Any]]:
    """A Job pod's container ends as decided (see :mod:`kcontrol.envtest.cluster._kwok_job`)."""
    job_pod = [{"key": _BEHAVIOR, "operator": "DoesNotExist"}]
    ends = [_NOT_DELETED, _in(".status.phase", "Running"), *job_pod]
    return [
        _stage(
            "pod-job-complete",
            "Pod",
            [*ends, _in(".spec.restartPolicy", "Never", "OnFailure"), _in(EXIT_CLASS, "zero")],
            {"statusTemplate": SUCCEEDED_OR_FAILED_STATUS},
            delay_ms=_DEFAULT_RUN_TIME_MS,
            delay_from=RUN_TIME_ANNOTATION,
        ),
        _stage(
            "pod-job-fail",
            "Pod",
            [*ends, _in(".spec.restartPolicy", "Never"), _in(EXIT_CLASS, "nonzero")],
            {"statusTemplate": SUCCEEDED_OR_FAILED_STATUS},
            delay_ms=_DEFAULT_RUN_TIME_MS,
            delay_from=RUN_TIME_ANNOTATION,
        ),
        _stage(
            "pod-job-restart",
            "Pod",
            [*ends, _in(".spec.restartPolicy", "OnFailure"), _in(EXIT_CLASS, "nonzero")],
            {"statusTemplate": RESTARTED_STATUS},
            delay_ms=_DEFAULT_RUN_TIME_MS,
            delay_from=RUN_TIME_ANNOTATION,
        ),
        _stage(
            "pod-job-kill",
            "Pod",
            [
                {"key": ".metadata.deletionTimestamp", "operator": "Exists"},
                {"key": ".metadata.finalizers", "operator": "Exists"},
                _in(".status.phase", "Pending", "Running"),
                _in(".spec.restartPolicy", "Never", "OnFailure"),
                *job_pod,
            ],
            {"statusTemplate": KILLED_STATUS},
            delay_from=DELETE_DELAY_ANNOTATION,
        ),
    ]


POD_PLAY_PARALLELISM = 32
"""Pod stages kwok plays at once (kwok's ``podPlayStageParallelism``; its default is 4)."""


def kwok_config(*, ready_delay: float) -> str:
    """kwok's ``--config`` file: its options (:data:`POD_PLAY_PARALLELISM`) and every stage
    above, pods ready after ``ready_delay`` seconds.

    Each document is JSON, which is YAML; kwok reads a multi-document stream.
    """
    if ready_delay < 0:
        raise ValueError("ready_delay must not be negative")
    # A KwokConfiguration given replaces kwok's defaulted options rather than merging with
    # them (kwok v0.8 then starts with zero workers), so they are all spelled out: kwok's
    # defaults (pkg/apis/config/v1alpha1) but for the pod stages' parallelism.
    options = {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokConfiguration",
        "options": {
            "cidr": "10.0.0.0/24",
            "manageAllNodes": False,
            "enableDebuggingHandlers": True,
            "enableContentionProfiling": False,
            "enableProfilingHandler": True,
            "podPlayStageParallelism": POD_PLAY_PARALLELISM,
            "nodePlayStageParallelism": 4,
            "nodeLeaseParallelism": 4,
            "podsOnNodeSyncParallelism": 1,
            "enablePodsOnNodeSyncListPager": True,
            "enablePodsOnNodeSyncStreamWatch": False,
        },
    }
    documents = [options, *_stages(round(ready_delay * 1000))]
    return "\n---\n".join(json.dumps(document, indent=1) for document in documents) + "\n"


def node_manifest(name: str, *, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A Node that kwok manages: annotated as kwok's, untainted, with room for 110 pods.

    ``status`` is set at creation (nodes keep the status they are created with) so the
    scheduler can use the node as soon as kwok reports it ready.
    """
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {NODE_ANNOTATION: "fake"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                **(labels or {}),
            },
        },
        "spec": {},
        "status": {"allocatable": dict(resources), "capacity": dict(resources)},
    }

"""Objects for the DaemonSet tests, shaped as upstream daemon_controller_test.go builds them
(``newDaemonSet``, ``newNode``, ``newPod``, the update strategies), as API dicts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kcontrol.metatime import format_time

SIMPLE_DAEMON_SET_LABEL = {"name": "simple-daemon", "type": "production"}
SIMPLE_DAEMON_SET_LABEL2 = {"name": "simple-daemon", "type": "test"}

NO_SCHEDULE_TOLERATIONS = [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}]
NO_SCHEDULE_TAINTS = [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}]
NO_EXECUTE_TAINTS = [{"key": "dedicated", "value": "user1", "effect": "NoExecute"}]

NOW = datetime(2026, 11, 28, 12, 0, 0, tzinfo=UTC)


def on_delete() -> dict[str, Any]:
    return {"type": "OnDelete"}


def rolling_update(max_unavailable: int | str = 1) -> dict[str, Any]:
    return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": max_unavailable}}


def surge(max_surge: int | str) -> dict[str, Any]:
    """upstream ``newUpdateSurge``: unavailability 0, the given surge."""
    return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": max_surge}}


def update_strategies() -> list[dict[str, Any]]:
    return [on_delete(), rolling_update()]


def new_daemon_set(
    name: str = "foo", strategy: dict[str, Any] | None = None, **template_spec: Any
) -> dict[str, Any]:
    """A DaemonSet in ``default`` selecting :data:`SIMPLE_DAEMON_SET_LABEL`; ``template_spec``
    is merged into the pod template's spec."""
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "foo/bar"}],
        "dnsPolicy": "Default",
        **template_spec,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "revisionHistoryLimit": 2,
            "updateStrategy": strategy if strategy is not None else on_delete(),
            "selector": {"matchLabels": dict(SIMPLE_DAEMON_SET_LABEL)},
            "template": {"metadata": {"labels": dict(SIMPLE_DAEMON_SET_LABEL)}, "spec": spec},
        },
    }


def new_node(
    name: str,
    labels: dict[str, str] | None = None,
    *,
    taints: list[dict[str, Any]] | None = None,
    unschedulable: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if labels is not None:
        metadata["labels"] = dict(labels)
    spec: dict[str, Any] = {}
    if taints is not None:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": spec,
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def daemon_pod(
    name: str,
    node_name: str = "",
    labels: dict[str, str] | None = None,
    *,
    created: datetime | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    if labels is not None:
        metadata["labels"] = dict(labels)
    if created is not None:
        metadata["creationTimestamp"] = format_time(created)
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "foo/bar"}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def mark_pod_ready(pod: dict[str, Any], since: datetime = NOW) -> dict[str, Any]:
    pod["status"] = {
        "phase": "Running",
        "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": format_time(since)}
        ],
    }
    return pod

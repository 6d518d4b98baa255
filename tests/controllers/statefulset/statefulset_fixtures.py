"""StatefulSets and pods for the StatefulSet helpers' tests, after upstream's test helpers
(``newStatefulSet``, ``newStatefulSetWithVolumes``): the set ``foo`` in ``default`` with the
claim template ``datadir``, a ``home`` hostPath volume and the governing service
``governingsvc``."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from kcontrol.client import Object
from kcontrol.metatime import format_time

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def new_pvc(name: str) -> Object:
    """A claim template, as upstream's ``newPVC``."""
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"resources": {"requests": {"storage": "1"}}},
    }


def new_stateful_set(
    replicas: int = 3,
    name: str = "foo",
    *,
    claims: tuple[str, ...] = ("datadir",),
    pod_volumes: tuple[str, ...] = ("home",),
) -> Object:
    """A StatefulSet as upstream's ``newStatefulSetWithVolumes``: one claim template per
    name in ``claims``, a hostPath volume per name in ``pod_volumes``."""
    mounts = [{"name": m, "mountPath": f"/tmp/{m}"} for m in (*claims, *pod_volumes)]
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default", "uid": "test", "generation": 1},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"foo": "bar"}},
            "template": {
                "metadata": {"labels": {"foo": "bar"}},
                "spec": {
                    "containers": [{"name": "nginx", "image": "nginx", "volumeMounts": mounts}],
                    "volumes": [
                        {"name": v, "hostPath": {"path": f"/tmp/{v}"}} for v in pod_volumes
                    ],
                },
            },
            "volumeClaimTemplates": [new_pvc(c) for c in claims],
            "serviceName": "governingsvc",
            "updateStrategy": {"type": "RollingUpdate"},
            "persistentVolumeClaimRetentionPolicy": {
                "whenScaled": "Retain",
                "whenDeleted": "Retain",
            },
            "revisionHistoryLimit": 2,
        },
    }


def make_running(
    pod: Object, *, ready: bool = True, ready_for: timedelta = timedelta(hours=1)
) -> Object:
    """``pod`` (modified and returned) as the API server reports a running pod, ready for
    ``ready_for`` at :data:`NOW` when ``ready``."""
    condition: dict[str, Any] = {"type": "Ready", "status": "True" if ready else "False"}
    condition["lastTransitionTime"] = format_time(NOW - ready_for)
    pod["status"] = {"phase": "Running", "conditions": [condition]}
    return pod


def terminate(pod: Object) -> Object:
    """``pod`` (modified and returned) with a deletion timestamp."""
    pod["metadata"]["deletionTimestamp"] = format_time(NOW)
    return pod


def owner_ref(
    name: str, uid: str, *, api_version: str = "v1", kind: str = "Pod", controller: bool | None
) -> dict[str, Any]:
    """An owner reference; ``controller=None`` leaves the field out."""
    ref: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}
    if controller is not None:
        ref["controller"] = controller
    return ref


def obj(name: str, uid: str = "", **spec: Any) -> Object:
    """A bare object with a name, a UID and (as keyword arguments) a spec."""
    result: Object = {"metadata": {"name": name}}
    if uid:
        result["metadata"]["uid"] = uid
    if spec:
        result["spec"] = spec
    return result


# The ControllerRevision data kube-controller-manager 1.33 wrote for the compatibility test's
# set, and the name it gave the revision (stateful_set_compatibility_test.go).
COMPAT_DATA_1_33 = (
    '{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"test":"value"},'
    '"creationTimestamp":null,"labels":{"app":"foo"}},"spec":{"containers":[{"image":"test",'
    '"imagePullPolicy":"Always","name":"test","resources":{},"terminationMessagePath":'
    '"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst",'
    '"restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},'
    '"terminationGracePeriodSeconds":30}}}}'
)
COMPAT_NAME_1_33 = "test-c77f6d978"


def compat_set(*, creation_timestamp_null: bool) -> Object:
    """The compatibility test's set as an API server returns it: 1.33 wrote
    ``creationTimestamp: null`` into the template's metadata, 1.34 and later do not."""
    template = json.loads(COMPAT_DATA_1_33)["spec"]["template"]
    del template["$patch"]
    if not creation_timestamp_null:
        del template["metadata"]["creationTimestamp"]
    return {
        "metadata": {"name": "test", "namespace": "test", "uid": "ssuid", "generation": 1},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "foo"}}, "template": template},
        "status": {"collisionCount": 0},
    }

"""Every name the config-restart controller reads or writes in the cluster, written down once.

Two families of annotations are understood, so a cluster can switch between this controller
and xing's kubernetes-deployment-restart-controller without editing a manifest:

- opt-in, value ``enabled``: ``configrestart.kcontrol.io/deployment-restart`` /
  ``com.xing.deployment-restart``;
- applied checksums (a JSON object): ``configrestart.kcontrol.io/applied-config-checksums`` /
  ``com.xing.deployment-restart.applied-config-checksums``;
- restart trigger (a timestamp): ``configrestart.kcontrol.io/timestamp`` /
  ``com.xing.deployment-restart.timestamp``.

The opt-in and checksums annotations live on the workload's ``metadata``; the restart trigger
in ``spec.template.metadata.annotations`` (changing it rolls the pods, as
``kubectl rollout restart`` does with ``kubectl.kubernetes.io/restartedAt``).

Catalog keys name configs and workloads as xing does: ``configmap/<ns>/<name>``,
``secret/<ns>/<name>``, ``deployment/<ns>/<name>``, ``statefulset/<ns>/<name>``,
``daemonset/<ns>/<name>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kcontrol.client import CONFIGMAPS, DEPLOYMENTS, SECRETS, Resource

__all__ = [
    "CONFIG_KINDS",
    "DAEMONSETS",
    "ENABLED",
    "FAMILIES",
    "KCONTROL",
    "NAME",
    "QUEUE_NAME",
    "RESTART_REASON",
    "STATEFULSETS",
    "WORKLOAD_KINDS",
    "XING",
    "AnnotationFamily",
    "family_of",
    "make_key",
    "split_key",
]

NAME: Final = "configrestart"
"""The controller's name for ``--controllers``, and the source of its events."""

QUEUE_NAME: Final = "configrestart"
"""The work queue's name (the ``name`` label of the ``workqueue_*`` metrics)."""

RESTART_REASON: Final = "ConfigChanged"
"""The reason of the Normal event recorded on a workload the controller restarts."""

STATEFULSETS: Final = Resource("apps", "v1", "statefulsets", "StatefulSet")
DAEMONSETS: Final = Resource("apps", "v1", "daemonsets", "DaemonSet")

WORKLOAD_KINDS: Final[Mapping[str, Resource]] = {
    "deployment": DEPLOYMENTS,
    "statefulset": STATEFULSETS,
    "daemonset": DAEMONSETS,
}
"""The workloads that can opt in, by the word that starts their catalog key."""

CONFIG_KINDS: Final[Mapping[str, Resource]] = {"configmap": CONFIGMAPS, "secret": SECRETS}
"""The configs a workload can reference, by the word that starts their catalog key."""

ENABLED: Final = "enabled"
"""The only opt-in value; anything else (or no annotation) is opted out."""


@dataclass(frozen=True, slots=True)
class AnnotationFamily:
    """The three annotation names one controller design uses (module docstring)."""

    name: str
    enabled: str
    checksums: str
    timestamp: str


KCONTROL: Final = AnnotationFamily(
    name="kcontrol",
    enabled="configrestart.kcontrol.io/deployment-restart",
    checksums="configrestart.kcontrol.io/applied-config-checksums",
    timestamp="configrestart.kcontrol.io/timestamp",
)
XING: Final = AnnotationFamily(
    name="xing",
    enabled="com.xing.deployment-restart",
    checksums="com.xing.deployment-restart.applied-config-checksums",
    timestamp="com.xing.deployment-restart.timestamp",
)
FAMILIES: Final = (KCONTROL, XING)
"""In order of precedence."""


def family_of(annotations: Mapping[str, Any] | None) -> AnnotationFamily | None:
    """The family a workload opted in with, or ``None`` if it did not.

    kcontrol's opt-in annotation, when present, decides alone (``disabled`` there opts out
    even if xing's says ``enabled``); otherwise xing's does.
    """
    annotations = annotations or {}
    for family in FAMILIES:
        if family.enabled in annotations:
            return family if annotations[family.enabled] == ENABLED else None
    return None


def make_key(kind: str, namespace: str, name: str) -> str:
    """``<kind>/<namespace>/<name>``, ``kind`` one of :data:`WORKLOAD_KINDS` or
    :data:`CONFIG_KINDS`."""
    return f"{kind}/{namespace}/{name}"


def split_key(key: str) -> tuple[str, str, str]:
    """``(kind, namespace, name)`` of a catalog key; :class:`ValueError` if malformed."""
    kind, namespace, name = key.split("/")
    if not (kind and namespace and name):
        raise ValueError(f"malformed key {key!r}")
    return kind, namespace, name

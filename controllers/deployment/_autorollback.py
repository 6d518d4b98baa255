"""Automatic rollback: a rollout that exceeded its progress deadline goes back to the pods of
the last good ReplicaSet, without the Deployment's spec being edited, and stays there while
the template is the one that failed.

Upstream has no such feature (kubernetes/kubernetes#23211 closed unimplemented); this is
kcontrol's, opt-in, and changes nothing for a Deployment that does not opt in.

Opting in: the Deployment's annotation :data:`AUTO_ROLLBACK_ANNOTATION` ``"true"``, or the
controller's ``--deployment-auto-rollback`` flag (then ``"false"`` opts a Deployment out).

The decision (:func:`plan`, pure), for an opted-in Deployment that is not paused, has no
``kubectl rollout undo`` pending and has a new ReplicaSet (the one its template hashes to):

- **hold**: the new ReplicaSet carries :data:`ROLLED_BACK_TO_ANNOTATION` naming one of the
  Deployment's other ReplicaSets: keep rolling back to that one;
- **start**: otherwise, if the Progressing condition is False with ``ProgressDeadlineExceeded``
  and upstream's message naming the new ReplicaSet (``ReplicaSet "x" has timed out
  progressing.``), and a :func:`target` exists: record the hold on the new ReplicaSet and
  roll back;
- else nothing: the usual rollout.

The target (:func:`target`) is the newest older ReplicaSet (by revision) that has available
pods - the pods that were serving before the failed rollout started - or, when none has
(a Recreate rollout scaled everything down first), the newest older ReplicaSet.

The action (:func:`~._hold.roll_back`), one step per sync as a rollout is: the roles of upstream's
strategies with the target as "new" and every other ReplicaSet (the failed one included) as
"old" - RollingUpdate grows the target within ``maxSurge`` and shrinks the others within
``maxUnavailable``, unavailable pods first; Recreate scales the others to 0, waits for their
pods to go, then scales the target up. A resize of the Deployment during the hold reaches
the target the same way. The status is upstream's (``updatedReplicas`` counts the failed
template's pods, so it stays below ``replicas``) with two conditions owned by the hold:
Progressing False ``ProgressDeadlineExceeded`` with a message naming both ReplicaSets (what
``kubectl rollout status`` and GitOps health checks read), and :data:`ROLLED_BACK` True.
Neither ReplicaSet is cleaned up while the hold lasts.

The hold ends when the template changes (a new ReplicaSet: a fix pushed to Git, ``kubectl
rollout restart``, ``kubectl rollout undo``), when the Deployment opts out, or when a user
removes the annotation from the failed ReplicaSet (``kubectl annotate rs <name>
deployment.kcontrol.io/rolled-back-to-``): then the usual rollout of that template resumes,
and its progress deadline starts again, since the hold's message is not upstream's. The
:data:`ROLLED_BACK` condition is removed by the next rollout status after the hold.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from prometheus_client import REGISTRY, CollectorRegistry, Counter

from kcontrol.client import Object
from kcontrol.controller import PerRegistry

from ..conditions import get_condition, remove_condition
from ._annotations import rollback_to
from ._conditions import PROGRESSING, TIMED_OUT_REASON, new_condition
from ._fields import annotations_of, name_of, spec, status, status_int, uid_of
from ._revisions import revision

__all__ = [
    "AUTO_ROLLBACK_ANNOTATION",
    "ROLLED_BACK",
    "ROLLED_BACK_REASON",
    "ROLLED_BACK_TO_ANNOTATION",
    "AutoRollbackMetrics",
    "Hold",
    "enabled",
    "hold_conditions",
    "hold_message",
    "kept_by_hold",
    "metrics_for",
    "plan",
    "target",
    "timed_out",
]

AUTO_ROLLBACK_ANNOTATION: Final = "deployment.kcontrol.io/auto-rollback"
"""On a Deployment: ``"true"`` opts it in, ``"false"`` out (over the controller's flag)."""

ROLLED_BACK_TO_ANNOTATION: Final = "deployment.kcontrol.io/rolled-back-to"
"""On a Deployment's ReplicaSet whose rollout failed: the name of the ReplicaSet the
Deployment was rolled back to. Written by the controller; removing it ends the hold."""

ROLLED_BACK: Final = "RolledBack"
"""The Deployment condition saying that it runs an older ReplicaSet's pods because its
template failed to roll out (True while held)."""

ROLLED_BACK_REASON: Final = TIMED_OUT_REASON
"""The reason of :data:`ROLLED_BACK`: why the rollout was judged failed."""

_TRUE: Final = frozenset({"true", "True", "TRUE", "1"})
_FALSE: Final = frozenset({"false", "False", "FALSE", "0"})


@dataclass(frozen=True)
class Hold:
    """A Deployment rolled back: the ``failed`` ReplicaSet (its template's) and the
    ``target`` it is rolled back to; ``started`` when this sync begins the hold (the
    annotation is still to be written)."""

    failed: Object
    target: Object
    started: bool


def enabled(deployment: Mapping[str, Any], by_default: bool) -> bool:
    """Whether ``deployment`` rolls back automatically: its :data:`AUTO_ROLLBACK_ANNOTATION`
    when it reads as a boolean, else ``by_default`` (the controller's flag)."""
    value = annotations_of(deployment).get(AUTO_ROLLBACK_ANNOTATION)
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    return by_default


def kept_by_hold(new_rs: Mapping[str, Any] | None, rs: Mapping[str, Any]) -> bool:
    """Whether ``rs`` is the ReplicaSet a hold on ``new_rs`` rolled back to: history
    clean-up must keep it, even at 0 replicas (a paused Deployment scaled to 0)."""
    if new_rs is None:
        return False
    return annotations_of(new_rs).get(ROLLED_BACK_TO_ANNOTATION) == name_of(rs)


def timed_out(deployment: Mapping[str, Any], new_rs: Mapping[str, Any]) -> bool:
    """Whether the Progressing condition says, in upstream's words, that ``new_rs`` timed
    out. A timeout the hold wrote (another message) or one about another ReplicaSet does not
    count."""
    condition = get_condition(status(deployment), PROGRESSING)
    return (
        condition is not None
        and condition.get("status") == "False"
        and condition.get("reason") == TIMED_OUT_REASON
        and condition.get("message") == f'ReplicaSet "{name_of(new_rs)}" has timed out progressing.'
    )


def target(new_rs: Mapping[str, Any], old: Sequence[Object]) -> Object | None:
    """The ReplicaSet to roll back to (module docstring): the newest of ``old`` by revision
    among those with available pods, else the newest of ``old``; ``None`` without one."""
    candidates = [rs for rs in old if uid_of(rs) != uid_of(new_rs)]
    serving = [rs for rs in candidates if status_int(rs, "availableReplicas") > 0]
    pool = serving or candidates
    if not pool:
        return None
    return max(pool, key=lambda rs: (revision(rs), name_of(rs)))


def plan(
    deployment: Mapping[str, Any],
    new_rs: Object | None,
    old: Sequence[Object],
    *,
    by_default: bool,
) -> Hold | None:
    """The hold this sync acts on, or ``None`` for the usual rollout (module docstring)."""
    if new_rs is None or not enabled(deployment, by_default):
        return None
    if spec(deployment).get("paused") or rollback_to(deployment) is not None:
        return None
    held_to = annotations_of(new_rs).get(ROLLED_BACK_TO_ANNOTATION)
    if held_to:
        named = [rs for rs in old if name_of(rs) == held_to and uid_of(rs) != uid_of(new_rs)]
        if named:
            return Hold(new_rs, named[0], started=False)
        chosen = target(new_rs, old)  # the recorded one is gone: choose again
        return Hold(new_rs, chosen, started=True) if chosen is not None else None
    if not timed_out(deployment, new_rs):
        return None
    chosen = target(new_rs, old)
    return Hold(new_rs, chosen, started=True) if chosen is not None else None


def hold_message(hold: Hold) -> str:
    """What the hold's conditions and event say: both ReplicaSets and their revisions."""
    return (
        f'ReplicaSet "{name_of(hold.failed)}" (revision {revision(hold.failed)}) did not '
        f"progress within the deadline; rolled back to ReplicaSet "
        f'"{name_of(hold.target)}" (revision {revision(hold.target)}) until the template '
        "changes"
    )


def hold_conditions(
    new_status: MutableMapping[str, Any], old_status: Mapping[str, Any], hold: Hold, now: Any
) -> None:
    """Set the hold's two conditions in ``new_status``: Progressing False
    ``ProgressDeadlineExceeded`` and :data:`ROLLED_BACK` True, both with
    :func:`hold_message`, keeping the times of conditions that already say so."""
    message = hold_message(hold)
    for kind, value in ((PROGRESSING, "False"), (ROLLED_BACK, "True")):
        current = get_condition(old_status, kind)
        if (
            current is not None
            and current.get("status") == value
            and current.get("reason") == ROLLED_BACK_REASON
            and current.get("message") == message
        ):
            continue
        condition = new_condition(kind, value, ROLLED_BACK_REASON, message, now)
        if current is not None and current.get("status") == value:
            condition["lastTransitionTime"] = current.get("lastTransitionTime")
        remove_condition(new_status, kind)
        new_status.setdefault("conditions", []).append(condition)


class AutoRollbackMetrics:
    """``kcontrol_deployment_auto_rollbacks_total``: Deployments rolled back automatically
    (each hold started counts once)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.rollbacks = Counter(
            "kcontrol_deployment_auto_rollbacks_total",
            "Deployments whose failed rollout kcontrol's Deployment controller rolled back "
            "automatically.",
            registry=registry if registry is not None else REGISTRY,
        )


metrics_for = PerRegistry(AutoRollbackMetrics).get
"""The metrics on a registry (``None``: the global one), created once per registry."""

"""A Deployment's rollout, live in the terminal (``python -m kcontrol.rollout NAMESPACE/NAME``).

- :class:`RolloutView` watches one Deployment, its ReplicaSets and their events with kcontrol's
  informers and redraws with ``rich`` on every change (at most 10 times a second).
- :func:`take_snapshot` and :func:`render` are the pure halves: cached objects in, a
  :class:`Snapshot` out; a snapshot in, a rich renderable out.
- :func:`rollout_status` is ``kubectl rollout status``'s verdict on a Deployment.
- ``python -m kcontrol.rollout.local`` is what ``make run`` runs: a local cluster (or
  ``$KUBECONFIG``'s), kcontrol-manager, an example Deployment and this view.

Needs ``rich`` (``pip install 'kcontrol[rollout]'``; kcontrol itself does not depend on it).
"""

try:
    import rich  # noqa: F401 - fail here, with what to install, not deep in a render
except ImportError as error:  # pragma: no cover - rich is in the dev extra
    raise ImportError(
        "kcontrol's rollout view needs rich: pip install 'kcontrol[rollout]'", name="rich"
    ) from error

from kcontrol.rollout._cli import main
from kcontrol.rollout._render import render
from kcontrol.rollout._snapshot import (
    Snapshot,
    is_new_replicaset,
    rollout_status,
    take_snapshot,
)
from kcontrol.rollout._view import RolloutView

__all__ = [
    "RolloutView",
    "Snapshot",
    "is_new_replicaset",
    "main",
    "render",
    "rollout_status",
    "take_snapshot",
]

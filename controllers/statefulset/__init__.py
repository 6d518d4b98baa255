"""The StatefulSet controller, a port of kube-controller-manager's ``pkg/controller/statefulset``
(Kubernetes 1.36 behaviour).

It keeps each StatefulSet's members ``<set>-<ordinal>`` for the ordinals
``[spec.ordinals.start, start + spec.replicas)``: it creates each member's
PersistentVolumeClaims before the pod, makes missing members and deletes condemned ones -
one at a time in ordinal order (``OrderedReady``, waiting for each pod to be running, ready
and available) or all at once (``Parallel``) - deletes failed members to make them again,
rolls pods onto a new template (``RollingUpdate`` down to the partition, or ``OnDelete``),
records templates as ControllerRevisions (collision count, rollback by renumbering, history
truncated to ``revisionHistoryLimit``), applies the claims' retention policy through their
owner references, and keeps ``status`` current.

``kcontrol-manager`` runs it through the entry point ``statefulset-controller`` (:data:`SPEC`,
disabled by default), with ``--concurrent-statefulset-syncs`` workers. Layout, by behaviour:

- ``_controller``: informers, event handlers, the runner; ``_sync``: the sync of one key
  (stale caches, revisions adopted, pods claimed); ``_control``: one pass over a set's pods
  (``stateful_set_control.go``); ``_history``: current and update revisions, truncation;
- ``_podcontrol``: pod and claim writes and their events; ``_status_updater``: the status
  write; ``_metrics``: the controller's own metrics; ``_factory``: the flag, the factory,
  :data:`SPEC` - all that importing the package loads (the rest is loaded on first use).

The helpers, by topic (no module does I/O; each states its contracts):

- ``_names``: the controller and queue names, the labels written on pods, the kinds, the
  ``spec`` values branched on; ``_fields``: reading the dicts, with the API's defaults;
- ``_identity``: ordinals from pod names, the ordinal range (``spec.ordinals.start``), pod
  names, membership, identity (name, namespace, labels, hostname, subdomain), ordinal order;
- ``_storage``: claims from ``volumeClaimTemplates``, the pod volumes mounting them, the
  PVC retention policy and the claims' owner references;
- ``_podstate``: created, pending, failed, succeeded, terminating, running and ready,
  available after ``minReadySeconds``, healthy, unavailable;
- ``_pods``: new member pods (at the revision each should have), the revision label, the
  pod control's event texts;
- ``_revisions``: a revision's data (the template patch), new revisions, restoring a set
  from one; ``_semantic`` and ``_defaults``: the semantic revision comparison
  (StatefulSetSemanticRevisionComparison) and the pod template defaults it needs;
- ``_replicas``: replicas and condemned pods by ordinal range, what an ``OrderedReady`` set
  waits for, the pods a rolling update deletes within ``maxUnavailable``; ``_status``: the
  status counts, completing a rolling update, whether the status must be written.
"""

from typing import TYPE_CHECKING

from ._factory import SPEC, new_controller
from ._names import (
    API_VERSION,
    KIND,
    MAX_BATCH_SIZE,
    NAME,
    POD_INDEX_LABEL,
    POD_NAME_LABEL,
    QUEUE_NAME,
    REVISION_LABEL,
)

if TYPE_CHECKING:
    from ._controller import StatefulSetController
else:  # imported on first use: kcontrol-manager loads SPEC whether the controller runs or not
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, {"._controller": ["StatefulSetController"]})

__all__ = [
    "API_VERSION",
    "KIND",
    "MAX_BATCH_SIZE",
    "NAME",
    "POD_INDEX_LABEL",
    "POD_NAME_LABEL",
    "QUEUE_NAME",
    "REVISION_LABEL",
    "SPEC",
    "StatefulSetController",
    "new_controller",
]

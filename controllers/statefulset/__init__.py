"""The StatefulSet controller, a port of kube-controller-manager's ``pkg/controller/statefulset``
(Kubernetes 1.36 behaviour) - so far its pure helpers; the controller itself (informers,
handlers, the sync, pod and claim writes, status updates, ``SPEC``) is still to come, and
until it lands the package exports only its names.

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

__all__ = [
    "API_VERSION",
    "KIND",
    "MAX_BATCH_SIZE",
    "NAME",
    "POD_INDEX_LABEL",
    "POD_NAME_LABEL",
    "QUEUE_NAME",
    "REVISION_LABEL",
]

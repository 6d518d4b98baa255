"""The Job controller: kube-controller-manager's ``pkg/controller/job`` (Kubernetes 1.36) for
kcontrol.

It runs each Job's pods to completion: ``parallelism`` at a time until ``completions``
succeeded (any success for a work queue), NonIndexed or Indexed (each pod with its completion
index), replacing failed pods after a backoff (10 s doubling to 10 minutes) until
``backoffLimit`` - or, for an Indexed Job, ``backoffLimitPerIndex`` and ``maxFailedIndexes`` -
is exceeded, applying ``podFailurePolicy`` and ``successPolicy``, honouring ``suspend``,
``activeDeadlineSeconds``, ``podReplacementPolicy`` and ``managedBy``. Every finished pod is
counted exactly once, through the ``batch.kubernetes.io/job-tracking`` finalizer and
``status.uncountedTerminatedPods``, so a restart, a leader change or a takeover from
kube-controller-manager neither loses nor repeats a count. Conditions, reasons, messages,
events and metrics are upstream's.

Run by ``kcontrol-manager`` as ``job-controller`` (entry point
``kcontrol_controllers.job:SPEC``); :func:`new_controller` builds it from a
:class:`~kcontrol.manager.ControllerContext`.

Layout, by behaviour: ``_controller`` (wiring, handlers, orphan pods), ``_sync`` (the sync's
decisions), ``_manage`` (creating and deleting pods), ``_status`` (counting pods, finalizers,
conditions, the status write), ``_context`` (one sync's state), ``_metrics``, ``_names``
(name, queues, defaults), ``_factory``; shared with the other controllers: ``podcontrol``
(pod writes and their events), ``activepods`` (which pods to delete first), ``conditions``
(a status's conditions), ``jobutil`` (whether a Job finished); pure helpers by topic:
``_spec`` (reading a Job), ``_pods``, ``_tracking``, ``_backoff``, ``_indexed``,
``_pod_failure_policy``, ``_success_policy``, ``_conditions``. The read-your-writes check is
the library's :class:`~kcontrol.controller.ConsistencyStore`.
"""

from typing import TYPE_CHECKING

from ._factory import CONCURRENT_SYNCS, SPEC, new_controller
from ._names import DEFAULT_WORKERS, NAME, ORPHAN_QUEUE_NAME, QUEUE_NAME

if TYPE_CHECKING:
    from ._controller import JobController
    from ._spec import JOB_TRACKING_FINALIZER
else:  # imported on first use: kcontrol-manager loads SPEC whether the controller runs or not
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__, {"._controller": ["JobController"], "._spec": ["JOB_TRACKING_FINALIZER"]}
    )

__all__ = [
    "CONCURRENT_SYNCS",
    "DEFAULT_WORKERS",
    "JOB_TRACKING_FINALIZER",
    "NAME",
    "ORPHAN_QUEUE_NAME",
    "QUEUE_NAME",
    "SPEC",
    "JobController",
    "new_controller",
]

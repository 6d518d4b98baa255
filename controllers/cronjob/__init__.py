"""The CronJob controller: kube-controller-manager's ``pkg/controller/cronjob`` (Kubernetes 1.36)
for kcontrol.

It creates each CronJob's Jobs on its schedule: robfig/cron's standard syntax (five fields,
ranges, steps, lists, names, ``?``, the ``@yearly`` ... ``@hourly`` and ``@every``
descriptors) in ``spec.timeZone`` (the IANA database; UTC when unset), the most recent missed
activation run late within ``startingDeadlineSeconds`` (more than 100 missed: a
``TooManyMissedTimes`` warning, then the most recent only), ``concurrencyPolicy`` ``Allow``,
``Forbid`` (skip while a Job runs) or ``Replace`` (delete the running Jobs first), honouring
``suspend``, and deleting finished Jobs past ``successfulJobsHistoryLimit`` /
``failedJobsHistoryLimit``. A Job is named ``<cronjob>-<scheduled time in minutes>`` and
annotated ``batch.kubernetes.io/cronjob-scheduled-timestamp``, so an activation never runs
twice - across restarts, leader changes and a takeover from kube-controller-manager alike.
``status.active`` is kept true (``UnexpectedJob``, ``MissingJob``, finished Jobs dropped),
``lastScheduleTime`` and ``lastSuccessfulTime`` set, and each CronJob requeued exactly at its
next activation through the delaying queue. Events and metrics are upstream's.

Run by ``kcontrol-manager`` as ``cronjob-controller`` (entry point
``kcontrol_controllers.cronjob:SPEC``); :func:`new_controller` builds it from a
:class:`~kcontrol.manager.ControllerContext`.

Layout, by behaviour: ``_controller`` (wiring, handlers), ``_sync`` (the sync's decisions,
the Job writes and their events), ``_metrics``, ``_names`` (name, queue, defaults),
``_factory``; pure helpers by topic: ``_schedule`` (the cron parser), ``_times`` (the schedule
maths: most recent and next activation, requeue delay, the schedule text), ``_jobs`` (the Job
for an activation, the active list, finished Jobs, history order).
"""

from typing import TYPE_CHECKING

from ._factory import CONCURRENT_SYNCS, SPEC, new_controller
from ._names import DEFAULT_WORKERS, NAME, QUEUE_NAME

if TYPE_CHECKING:
    from ._controller import CronJobController
    from ._jobs import SCHEDULED_TIMESTAMP_ANNOTATION
else:  # imported on first use: kcontrol-manager loads SPEC whether the controller runs or not
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {"._controller": ["CronJobController"], "._jobs": ["SCHEDULED_TIMESTAMP_ANNOTATION"]},
    )

__all__ = [
    "CONCURRENT_SYNCS",
    "DEFAULT_WORKERS",
    "NAME",
    "QUEUE_NAME",
    "SCHEDULED_TIMESTAMP_ANNOTATION",
    "SPEC",
    "CronJobController",
    "new_controller",
]

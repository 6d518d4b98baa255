"""The TTL-after-finished controller: kube-controller-manager's
``pkg/controller/ttlafterfinished`` (``ttlafterfinished_controller.go``, Kubernetes 1.36).

What queues a Job ``namespace/name``: it is added or updated (resyncs included) while it is
not being deleted, is finished and has ``spec.ttlSecondsAfterFinished``
(:func:`~kcontrol_controllers.ttlafterfinished._ttl.needs_cleanup`). Deletions are not
watched: a deleted Job needs nothing.

A sync (upstream ``processJob``):

1. reads the Job from the informer's cache; gone -> done;
2. checks its TTL there (``processTTL``): being deleted or no longer in need of cleanup ->
   done; not expired yet -> synced again when it expires (:class:`~kcontrol.controller.Result`
   ``requeue_after`` the time left: the delaying queue wakes it at that moment, nothing polls);
3. expired: the cached Job may be outdated (its TTL changed since), so the Job is read fresh
   from the API server and checked again the same way - gone, no longer finished, TTL removed
   or lengthened end the sync or requeue it as in step 2;
4. still expired: deleted with ``propagationPolicy: Foreground`` (its pods go first, then the
   Job; the garbage collector does that) and a precondition on the fresh Job's UID, so a Job
   recreated under the same name in between is never deleted; ``resourceVersion`` is not a
   precondition, as upstream.

Errors (a failed read or delete, a finished Job without the time it finished) are retried
rate-limited, without a limit, as upstream's ``handleErr``. Upstream records no events: nor
does this controller.
"""

from __future__ import annotations

from typing import Any, Final

from prometheus_client import CollectorRegistry

from kcontrol.client import JOBS, Client, Object
from kcontrol.clock import Clock, RealClock
from kcontrol.controller import Controller, ControllerOptions, Result, key_func
from kcontrol.errors import NotFound
from kcontrol.informers import (
    ResourceEventHandlerFuncs,
    SharedInformerFactory,
    split_meta_namespace_key,
)
from kcontrol.logging import get_logger

from ._metrics import metrics_for
from ._names import DEFAULT_WORKERS, NAME, QUEUE_NAME
from ._ttl import Expiry, needs_cleanup, time_left

__all__ = [
    "DEFAULT_WORKERS",
    "FOREGROUND",
    "NAME",
    "QUEUE_NAME",
    "TTLAfterFinishedController",
]

_log = get_logger(__name__)

FOREGROUND: Final = "Foreground"
"""The propagation policy of the deletion: dependents (the Job's pods) are deleted first."""


def _meta(obj: Object) -> dict[str, Any]:
    meta: dict[str, Any] = obj.get("metadata") or {}
    return meta


def _being_deleted(job: Object) -> bool:
    return _meta(job).get("deletionTimestamp") is not None


class TTLAfterFinishedController:
    """Deletes finished Jobs ``spec.ttlSecondsAfterFinished`` seconds after they finished.

    Built from shared ``informers`` (Jobs, all namespaces) and a ``client`` that reads and
    deletes Jobs. ``workers`` Jobs are checked at once; ``clock`` gives the wall time the
    expiries are measured against and the delays of the queue; ``registry`` takes the
    runner's, the queue's and :class:`TTLAfterFinishedMetrics`.

    :meth:`run` blocks until cancelled. Handlers, :meth:`sync` and :meth:`process_ttl` are
    public for tests.
    """

    def __init__(
        self,
        *,
        client: Client,
        informers: SharedInformerFactory,
        workers: int = DEFAULT_WORKERS,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        sync_timeout: float | None = None,
    ) -> None:
        self._client = client
        self._clock: Clock = clock if clock is not None else RealClock()
        job_informer = informers.for_resource(JOBS)
        self._jobs = job_informer.lister()
        self.controller = Controller(
            ControllerOptions(
                name=QUEUE_NAME,
                sync=self.sync,
                workers=workers,
                has_synced=[job_informer.has_synced],
                sync_timeout=sync_timeout,
                max_retries=None,
                clock=self._clock,
                registry=registry,
            )
        )
        self.metrics = metrics_for(registry)
        job_informer.add_event_handler(
            ResourceEventHandlerFuncs(add_func=self.add_job, update_func=self.update_job)
        )

    async def run(self) -> None:
        """Wait for the Job cache, then check Jobs with the workers until cancelled."""
        await self.controller.run()

    # -- Job events --------------------------------------------------------------------------

    def add_job(self, job: Object) -> None:
        _log.debug("adding job", job=key_func(job))
        self._enqueue_if_cleanable(job)

    def update_job(self, old: Object, cur: Object) -> None:
        _log.debug("updating job", job=key_func(cur))
        self._enqueue_if_cleanable(cur)

    def _enqueue_if_cleanable(self, job: Object) -> None:
        if not _being_deleted(job) and needs_cleanup(job):
            key = key_func(job)
            _log.debug("add job to cleanup", job=key)
            self.controller.enqueue(key)

    # -- sync --------------------------------------------------------------------------------

    async def sync(self, key: str) -> Result | None:
        """Delete the Job named by ``key`` if its TTL expired; see the module docstring."""
        namespace, name = split_meta_namespace_key(key)
        _log.debug("checking if Job is ready for cleanup", job=key)
        try:
            cached = self._jobs.get(namespace, name)
        except NotFound:
            return None
        expiry = self.process_ttl(cached)
        if expiry is None:
            return None
        if not expiry.expired:
            return Result(requeue_after=expiry.remaining)

        # The TTL expired in the cache, but the cached Job may be outdated: its TTL may have
        # been changed since. Decide on the Job as the API server has it now (its UID may be
        # another one: the checks below hold for it all the same).
        try:
            fresh = await self._client.get(JOBS, name, namespace=namespace)
        except NotFound:
            return None
        expiry = self.process_ttl(fresh)
        if expiry is None:
            return None
        if not expiry.expired:
            return Result(requeue_after=expiry.remaining)

        _log.debug("cleaning up Job", job=key)
        await self._client.delete(
            JOBS,
            name,
            namespace=namespace,
            preconditions={"uid": str(_meta(fresh).get("uid") or "")},
            propagation_policy=FOREGROUND,
        )
        self.metrics.observe_deletion((self._clock.wall() - expiry.expire_at).total_seconds())
        return None

    def process_ttl(self, job: Object) -> Expiry | None:
        """The Job's expiry now, or ``None`` when it is being deleted or needs no cleanup
        (not finished, no TTL). Raises
        :class:`~kcontrol_controllers.ttlafterfinished._ttl.NotCleanable` for a finished Job
        without a readable finish time."""
        if _being_deleted(job) or not needs_cleanup(job):
            return None
        expiry = time_left(job, self._clock.wall())
        key = key_func(job)
        if expiry.finished_in_the_future:
            _log.warning(
                "Found Job finished in the future. This is likely due to time skew in the "
                "cluster. Job cleanup will be deferred.",
                job=key,
            )
        _log.debug(
            "found Job finished",
            job=key,
            finish_time=expiry.finish_at.isoformat(),
            remaining_ttl=expiry.remaining,
            start_time=expiry.since.isoformat(),
            deadline_ttl=expiry.expire_at.isoformat(),
        )
        return expiry

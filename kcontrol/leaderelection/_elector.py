"""The leader elector: client-go's ``tools/leaderelection`` on asyncio.

How candidates agree, without trusting each other's clocks: a candidate never compares a
timestamp from the lock with its own clock. It remembers, on its *local monotonic* clock, when
it last saw the record change (``observed_time``). The lease counts as held while
``observed_time + leaseDurationSeconds > now``; once a candidate has seen no change for a whole
lease duration it may take the lease over. The holder renews every ``retry_period``, which
changes ``renewTime`` and so restarts every standby's wait. Clock *skew* between machines is
therefore harmless; only clock *rate* differences matter, and ``lease_duration /
renew_deadline`` bounds how much of that is tolerated.

The leader stops leading once ``renew_deadline`` has passed since the start of its last
successful write without another one succeeding; because ``renew_deadline < lease_duration``
it has stopped before any standby, which waited ``lease_duration`` since it saw that write,
can take over. Each write is guarded by the Lease's resourceVersion (see
:class:`~kcontrol.leaderelection.LeaseLock`), so a leader that lost the race gets 409 Conflict
instead of overwriting its successor.

Lifecycle of :meth:`LeaderElector.run`::

    acquire (retry every retry_period, jittered)
      -> leading: the guarded work runs in a task group next to the renew loop
           renewal failed for renew_deadline -> cancel the work, await it, raise LeadershipLost
           run() cancelled                   -> cancel the work, await it (still renewing),
                                                release the lease, re-raise CancelledError
           the work returned or raised        -> release the lease, return / re-raise
      -> finally: on_stopped_leading
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import random
from collections.abc import Awaitable, Callable

from kcontrol.clock import Clock, timeout, timeout_at
from kcontrol.errors import Conflict, KcontrolError, LeadershipLost, NotFound
from kcontrol.leaderelection._config import JITTER_FACTOR, LeaderElectionConfig
from kcontrol.leaderelection._metrics import LeaderMetrics
from kcontrol.leaderelection._record import LeaderElectionRecord
from kcontrol.logging import get_logger

__all__ = ["LeaderElector", "LeadershipLost"]

_log = get_logger(__name__)

GuardedWork = Callable[[], Awaitable[None]]

# How long after the observed expiry of another holder's lease a standby retries: the lease is
# valid while ``observed + duration > now``, so the attempt must come strictly after it.
_EXPIRY_MARGIN = 0.001


async def _cancel_and_wait(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` and wait until it has finished, without raising its outcome."""
    task.cancel()
    await asyncio.wait((task,))


async def _hold() -> None:
    """Guarded work of an elector given none: lead until cancelled."""
    await asyncio.get_running_loop().create_future()


class LeaderElector:
    """One candidate in a leader election; see the module docstring for the protocol.

    :meth:`run` contends for the lock and runs the guarded work while leading. State for
    observers: :meth:`is_leader`, :meth:`get_leader`, :attr:`elected` (an :class:`asyncio.Event`
    set while leading), :meth:`holds_lease` (a write fence) and :meth:`check` (for a health
    endpoint, see :class:`~kcontrol.leaderelection.HealthzAdaptor`).

    An elector runs once at a time; after :meth:`run` returned it may be run again.
    """

    def __init__(self, config: LeaderElectionConfig) -> None:
        self._config = config
        self._lock = config.lock
        self._clock: Clock = config.clock
        self._metrics = LeaderMetrics(config.metric_name, config.registry)
        self._log = _log.bind(lock=self._lock.describe(), identity=self._lock.identity)
        self._random = random.Random()
        # What we last saw in (or wrote to) the lock, and when on the local monotonic clock.
        # Invariant: _observed_time changes exactly when _observed_record is replaced.
        self._observed_record = LeaderElectionRecord()
        self._observed_time = -math.inf
        # The record as last *read* from the lock: a read that differs from it is a change made
        # by somebody (possibly our own earlier write) and restarts the lease-duration wait.
        self._observed_raw: LeaderElectionRecord | None = None
        self._reported_leader = ""
        # Leading state. _last_renewed: local time at which the last successful acquire/renew
        # write was *sent* (the server applied it no earlier), the base of the renew deadline.
        self._leading = False
        self._last_renewed = -math.inf
        self._elected = asyncio.Event()
        self._running = False
        # True once this run() sent a write naming us holder: only then can release be needed.
        self._may_hold = False
        self._work_error: Exception | None = None

    # -- observers ---------------------------------------------------------------------------

    @property
    def config(self) -> LeaderElectionConfig:
        return self._config

    @property
    def identity(self) -> str:
        return self._lock.identity

    @property
    def elected(self) -> asyncio.Event:
        """Set while this candidate leads (the readiness signal); cleared when it stops.

        Treat it as read-only: wait on it, never set or clear it.
        """
        return self._elected

    def is_leader(self) -> bool:
        """True from acquiring the lease until leadership ends (lost, released, cancelled)."""
        return self._leading

    def get_leader(self) -> str:
        """The holder identity last observed in the lock, ``""`` if none (informational)."""
        return self._observed_record.holder_identity

    def holds_lease(self) -> bool:
        """True while leading and the last successful renewal is younger than the renew
        deadline on the local clock: the window in which no other candidate can have
        acquired the lease.

        Purely local - no request, no ``await`` - so it turns false at the deadline even while
        a renewal request hangs, and right after a pause (SIGSTOP, a long GC) past it. It is
        the write gate kcontrol-manager puts on its controllers' client
        (:meth:`kcontrol.client.ApiClient.with_write_gate`) and their guard
        (:func:`kcontrol.controller.guarded_by`); the renew loop notices too and cancels the
        guarded work, but only once it gets to run.
        """
        return self._leading and self._clock.now() < (
            self._last_renewed + self._config.renew_deadline
        )

    def check(self, max_tolerable_expired_lease: float) -> bool:
        """Healthy unless we lead but have not renewed for longer than the lease duration plus
        ``max_tolerable_expired_lease`` (the renew loop is stuck: restart the process)."""
        if not self._leading:
            return True
        since = self._clock.now() - self._last_renewed
        return since <= self._config.lease_duration + max_tolerable_expired_lease

    # -- run -------------------------------------------------------------------------------

    async def run(self, leading: GuardedWork | None = None) -> None:
        """Contend for the lease; while leading, run the guarded work; see the module docstring.

        The guarded work is ``leading`` if given, else ``callbacks.on_started_leading``, else
        nothing (just hold the lease until cancelled). It is started once the lease is
        acquired and is cancelled, and awaited, before leadership is given up or reported lost.

        Returns when the guarded work returned (the lease is released first if
        ``release_on_cancel``); re-raises the work's exception likewise. Raises
        :class:`LeadershipLost` when renewal failed. When cancelled, lets the guarded work
        finish, releases the lease if ``release_on_cancel`` and re-raises ``CancelledError``.
        ``callbacks.on_stopped_leading`` is called on every exit.
        """
        callbacks = self._config.callbacks
        if leading is not None and callbacks.on_started_leading is not None:
            raise ValueError("pass the guarded work either to run() or as on_started_leading")
        work = leading or callbacks.on_started_leading or _hold
        if self._running:
            raise RuntimeError(f"leader elector {self.identity!r} is already running")
        self._running = True
        self._may_hold = False
        self._work_error = None
        led = False
        try:
            await self._acquire()
            led = True
            await self._lead(work)
            # The guarded work ended by itself: nothing runs under the lease any more.
            if self._config.release_on_cancel:
                await self._release()
            if self._work_error is not None:
                raise self._work_error
        except asyncio.CancelledError:
            if self._config.release_on_cancel and self._may_hold:
                await self._release()
            raise
        finally:
            self._running = False
            self._work_error = None
            if led:
                self._lock.record_event("stopped leading")
            self._notify(callbacks.on_stopped_leading)

    async def _acquire(self) -> None:
        """Try until the lease is ours; returns then (cancellable at any point)."""
        self._log.info("attempting to acquire leader lease")
        while True:
            started = self._clock.now()
            succeeded = await self._attempt(started + self._config.renew_deadline)
            self._maybe_report_transition()
            if succeeded:
                self._last_renewed = started
                self._start_leading()
                return
            self._log.debug("failed to acquire lease", holder=self.get_leader())
            await self._clock.sleep(self._acquire_backoff())

    def _acquire_backoff(self) -> float:
        """The pause before the next acquire attempt: ``retry_period`` jittered up by
        ``JITTER_FACTOR`` (as client-go), but no later than the moment the lease we saw
        expires, so a standby takes over a dead leader's lease as soon as it may."""
        period = self._config.retry_period
        pause = period + self._random.random() * JITTER_FACTOR * period
        expiry = self._observed_time + self._observed_record.lease_duration_seconds
        until_expiry = expiry - self._clock.now()
        if self._observed_record.holder_identity and 0 < until_expiry < pause:
            pause = until_expiry + _EXPIRY_MARGIN
        return pause

    async def _lead(self, work: GuardedWork) -> None:
        """Run ``work`` next to the renew loop until one of them ends or we are cancelled.

        Raises :class:`LeadershipLost` if the renew loop ended; the work is over by then.
        """
        name = self._lock.describe()
        try:
            async with asyncio.TaskGroup() as group:
                renewing = group.create_task(self._renew(), name=f"leaderelection renew {name}")
                working = group.create_task(self._guard(work), name=f"leaderelection work {name}")
                try:
                    await asyncio.wait((renewing, working), return_when=asyncio.FIRST_COMPLETED)
                except asyncio.CancelledError:
                    # Clean shutdown: let the guarded work finish while we keep renewing, so
                    # the lease stays ours until nothing runs under it any more.
                    await _cancel_and_wait(working)
                    await _cancel_and_wait(renewing)
                    raise
                # The renew loop only ever returns when leadership is lost.
                lost = renewing.done()
                await _cancel_and_wait(working)
                await _cancel_and_wait(renewing)
        finally:
            self._stop_leading()
        if lost:
            self._log.error("leadership lost, guarded work stopped")
            raise LeadershipLost(
                f"{self.identity} failed to renew lease {name} within "
                f"{self._config.renew_deadline}s"
            )

    async def _guard(self, work: GuardedWork) -> None:
        try:
            await work()
        except Exception as error:  # re-raised by run() once the lease is dealt with
            self._log.info("guarded work failed", error=repr(error))
            self._work_error = error
        else:
            self._log.info("guarded work finished")

    async def _renew(self) -> None:
        """Renew every ``retry_period``; return when the lease is lost (never otherwise)."""
        config = self._config
        while True:
            await self._clock.sleep(config.retry_period)
            while True:
                deadline = self._last_renewed + config.renew_deadline
                now = self._clock.now()
                if now >= deadline:
                    self._log.info("failed to renew lease within the renew deadline")
                    self._stop_leading()
                    return
                succeeded = await self._attempt(deadline)
                self._maybe_report_transition()
                if succeeded:
                    self._last_renewed = now
                    self._log.debug("renewed lease")
                    break
                holder = self._observed_record.holder_identity
                if holder and holder != self.identity:
                    self._log.info("lease taken over by another candidate", holder=holder)
                    self._stop_leading()
                    return
                await self._clock.sleep(min(config.retry_period, deadline - self._clock.now()))

    def _start_leading(self) -> None:
        self._leading = True
        self._elected.set()
        self._metrics.leader_on()
        self._lock.record_event("became leader")
        self._log.info("successfully acquired lease")

    def _stop_leading(self) -> None:
        self._leading = False
        self._elected.clear()
        self._metrics.leader_off()

    # -- one attempt -------------------------------------------------------------------------

    async def _attempt(self, deadline: float) -> bool:
        """:meth:`_try_acquire_or_renew` bounded by ``deadline`` (local clock)."""
        try:
            async with timeout_at(self._clock, deadline):
                return await self._try_acquire_or_renew()
        except TimeoutError:
            self._log.warning("lease request timed out")
            return False

    async def _try_acquire_or_renew(self) -> bool:
        """Acquire the lease if it is free or expired, renew it if it is ours.

        Returns whether the lock now names us holder. API failures count as "no".
        """
        now = self._clock.now()
        wall = self._clock.wall()
        desired = LeaderElectionRecord(
            holder_identity=self.identity,
            lease_duration_seconds=self._config.lease_duration_seconds,
            acquire_time=wall,
            renew_time=wall,
        )

        # 1. Fast path: the leader renews from the Lease it wrote last, without reading it
        #    first. A stale resourceVersion makes this fail (409) and we fall through.
        if self._observed_is_us() and self._lease_valid(now):
            observed = self._observed_record
            renewal = dataclasses.replace(
                desired,
                acquire_time=observed.acquire_time,
                leader_transitions=observed.leader_transitions,
            )
            self._may_hold = True
            try:
                await self._lock.update(renewal)
            except (KcontrolError, TimeoutError) as error:
                self._log.debug("optimistic lease update failed, reading it", error=str(error))
            else:
                self._set_observed(renewal)
                return True

        # 2. Read the lock, creating it if it does not exist.
        try:
            current = await self._lock.get()
        except NotFound:
            self._may_hold = True
            try:
                await self._lock.create(desired)
            except (KcontrolError, TimeoutError) as error:
                self._log.error("error creating lease", error=str(error))
                return False
            self._set_observed(desired)
            return True
        except (KcontrolError, TimeoutError) as error:
            self._log.error("error retrieving lease", error=str(error))
            return False

        # 3. A changed record restarts the lease-duration wait; a valid lease of another
        #    candidate is respected.
        if current != self._observed_raw:
            self._set_observed(current)
            self._observed_raw = current
        if current.holder_identity and self._lease_valid(now) and not self._observed_is_us():
            self._log.debug("lease is held and has not yet expired", holder=current.holder_identity)
            return False

        # 4. Write ourselves in: keep acquireTime and the transition count when renewing,
        #    count one transition when the holder changes.
        if self._observed_is_us():
            desired = dataclasses.replace(
                desired,
                acquire_time=current.acquire_time,
                leader_transitions=current.leader_transitions,
            )
            self._metrics.slowpath_exercised()
        else:
            desired = dataclasses.replace(
                desired, leader_transitions=current.leader_transitions + 1
            )
        self._may_hold = True
        try:
            await self._lock.update(desired)
        except Conflict as error:
            self._log.info("lease changed while writing it", error=str(error))
            return False
        except (KcontrolError, TimeoutError) as error:
            self._log.error("failed to update lease", error=str(error))
            return False
        self._set_observed(desired)
        return True

    async def _release(self) -> bool:
        """Give the lease up (empty holder, 1 s duration) if the lock still names us.

        Reads the lock first, so the write carries a fresh resourceVersion and never clobbers
        a holder that took over meanwhile. Bounded by the renew deadline; failures are logged.
        """
        try:
            async with timeout(self._clock, self._config.renew_deadline):
                current = await self._lock.get()
                if current.holder_identity != self.identity:
                    self._log.info("lease not held any more, nothing to release")
                    return True
                wall = self._clock.wall()
                released = dataclasses.replace(
                    current,
                    holder_identity="",
                    lease_duration_seconds=1,
                    acquire_time=wall,
                    renew_time=wall,
                )
                await self._lock.update(released)
                self._set_observed(released)
        except NotFound:
            self._log.info("lease not found, nothing to release")
            return False
        except (KcontrolError, TimeoutError) as error:
            self._log.error("failed to release lease", error=str(error))
            return False
        self._log.info("released lease")
        return True

    # -- observed state ----------------------------------------------------------------------

    def _observed_is_us(self) -> bool:
        return self._observed_record.holder_identity == self.identity

    def _lease_valid(self, now: float) -> bool:
        return self._observed_time + self._observed_record.lease_duration_seconds > now

    def _set_observed(self, record: LeaderElectionRecord) -> None:
        self._observed_record = record
        self._observed_time = self._clock.now()

    def _maybe_report_transition(self) -> None:
        holder = self._observed_record.holder_identity
        if holder == self._reported_leader:
            return
        self._reported_leader = holder
        self._log.info("new leader observed", leader=holder)
        self._notify(self._config.callbacks.on_new_leader, holder)

    def _notify(self, callback: Callable[..., object] | None, *args: object) -> None:
        if callback is None:
            return
        try:
            callback(*args)
        except Exception:
            self._log.exception("leader election callback failed", callback=repr(callback))

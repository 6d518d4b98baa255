"""Work queues and rate limiters: client-go's ``util/workqueue`` for asyncio.

Three layers, each wrapping the one below:

- :class:`Queue` - FIFO with de-duplication; an item is processed by one worker at a time, and
  an item added again while being processed is processed again afterwards.
- :class:`DelayingQueue` - adds :meth:`~DelayingQueue.add_after`.
- :class:`RateLimitingQueue` - adds :meth:`~RateLimitingQueue.add_rate_limited`, paced by a
  :class:`RateLimiter` (default: :func:`default_controller_rate_limiter`).

A worker loops ``item = await queue.get()`` ... ``queue.done(item)`` until ``get`` raises
:class:`ShutDown`; every ``get`` must be paired with a ``done``. Named queues export client-go's
``workqueue_*`` Prometheus metrics (see :mod:`kcontrol.workqueue._metrics`).
"""

from kcontrol.workqueue._delaying import DelayingQueue
from kcontrol.workqueue._limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
)
from kcontrol.workqueue._metrics import DURATION_BUCKETS
from kcontrol.workqueue._queue import Queue, ShutDown
from kcontrol.workqueue._rate_limiting import RateLimitingQueue

__all__ = [
    "DURATION_BUCKETS",
    "BucketRateLimiter",
    "DelayingQueue",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "Queue",
    "RateLimiter",
    "RateLimitingQueue",
    "ShutDown",
    "WithMaxWaitRateLimiter",
    "default_controller_rate_limiter",
]

"""Kubernetes Events from controllers, as client-go's ``tools/record`` writes them.

::

    broadcaster = EventBroadcaster(client, component="replicaset-controller", host=hostname)
    recorder = broadcaster.new_recorder()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(broadcaster.run())
        ...
        recorder.eventf(rs, EVENT_TYPE_NORMAL, "SuccessfulCreate", "Created pod: %s", name)

Recording never blocks or raises; the broadcaster writes core/v1 Events that ``kubectl
describe`` shows, counting repeats into one Event (``x3``), aggregating floods of similar
events and rate-limiting each object's events. Tests use :class:`kcontrol.testing.FakeRecorder`.
"""

from kcontrol.events._broadcaster import EventBroadcaster
from kcontrol.events._correlator import CorrelatorOptions, EventCorrelation, EventCorrelator
from kcontrol.events._event import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, object_reference
from kcontrol.events._recorder import EventRecorder

__all__ = [
    "EVENT_TYPE_NORMAL",
    "EVENT_TYPE_WARNING",
    "CorrelatorOptions",
    "EventBroadcaster",
    "EventCorrelation",
    "EventCorrelator",
    "EventRecorder",
    "object_reference",
]

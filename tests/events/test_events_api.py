"""The public surface of kcontrol.events: exactly what the facade means to export."""

from __future__ import annotations

import kcontrol.events


def test_public_surface() -> None:
    assert sorted(kcontrol.events.__all__) == [
        "CorrelatorOptions",
        "EVENT_TYPE_NORMAL",
        "EVENT_TYPE_WARNING",
        "EventBroadcaster",
        "EventCorrelation",
        "EventCorrelator",
        "EventRecorder",
        "object_reference",
    ]
    assert kcontrol.events.EVENT_TYPE_NORMAL == "Normal"
    assert kcontrol.events.EVENT_TYPE_WARNING == "Warning"
    for name in kcontrol.events.__all__:
        value = getattr(kcontrol.events, name)
        if not isinstance(value, str):
            assert value.__module__.startswith("kcontrol.events._"), name

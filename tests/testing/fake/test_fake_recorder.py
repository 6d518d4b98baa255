"""kcontrol.testing.FakeRecorder: events kept as client-go's record.FakeRecorder formats them."""

from __future__ import annotations

from typing import Any

from kcontrol.testing import FakeRecorder

RS: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "web-6d4f", "namespace": "shop", "uid": "3c1e"},
}


def test_fake_recorder_stores_events_like_client_go() -> None:
    recorder = FakeRecorder()
    recorder.event(RS, "Normal", "SuccessfulCreate", "Created pod: a")
    recorder.eventf(RS, "Warning", "FailedCreate", "Error creating: %s", "quota")
    assert recorder.events == [
        "Normal SuccessfulCreate Created pod: a",
        "Warning FailedCreate Error creating: quota",
    ]


def test_fake_recorder_can_include_the_object() -> None:
    recorder = FakeRecorder(include_object=True)
    recorder.event(RS, "Normal", "R", "m")
    assert recorder.events == ["Normal R m involvedObject{kind=ReplicaSet,apiVersion=apps/v1}"]

"""Test support: the fakes (an in-memory client, an event recorder), log capture, a
fault-injecting proxy, and the knobs of the test cluster's fake pods.

The real control plane lives in :mod:`kcontrol.testing.envtest`, and the whole cluster
(scheduler, kube-controller-manager, kwok nodes) in :mod:`kcontrol.testing.cluster`; both need
the ``testing`` extra for their key material, so import them from there. The ``BEHAVIOR_*``
and ``*_DELAY_ANNOTATION`` names below steer how kwok plays a pod in that cluster;
``EXIT_CODE_ANNOTATION`` and ``RUN_TIME_ANNOTATION`` hold what it decided a Job pod's container
does (or set it by hand).
"""

from kcontrol.testing._actions import Action, Reactor, ReactorResult
from kcontrol.testing._fake import FakeClient
from kcontrol.testing._kwok import (
    BEHAVIOR_FAIL,
    BEHAVIOR_LABEL,
    BEHAVIOR_NEVER_READY,
    BEHAVIOR_RESTART,
    DELETE_DELAY_ANNOTATION,
    EXIT_CODE_ANNOTATION,
    FAIL_DELAY_ANNOTATION,
    READY_DELAY_ANNOTATION,
    RESTART_DELAY_ANNOTATION,
    RUN_TIME_ANNOTATION,
)
from kcontrol.testing._logs import capture_logs
from kcontrol.testing._manager import running
from kcontrol.testing._proxy import FaultProxy, ProxiedRequest
from kcontrol.testing._recorder import FakeRecorder
from kcontrol.testing._tracker import ObjectTracker

__all__ = [
    "BEHAVIOR_FAIL",
    "BEHAVIOR_LABEL",
    "BEHAVIOR_NEVER_READY",
    "BEHAVIOR_RESTART",
    "DELETE_DELAY_ANNOTATION",
    "EXIT_CODE_ANNOTATION",
    "FAIL_DELAY_ANNOTATION",
    "READY_DELAY_ANNOTATION",
    "RESTART_DELAY_ANNOTATION",
    "RUN_TIME_ANNOTATION",
    "Action",
    "FakeClient",
    "FakeRecorder",
    "FaultProxy",
    "ObjectTracker",
    "ProxiedRequest",
    "Reactor",
    "ReactorResult",
    "capture_logs",
    "running",
]

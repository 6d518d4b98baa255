"""kcontrol's test kit: the fakes most unit tests use, log capture, and a manager run for the
length of a test. Each piece lives in its own package:

- :mod:`kcontrol.testing.fake`: the in-memory API server - :class:`FakeClient`, its
  :class:`ObjectTracker`, actions and reactors, the metadata view - and :class:`FakeRecorder`;
  the names tests use most are re-exported here;
- :mod:`kcontrol.testing.faults`: :class:`~kcontrol.testing.faults.FaultProxy`, a
  fault-injecting proxy in front of a real apiserver (needs aiohttp: the ``testing`` extra);
- :mod:`kcontrol.envtest`: a real control plane (etcd and kube-apiserver), and
  :mod:`kcontrol.envtest.cluster` the whole local cluster (kube-scheduler,
  kube-controller-manager, kwok nodes) with the labels and annotations that steer kwok's pods.
  They are a library package of their own, as controller-runtime's ``pkg/envtest`` is:
  ``make run`` starts its local cluster with them and never imports this package.
"""

from kcontrol.testing._logs import capture_logs
from kcontrol.testing._manager import running
from kcontrol.testing.fake import (
    Action,
    FakeClient,
    FakeRecorder,
    ObjectTracker,
    Reactor,
    ReactorResult,
)

__all__ = [
    "Action",
    "FakeClient",
    "FakeRecorder",
    "ObjectTracker",
    "Reactor",
    "ReactorResult",
    "capture_logs",
    "running",
]

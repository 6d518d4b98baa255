"""Test support: an in-memory fake client and a fault-injecting proxy.

The real control plane lives in :mod:`kcontrol.testing.envtest` (it needs the ``testing``
extra for its key material); import it from there.
"""

from kcontrol.testing._actions import Action, Reactor, ReactorResult
from kcontrol.testing._fake import FakeClient
from kcontrol.testing._proxy import FaultProxy, ProxiedRequest
from kcontrol.testing._tracker import ObjectTracker

__all__ = [
    "Action",
    "FakeClient",
    "FaultProxy",
    "ObjectTracker",
    "ProxiedRequest",
    "Reactor",
    "ReactorResult",
]

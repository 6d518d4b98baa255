"""kcontrol: client-go's controller machinery, re-done natively for Python asyncio.

Subpackages: :mod:`kcontrol.workqueue` (queues and rate limiters), :mod:`kcontrol.informers`
(reflector, stores, shared informers, listers), :mod:`kcontrol.client` (async REST client),
:mod:`kcontrol.envtest` (a real control plane and local cluster), :mod:`kcontrol.testing`
(fakes, log capture). At the bottom: :mod:`kcontrol.clock` (injectable time, timeout scopes),
:mod:`kcontrol.flowcontrol` (the token bucket), :mod:`kcontrol.logging` (how kcontrol logs),
:mod:`kcontrol.errors`.
"""

from kcontrol.errors import ApiError, KcontrolError

__all__ = ["ApiError", "KcontrolError", "__version__"]

__version__ = "0.1.0"

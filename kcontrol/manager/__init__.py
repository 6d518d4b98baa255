"""The controller manager: run controllers with leader election, health checks and metrics.

``kcontrol-manager`` (:func:`main`) is kube-controller-manager's process for kcontrol
controllers: the same flags, the same lease, the same ``/healthz`` style. Controllers come from
a :class:`ControllerRegistry` (by default the ``kcontrol.controllers`` entry points); each is a
factory that receives a :class:`ControllerContext` and returns a :class:`Runnable`.
:class:`Manager` is the lifecycle behind ``main``, and an operator's manager on its own
(``Manager(name="website-operator")``: :meth:`ManagerOptions.for_operator` defaults,
controllers added with :mod:`kcontrol.builder`, run by :meth:`Manager.main`).
Its options (:class:`ManagerOptions`) nest the connection (:class:`ClientOptions`), leader
election (:class:`~kcontrol.leaderelection.LeaderElectionOptions`) and serving
(:class:`~kcontrol.serving.ServingOptions`); :mod:`kcontrol.manager.flags` reads them from
kcontrol-manager's command line. The manager serves its health checks and metrics with
:mod:`kcontrol.serving`, configured by ``ManagerOptions.serving`` (kube-controller-manager's
secure port; kcontrol's own Lease and port by default: :data:`DEFAULT_LEASE_NAME`,
:data:`DEFAULT_SECURE_PORT`).
"""

from kcontrol.manager._main import main
from kcontrol.manager._manager import Manager, default_identity, new_metrics_registry
from kcontrol.manager._options import (
    DEFAULT_LEASE_NAME,
    DEFAULT_LEASE_NAMESPACE,
    DEFAULT_SECURE_PORT,
    ClientOptions,
    ManagerOptions,
    OptionsError,
)
from kcontrol.manager._registry import (
    ENTRY_POINT_GROUP,
    ControllerContext,
    ControllerFactory,
    ControllerFlag,
    ControllerRegistry,
    ControllerSpec,
    Runnable,
)

__all__ = [
    "DEFAULT_LEASE_NAME",
    "DEFAULT_LEASE_NAMESPACE",
    "DEFAULT_SECURE_PORT",
    "ENTRY_POINT_GROUP",
    "ClientOptions",
    "ControllerContext",
    "ControllerFactory",
    "ControllerFlag",
    "ControllerRegistry",
    "ControllerSpec",
    "Manager",
    "ManagerOptions",
    "OptionsError",
    "Runnable",
    "default_identity",
    "main",
    "new_metrics_registry",
]

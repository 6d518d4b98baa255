"""The controller manager: run controllers with leader election, health checks and metrics.

``kcontrol-manager`` (:func:`main`) is kube-controller-manager's process for kcontrol
controllers: the same flags, the same lease, the same ``/healthz`` style. Controllers come from
a :class:`ControllerRegistry` (by default the ``kcontrol.controllers`` entry points); each is a
factory that receives a :class:`ControllerContext` and returns a :class:`Runnable`.
:class:`Manager` is the lifecycle behind ``main``, and an operator's manager on its own
(``Manager(name="website-operator")``: :meth:`ManagerOptions.for_operator` defaults,
controllers added with :mod:`kcontrol.builder`, run by :meth:`Manager.main`).
:class:`HealthServer` is the health and metrics endpoint, which :class:`SecureServer` serves
over HTTPS behind delegated authentication and authorization (kube-controller-manager's secure
port; kcontrol's own Lease and port by default: :data:`DEFAULT_LEASE_NAME`,
:data:`DEFAULT_SECURE_PORT`).
"""

from kcontrol.manager._health import HealthCheck, HealthServer, NamedCheck
from kcontrol.manager._main import main
from kcontrol.manager._manager import (
    Manager,
    default_identity,
    load_client_config,
    new_metrics_registry,
)
from kcontrol.manager._options import (
    DEFAULT_LEASE_NAME,
    DEFAULT_LEASE_NAMESPACE,
    DEFAULT_SECURE_PORT,
    ControllerFlag,
    ManagerOptions,
    OptionsError,
    controller_enabled,
    parse_args,
    parse_bool,
    parse_duration,
)
from kcontrol.manager._registry import (
    ENTRY_POINT_GROUP,
    ControllerContext,
    ControllerFactory,
    ControllerRegistry,
    ControllerSpec,
    Runnable,
)
from kcontrol.manager._serving import SecureServer

__all__ = [
    "DEFAULT_LEASE_NAME",
    "DEFAULT_LEASE_NAMESPACE",
    "DEFAULT_SECURE_PORT",
    "ENTRY_POINT_GROUP",
    "ControllerContext",
    "ControllerFactory",
    "ControllerFlag",
    "ControllerRegistry",
    "ControllerSpec",
    "HealthCheck",
    "HealthServer",
    "Manager",
    "ManagerOptions",
    "NamedCheck",
    "OptionsError",
    "Runnable",
    "SecureServer",
    "controller_enabled",
    "default_identity",
    "load_client_config",
    "main",
    "new_metrics_registry",
    "parse_args",
    "parse_bool",
    "parse_duration",
]

"""What a :class:`~kcontrol.manager.Manager` runs, and how: :class:`ManagerOptions`, built in
code by an operator or from ``kcontrol-manager``'s command line (:mod:`kcontrol.manager.flags`).

The options nest by concern, as kube-controller-manager's configuration does: the connection
(:class:`ClientOptions`), leader election
(:class:`~kcontrol.leaderelection.LeaderElectionOptions`), serving
(:class:`~kcontrol.serving.ServingOptions`), and which controllers run with which of their
flags. Each field is named after its flag (``kube_api_qps``: ``--kube-api-qps``). The
defaults are kcontrol-manager's, which are kube-controller-manager's except where it must
run beside it: its own Lease ``kube-system/kcontrol-manager`` (:data:`DEFAULT_LEASE_NAME`) and
its own secure port 10263 (:data:`DEFAULT_SECURE_PORT`). :meth:`ManagerOptions.for_operator`
gives an operator's.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kcontrol.client import ClientConfig, ConfigError, Resource, load_config
from kcontrol.errors import OptionsError
from kcontrol.informers import CacheScope
from kcontrol.leaderelection import LeaderElectionOptions
from kcontrol.logging import LogFormat
from kcontrol.serving import ServingOptions
from kcontrol.webhook import WebhookOptions

__all__ = [
    "DEFAULT_LEASE_NAME",
    "DEFAULT_LEASE_NAMESPACE",
    "DEFAULT_SECURE_PORT",
    "EVENT_LOOPS",
    "ClientOptions",
    "ManagerOptions",
    "OptionsError",
    "uvloop_installed",
]

DEFAULT_LEASE_NAME = "kcontrol-manager"
"""The name of kcontrol-manager's Lease (in :data:`DEFAULT_LEASE_NAMESPACE`)."""
DEFAULT_LEASE_NAMESPACE = "kube-system"
"""kcontrol-manager's own Lease, ``kube-system/kcontrol-manager``: beside kube-controller-manager
(whose Lease is ``kube-system/kube-controller-manager``) both lead, each its own controllers."""

DEFAULT_SECURE_PORT = 10263
"""kcontrol-manager's HTTPS port. No Kubernetes component uses it: kubelet has 10248, 10250
and 10255, kube-proxy 10249 and 10256, kube-controller-manager 10257, cloud-controller-manager
10258 (and 10260 for its webhooks), kube-scheduler 10259; 10251-10253 were the old insecure
ports and 10254 is ingress-nginx's metrics port. On one host network, kcontrol-manager and
those components never collide."""

EVENT_LOOPS = ("auto", "uvloop", "asyncio")
"""``--event-loop``'s values: ``auto`` runs uvloop when it is importable, else asyncio's own."""


def uvloop_installed() -> bool:
    """True when uvloop can be imported (``pip install 'kcontrol[uvloop]'``)."""
    return importlib.util.find_spec("uvloop") is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientOptions:
    """The connection to the API server.

    ``kubeconfig`` and ``master`` (``--kubeconfig``, ``--master``) say where it is; without
    either, the in-cluster service account - or, with ``kubeconfig_default_rules``,
    ``$KUBECONFIG`` or ``~/.kube/config`` first (client-go's default loading rules,
    controller-runtime's ``GetConfig``: an operator's default, not kcontrol-manager's, which
    like kube-controller-manager goes in-cluster). ``kube_api_qps`` / ``kube_api_burst``
    (``--kube-api-qps``, ``--kube-api-burst``) are each component's own client-side budget
    (the informers, the Lease, each controller, the events); ``kube_api_qps=0``: none.
    """

    kubeconfig: str | None = None
    master: str | None = None
    kube_api_qps: float = 20.0
    kube_api_burst: int = 30
    kubeconfig_default_rules: bool = False

    async def load_config(self) -> ClientConfig:
        """The client configuration these options name: ``kubeconfig`` (with ``master``
        overriding its server), ``master`` alone (credentials from the default kubeconfig or
        the service account if there are any), or, with neither, the in-cluster service
        account - or, with ``kubeconfig_default_rules``, ``$KUBECONFIG`` or
        ``~/.kube/config`` first.

        Raises :class:`~kcontrol.errors.ConfigError` when that configuration is unusable.
        """
        if not self.kubeconfig and not self.master and self.kubeconfig_default_rules:
            return await load_config()
        if self.kubeconfig:
            return await load_config(kubeconfig=self.kubeconfig, host=self.master)
        if self.master:
            try:
                return await load_config(host=self.master)
            except ConfigError:
                return ClientConfig(host=self.master.rstrip("/"))
        return await load_config(in_cluster=True)

    def validate(self) -> None:
        """Raise :class:`~kcontrol.errors.OptionsError` for a burst that cannot pass a
        request."""
        if self.kube_api_burst < 1 and self.kube_api_qps > 0:
            raise OptionsError("--kube-api-burst must be at least 1")


@dataclass(frozen=True, slots=True, kw_only=True)
class ManagerOptions:
    """Everything a manager is told. Durations are seconds.

    - ``client``: the connection (:class:`ClientOptions`);
    - ``election``: leader election, single or sharded
      (:class:`~kcontrol.leaderelection.LeaderElectionOptions`; by default on, with the Lease
      ``kube-system/kcontrol-manager``);
    - ``serving``: the secure port and the plain-HTTP opt-in
      (:class:`~kcontrol.serving.ServingOptions`; by default HTTPS on
      :data:`DEFAULT_SECURE_PORT`);
    - ``controllers``: which controllers run (``--controllers``: ``*`` the ones on by default,
      ``name`` one more, ``-name`` one less), and ``controller_flags`` the values of the flags
      controllers declare, by name (``{"concurrent-deployment-syncs": 10}``; the others take
      their declared defaults);
    - ``namespace``: watch and cache only this namespace's objects of namespaced resources (an
      operator with a Role rather than a ClusterRole); ``None``: every namespace. A cache
      read in another namespace raises :class:`~kcontrol.errors.OutsideCacheScope`.
      ``namespaces``: several (a Role in each): each is listed and watched on its own, into
      one cache per resource;
    - ``cache_scopes``: what the shared caches hold of some resources
      (:class:`~kcontrol.informers.CacheScope`: a namespace, label and field selectors;
      controller-runtime's ``cache.Options.ByObject``), e.g.
      ``{CONFIGMAPS: CacheScope(namespaces=("ops",), label_selector="app=registry")}``;
    - ``webhook``: where the webhook server listens and its certificate
      (:class:`~kcontrol.webhook.WebhookOptions`; served only when webhooks are added);
    - ``verbosity`` and ``log_format``: the logs (``-v``, ``--log-format``);
    - ``event_loop``: the loop ``main()`` runs on (:data:`EVENT_LOOPS`); the library itself
      runs on any asyncio loop;
    - ``graceful_shutdown_timeout``: seconds the controllers may drain their syncs in flight
      when they stop (on SIGTERM, on a lost Lease's hand-over, when a sharded replica gives
      a shard back); past it the syncs still running are cancelled. As controller-runtime's
      ``GracefulShutdownTimeout``: 30 s by default, 0 cancels them at once, a negative value
      waits however long they take.
    """

    client: ClientOptions = field(default_factory=ClientOptions)
    election: LeaderElectionOptions = field(
        default_factory=lambda: LeaderElectionOptions(
            resource_name=DEFAULT_LEASE_NAME, resource_namespace=DEFAULT_LEASE_NAMESPACE
        )
    )
    serving: ServingOptions = field(
        default_factory=lambda: ServingOptions(secure_port=DEFAULT_SECURE_PORT)
    )
    controllers: tuple[str, ...] = ("*",)
    controller_flags: Mapping[str, Any] = field(default_factory=dict)
    namespace: str | None = None
    namespaces: tuple[str, ...] = ()
    cache_scopes: Mapping[Resource, CacheScope] = field(default_factory=dict)
    webhook: WebhookOptions = field(default_factory=WebhookOptions)
    verbosity: int = 0
    log_format: LogFormat = "json"
    event_loop: str = "auto"
    graceful_shutdown_timeout: float = 30.0

    @classmethod
    def for_operator(cls, name: str, **changes: Any) -> ManagerOptions:
        """The defaults of an operator's manager (a library user's
        :class:`~kcontrol.manager.Manager`), with ``changes`` (fields of this class) on top.

        They differ from kcontrol-manager's flags where an operator differs from
        kube-controller-manager:

        - no client-side rate limit (``kube_api_qps=0``): the API server's priority and
          fairness protects it, as SIG API Machinery recommends and controller-runtime
          defaults to since v0.21; client-go's 5 qps (or kube-controller-manager's 20) made
          an operator several times slower than kopf, which has none. Each controller and
          the event recorders still get a client of their own, so a limit, once set, is
          per component;
        - ``$KUBECONFIG`` / ``~/.kube/config`` before the in-cluster account;
        - no leader election (``leader_elect=False``; turn it on for more than one replica):
          the Lease is ``name``, in the pod's own namespace in a cluster, else ``default``;
        - no secure port (``serving=ServingOptions()``): serve metrics and health when
          asked;
        - human-readable logs (``log_format="console"``).
        """
        defaults: dict[str, Any] = {
            "client": ClientOptions(
                kube_api_qps=0.0, kube_api_burst=0, kubeconfig_default_rules=True
            ),
            "election": LeaderElectionOptions(
                leader_elect=False,
                resource_name=name,
                resource_namespace=_pod_namespace() or "default",
            ),
            "serving": ServingOptions(),
            "log_format": "console",
        }
        defaults.update(changes)
        return cls(**defaults)

    def validate(self) -> None:
        """Raise :class:`~kcontrol.errors.OptionsError` for values that cannot work, alone or
        together."""
        self.client.validate()
        self.serving.validate()
        if self.event_loop not in EVENT_LOOPS:
            raise OptionsError(
                f"--event-loop: unknown event loop {self.event_loop!r} "
                f"(possible values: {', '.join(EVENT_LOOPS)})"
            )
        if self.event_loop == "uvloop" and not uvloop_installed():
            raise OptionsError(
                "--event-loop=uvloop: uvloop is not installed (pip install 'kcontrol[uvloop]')"
            )
        self.election.validate()
        if self.election.shards > 1 and (self.namespace or self.namespaces):
            raise OptionsError(
                "--shards above 1 cuts namespaces apart: it cannot work within one namespace"
            )
        if self.namespace and self.namespaces:
            raise OptionsError("give the manager a namespace or namespaces, not both")


_SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def _pod_namespace() -> str | None:
    """The namespace this process runs in, when in a pod (its service account's)."""
    try:
        with open(_SERVICE_ACCOUNT_NAMESPACE, encoding="utf-8") as file:
            return file.read().strip() or None
    except OSError:
        return None

"""The manager: runs the enabled controllers under leader election, with health and metrics.

The lifecycle of kube-controller-manager, in structured-concurrency form. :meth:`Manager.run`
owns everything in one task tree::

    ApiClient session
    └── task group "infrastructure": secure server (HTTPS; plain HTTP only with
        --metrics-port), the manager's event broadcasters
        └── (body) the election (no election, one Lease, or shards:
            :mod:`kcontrol.manager._elections`)
            └── per controller set: informer factory, one event broadcaster per controller
                └── while leading: task group "controllers"

Clients: one HTTP session, and per component a client with its own ``--kube-api-qps`` /
``--kube-api-burst`` token bucket and user agent ``kcontrol-manager/<identity>/<component>``
(:meth:`~kcontrol.client.ApiClient.for_component`): ``shared-informers`` for every list and
watch, ``leader-election`` for the Lease, and each controller under its own name for its
reads, writes and events, as kube-controller-manager's client builder does. So one
controller's burst of writes neither delays another's nor the lease renewals, and the audit
log names the writer.

Start-up: load the client config, build every enabled controller (their factories register
informers, so caches warm up on standbys too), start the health server, wait up to 10 s for
the API server's ``/healthz`` (:func:`~kcontrol.manager._apiserver.wait_for_api_server`;
``/readyz`` fails meanwhile, and if it never answers ok, :class:`ApiServerNotHealthy` ends
the run), start the rest of the infrastructure, then contend for the lease. Controllers run
only while leading, each guarded by the elector's local view of the lease
(:meth:`~kcontrol.leaderelection.LeaderElector.holds_lease`, see
:func:`kcontrol.controller.guarded_by`), so a process that was paused past its lease starts
no sync even before the elector notices.

Writes: the client each controller gets (:attr:`ControllerContext.client`) is gated on the
same check (:meth:`~kcontrol.client.ApiClient.with_write_gate`). From the moment the renew
deadline has passed without a successful renewal - on this process's monotonic clock, even
while a renewal request hangs - every create, update, patch or delete they send is refused
with :class:`~kcontrol.errors.WriteRefused` before it leaves, including one that was waiting
on the rate limiter. Their events pass the same gate: a deposed leader's event queue is
dropped at once instead of being flushed, so the stop after a lost lease takes no longer than
cancelling the controllers. Only the elector's Lease writes (and its own events about the
lease) use an ungated client. A standby acquires no earlier than a lease duration after the
last renewal it saw, which is after the renew deadline, so no write of a deposed leader
leaves after its successor could have started (one sent just before the deadline may still
be in transit; ``lease_duration - renew_deadline`` is the margin for that).

Sharded (``--shards=N``, N > 1; :class:`~kcontrol.leaderelection.ShardSet`): instead of one Lease,
the replicas share ``N`` shards of the namespaces' hash through a Lease each
(:class:`~kcontrol.leaderelection.ShardedElection`). A replica builds its
controllers and informers only once it holds shards - the informers selecting those shards -
and anew whenever the set it holds changes; the write gate asks, per request, whether the
written namespace's shard Lease is held and trusted; a shard is given back only after the
controllers covering it have drained. The single leader waits for every shard Lease of its
name to be given back before it runs anything, and sharded replicas yield to a single leader
(or to replicas with fewer shards): a restart between the two never has both at work.

Stopping, three ways:

- Cancellation (SIGTERM/SIGINT through :func:`kcontrol.manager.main`): the body is
  cancelled first - controllers stop taking work and drain their syncs in flight, then the
  elector releases the lease (``release_on_cancel``) so a standby takes over at once - and
  only then the infrastructure stops (events flushed, server closed) and the session closes.
  If the lease is lost during the drain, the syncs still in flight are cancelled.
- Leadership lost: the elector stops leading (the write gate closes) and cancels every
  controller, whose syncs in flight are cancelled, not drained; once they have stopped the
  manager stops the infrastructure and raises :class:`LeadershipLost`
  (kube-controller-manager exits 1 in that case, and so does ``main``).
- A component failing (the health port taken, a controller crashing): everything is
  cancelled in the same order and the error propagates.

Memory and CPU: as in kube-controller-manager, every informer drops
``metadata.managedFields`` (:func:`~kcontrol.informers.strip_managed_fields`); the library
already keeps their field sets as raw bytes, and dropping them saves the rest. String values
are interned, as every kcontrol reflector does by default. While it runs, each informer's
first sync ends with ``gc.freeze()`` (:func:`~kcontrol.informers.set_gc_freeze_after_sync`;
later relists settle with one ordinary collection instead): the cached objects move out of
the cyclic collector's generations, so no later collection walks the whole cache (figures in
docs/benchmarks.md, "Figures behind the code"). Objects are still freed by reference
counting; only cyclic garbage alive at that moment is kept. Embedders that share
the process with other work can opt out (``freeze_gc_after_sync=False``: one full collection
after each sync instead).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from kcontrol.client import (
    ApiClient,
    Client,
    ClientConfig,
    ShardSelector,
    WriteGate,
)
from kcontrol.controller import guarded_by
from kcontrol.errors import ApiServerNotHealthy, KcontrolError
from kcontrol.events import EventBroadcaster, EventRecorder
from kcontrol.informers import (
    CacheReader,
    ReflectorOptions,
    SharedInformerFactory,
    TransformFunc,
    set_gc_freeze_after_sync,
    strip_managed_fields,
)
from kcontrol.leaderelection import (
    HealthzAdaptor,
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElector,
    LeadershipLost,
    LeaseLock,
    ShardedElection,
    ShardedElectionConfig,
    ShardSet,
)
from kcontrol.logging import configure_unless_configured, get_logger
from kcontrol.manager._apiserver import wait_for_api_server
from kcontrol.manager._elections import (
    ControllerSet,
    Election,
    ShardedLeaders,
    SingleLeader,
    Unelected,
)
from kcontrol.manager._options import ManagerOptions
from kcontrol.manager._process import run_manager
from kcontrol.manager._registry import (
    ControllerContext,
    ControllerRegistry,
    ControllerSpec,
    Runnable,
    resolve_controller_flags,
)
from kcontrol.serving import HealthServer, SecureServer
from kcontrol.serving._http import Handler
from kcontrol.webhook import AdmissionTarget, WebhookServer, install_webhooks

__all__ = [
    "COMPONENT",
    "LEADER_ELECTION_HEALTH_TIMEOUT",
    "Manager",
    "default_identity",
    "new_metrics_registry",
]

INFORMER_TRANSFORM: TransformFunc = strip_managed_fields
"""Applied by the manager's shared informers to every object they cache (module docstring);
the reflectors then intern short strings, as they do by default."""

_CONSISTENT_FIRST_LIST = ReflectorOptions(consistent_first_list=True)

_log = get_logger(__name__)

COMPONENT = "kcontrol-manager"
"""The event source of the manager's own events and its user agent."""

WEBHOOK_INSTALL_RETRY = 5.0
"""Seconds between two attempts to install the webhook configurations (managed mode)."""

LEADER_ELECTION_HEALTH_TIMEOUT = 20.0
"""How long past its lease a leader may go without renewing before ``/livez`` fails
(kube-controller-manager's ``NewLeaderHealthzAdaptor(20 * time.Second)``)."""


def _recorders_of(broadcaster: EventBroadcaster) -> Callable[[str], EventRecorder]:
    def new_recorder(component: str) -> EventRecorder:
        return broadcaster.new_recorder(component=component)

    return new_recorder


def new_metrics_registry() -> CollectorRegistry:
    """A Prometheus registry with the process, platform and GC collectors, as the global
    registry has them; the manager serves it on ``/metrics``."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


def default_identity() -> str:
    """``<hostname>_<uuid>``, kube-controller-manager's leader-election identity."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class Manager:
    """Runs controllers: kcontrol-manager's process, and an operator's.

    Two ways to use it:

    - kcontrol-manager (:func:`kcontrol.manager.main`): ``Manager(options, controllers)`` with
      the parsed flags and the registry of installed controllers; it runs those
      ``controllers.select(options.controllers)`` names.
    - An operator: ``Manager(name="website-operator")`` takes
      :meth:`ManagerOptions.for_operator` defaults; add controllers with
      :func:`kcontrol.builder.controller_managed_by` (or :meth:`add`), then
      ``manager.main()`` (flags, logging, signals, exit status) or ``await manager.run()``.
      While it runs, reconciles use :attr:`client` (writes, gated by the Lease when electing),
      :attr:`cache` (reads from the shared informers) and :meth:`recorder` (events).

    ``registry`` receives every metric (client, queues, controllers, leader election) and is
    served on ``/metrics`` (default: a new registry with the process collectors).
    ``client_config`` replaces loading one from the options; ``run(client=...)`` replaces
    connecting at all (an operator's unit tests run it on a
    :class:`~kcontrol.testing.FakeClient`).
    :meth:`run` blocks until cancelled or until leadership is lost; see the module
    docstring. It raises :class:`~kcontrol.errors.ConfigError` for an unusable client
    configuration and :class:`~kcontrol.errors.ApiServerNotHealthy` when the API server never
    answered.
    """

    def __init__(
        self,
        options: ManagerOptions | None = None,
        controllers: ControllerRegistry | None = None,
        *,
        name: str | None = None,
        registry: CollectorRegistry | None = None,
        client_config: ClientConfig | None = None,
        freeze_gc_after_sync: bool = True,
    ) -> None:
        self.component = name or COMPONENT
        self._given_client: Client | None = None
        if options is None:
            options = ManagerOptions.for_operator(self.component)
        self._controllers = controllers if controllers is not None else ControllerRegistry()
        self._registry = registry if registry is not None else new_metrics_registry()
        self._client_config = client_config
        self._freeze_gc_after_sync = freeze_gc_after_sync
        self._informers: SharedInformerFactory | None = None
        self._writer: Client | None = None
        self._events: EventBroadcaster | None = None
        self._elector: LeaderElector | None = None
        self._shards: ShardSet | None = None
        self._election_health = HealthzAdaptor(LEADER_ELECTION_HEALTH_TIMEOUT)
        self._shutting_down = False
        self._leading = False
        self._api_server_healthy = False
        self._task: asyncio.Task[None] | None = None
        self.cache = CacheReader(self._require_informers)
        """Reads from the shared informers' caches (see :class:`~kcontrol.informers.CacheReader`):
        ``await manager.cache.get(WEBSITES, name, namespace=ns)``; while running."""
        self._retired_watch_events: dict[tuple[str, str], int] = {}
        self._webhooks: list[tuple[str, Handler]] = []
        self._admission_targets: list[AdmissionTarget] = []
        self._conversions: dict[str, str] = {}
        self._registry.register(_InformerSizes(self._informer_sizes))
        self._configure(options)

    def _informer_sizes(self) -> list[tuple[str, str, int, int]]:
        """(group, resource, objects cached, watch events received) of each shared informer
        while running; the events include those of the factories of earlier sharded
        generations (a counter never goes down)."""
        current: dict[tuple[str, str], tuple[int, int]] = {}
        informers = self._informers
        for informer in informers.informers() if informers is not None else ():
            key = (informer.resource.group, informer.resource.plural)
            current[key] = (len(informer.indexer), informer.watch_events)
        keys = sorted(set(current) | set(self._retired_watch_events))
        return [
            (
                group,
                resource,
                current.get((group, resource), (0, 0))[0],
                current.get((group, resource), (0, 0))[1]
                + self._retired_watch_events.get((group, resource), 0),
            )
            for group, resource in keys
        ]

    def _retire(self, informers: SharedInformerFactory) -> None:
        """Keep the watch events of a factory that stops (its counts carry on)."""
        for informer in informers.informers():
            key = (informer.resource.group, informer.resource.plural)
            self._retired_watch_events[key] = (
                self._retired_watch_events.get(key, 0) + informer.watch_events
            )

    def _configure(self, options: ManagerOptions) -> None:
        """Adopt ``options``: everything built from them is (re)built here, before :meth:`run`."""
        options.validate()
        # Unknown names, and unshardable controllers with --shards above 1, fail here.
        self._controllers.select(options.controllers, shards=options.election.shards)
        resolve_controller_flags(self._controllers.flags(), options.controller_flags)
        self._options = options
        self.identity = options.election.identity or default_identity()
        serving = options.serving
        self.health = HealthServer(
            host=serving.metrics_bind_address, port=serving.metrics_port, registry=self._registry
        )
        # The health checks and /metrics, served over HTTPS behind delegated authentication
        # and authorization on --secure-port, and over plain HTTP only on an explicit
        # --metrics-port.
        self.serving = (
            SecureServer(
                self.health,
                serving,
                registry=self._registry,
                user_agent=f"{self.component}/{self.identity}",
            )
            if serving.secure_port
            else None
        )
        self.webhook_server = WebhookServer(options.webhook)
        """Serves the webhooks added with :meth:`add_webhook` (the builder's
        :func:`~kcontrol.builder.webhook_managed_by`), while running."""
        for path, handler in self._webhooks:
            self.webhook_server.register(path, handler)
        self.health.add_livez_check(HealthzAdaptor.name, self._election_health.check)
        self.health.add_readyz_check("api-server", self._check_api_server_healthy)
        self.health.add_readyz_check("webhooks", self._check_webhooks_served)
        self.health.add_readyz_check("informer-sync", self._check_informers_synced)
        self.health.add_readyz_check("shutdown", self._check_not_shutting_down)

    @property
    def options(self) -> ManagerOptions:
        return self._options

    def add(self, spec: ControllerSpec) -> None:
        """Add a controller (a :class:`ControllerSpec`; the builder makes them). It runs when
        ``options.controllers`` enables it (``*``, the default, enables every controller
        enabled by default). Add before :meth:`run`; a second controller of the same name
        raises :class:`ValueError`."""
        if self._task is not None:
            raise RuntimeError("add controllers before the manager runs")
        self._controllers.add(spec)

    def add_webhook(
        self, path: str, handler: Handler, *, target: AdmissionTarget | None = None
    ) -> None:
        """Serve ``handler`` (an :class:`~kcontrol.webhook.AdmissionWebhook`, or any handler
        of ``POST`` requests) at ``path`` of the webhook server, which runs - on every
        replica, leading or not: webhooks are stateless - once any webhook is added. Add
        before :meth:`run`; ``/readyz`` waits until the server listens. ``target`` says what
        the webhook admits, for managed mode (``WebhookOptions.install_url``)."""
        if self._task is not None:
            raise RuntimeError("add webhooks before the manager runs")
        self.webhook_server.register(path, handler)
        self._webhooks.append((path, handler))
        if target is not None:
            self._admission_targets.append(target)

    def add_conversion_webhook(
        self, crd: str, converter: Handler, *, path: str | None = None
    ) -> str:
        """Serve ``converter`` (a :class:`~kcontrol.webhook.ConversionWebhook`) for the CRD
        named ``crd`` at ``path`` (default ``/convert-<crd>``), which managed mode points the
        CRD's conversion at; returns the path."""
        path = path or f"/convert-{crd}"
        self.add_webhook(path, converter)
        self._conversions[crd] = path
        return path

    @property
    def client(self) -> Client:
        """The client for reconciles' writes and live reads, while running (with leader
        election its writes pass the Lease's write gate, as each controller's own client)."""
        if self._writer is None:
            raise RuntimeError("the manager is not running: its client exists only in run()")
        return self._writer

    @property
    def informers(self) -> SharedInformerFactory:
        """The shared informer factory, while running."""
        return self._require_informers()

    def recorder(self, component: str | None = None) -> EventRecorder:
        """An event recorder whose events carry ``component`` (default: the manager's name)
        as their source. It may be made before :meth:`run`; events are written while the
        manager runs, through a client and queue of their own, so they never spend the
        reconciles' request budget (recorded while not running, they are dropped and
        counted, as a full queue's are)."""
        return _ManagerRecorder(self, component or self.component)

    def _require_informers(self) -> SharedInformerFactory:
        if self._informers is None:
            raise RuntimeError("the manager is not running: its caches exist only in run()")
        return self._informers

    def main(self, argv: Sequence[str] | None = None) -> int:
        """Parse ``argv`` (default ``sys.argv[1:]``; kcontrol-manager's flags, this manager's
        options as their defaults), set up logging unless the application did, run until
        SIGTERM or SIGINT, and return the exit status: 0 after a clean stop, 1 on failure or
        lost leadership, 2 for bad flags. ``sys.exit(manager.main())`` ends an operator's
        ``__main__``."""
        return run_manager(self, argv)

    @property
    def registry(self) -> CollectorRegistry:
        return self._registry

    @property
    def controller_names(self) -> list[str]:
        """The names of the enabled controllers."""
        return [spec.name for spec in self._controllers.select(self._options.controllers)]

    def leading(self) -> bool:
        """True while this process runs its controllers (with or without leader election)."""
        return self._leading

    def ready(self) -> bool:
        """True while :meth:`run` runs its controllers (it leads, or elects no leader) and
        every informer created so far has synced: what ``/readyz`` checks, without serving."""
        informers = self._informers
        return (
            self._leading
            and informers is not None
            and all(informer.has_synced() for informer in informers.informers())
        )

    def shutdown(self) -> None:
        """Begin a graceful stop: ``/readyz`` fails and :meth:`run` is cancelled.

        Safe to call from a signal handler and more than once; a second call while the first
        is draining cancels again, which abandons the syncs still in flight.
        """
        self._shutting_down = True
        if self._task is not None and not self._task.done():
            self._task.cancel()

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    # -- health checks -----------------------------------------------------------------------

    def _check_api_server_healthy(self) -> None:
        if not self._api_server_healthy:
            raise RuntimeError("waiting for the API server to be healthy")

    def _check_informers_synced(self) -> None:
        informers = self._informers
        if informers is None and self._shards is not None and not self._shards.held:
            return  # sharded, holding no shard: nothing to sync
        if informers is None:
            raise RuntimeError("informers not created yet")
        pending = [i.resource.plural for i in informers.informers() if not i.has_synced()]
        if pending:
            raise RuntimeError(f"informers not synced: {', '.join(pending)}")

    async def _install_webhooks(self, client: Client, url: str) -> None:
        """Managed mode: once the server listens, apply the configurations (retried every
        :data:`WEBHOOK_INSTALL_RETRY` seconds while the API server refuses them)."""
        await self.webhook_server.wait_ready()
        url = url.replace("{port}", str(self.webhook_server.port))
        while True:
            try:
                await install_webhooks(
                    client,
                    name=self._options.webhook.install_name or self.component,
                    url=url,
                    ca_bundle=self.webhook_server.ca_bundle,
                    admission=self._admission_targets,
                    conversions=self._conversions,
                )
            except KcontrolError as error:
                _log.error("installing the webhook configurations failed", error=str(error))
                await asyncio.sleep(WEBHOOK_INSTALL_RETRY)
                continue
            _log.info("installed the webhook configurations", url=url)
            return

    def _check_webhooks_served(self) -> None:
        if self._webhooks and not self.webhook_server.ready():
            raise RuntimeError("the webhook server is not listening yet")

    def _check_not_shutting_down(self) -> None:
        if self._shutting_down:
            raise RuntimeError("shutting down")

    # -- lifecycle ---------------------------------------------------------------------------

    async def run(self, *, client: Client | None = None) -> None:
        """Run until cancelled (then return by raising ``CancelledError``) or until
        leadership is lost (then raise :class:`LeadershipLost`); start-up failures raise
        (class docstring).

        ``client`` replaces connecting at all: the manager runs on that client - an
        operator's unit tests pass a :class:`~kcontrol.testing.FakeClient` - uses it for every
        component as it is (no per-component budgets, no write gate), does not wait for the
        API server's health and does not close it; the secure port needs a real connection
        and is not served then. A manager runs once at a time; it may run again after a run
        has ended (each run builds its controllers and caches anew).
        """
        if self._task is not None and not self._task.done():
            raise RuntimeError("this Manager is already running")
        self._task = asyncio.current_task()
        self._shutting_down = False
        self._api_server_healthy = False
        self._given_client = client
        configure_unless_configured(
            log_format=self._options.log_format, verbosity=self._options.verbosity
        )
        previous = set_gc_freeze_after_sync(self._freeze_gc_after_sync)
        try:
            await self._run()
        finally:
            set_gc_freeze_after_sync(previous)

    async def _run(self) -> None:
        options = self._options
        _log.info(
            "starting the manager",
            component=self.component,
            identity=self.identity,
            controllers=",".join(self.controller_names) or "none",
        )
        if self._given_client is not None:
            await self._run_on(self._given_client, None)
            return
        config = self._client_config or await options.client.load_config()
        async with ApiClient(
            config,
            qps=options.client.kube_api_qps,
            burst=options.client.kube_api_burst,
            user_agent=f"{self.component}/{self.identity}",
            registry=self._registry,
        ) as client:
            await self._run_on(client, config)

    async def _run_on(self, client: Client, config: ClientConfig | None) -> None:
        """Everything :meth:`run` does once it has a client (``config``: its configuration,
        for the secure port's reviews; ``None`` with a client given to the constructor)."""
        options = self._options
        election_client = self._component_client(client, "leader-election")
        broadcasters = [
            EventBroadcaster(
                election_client,
                component=self.component,
                host=socket.gethostname(),
                registry=self._registry,
            )
        ]
        election = self._new_election(election_client, broadcasters[0].new_recorder())
        gate = election.gate
        self._writer = self._gated(client, gate)
        # The recorders of manager.recorder(): events on a client of their own.
        self._events = EventBroadcaster(
            self._gated(self._component_client(client, "events"), gate),
            component=self.component,
            host=socket.gethostname(),
            registry=self._registry,
        )
        broadcasters.append(self._events)
        sets = _Sets(
            self,
            client,
            gate,
            self._controllers.select(options.controllers),
            resolve_controller_flags(self._controllers.flags(), options.controller_flags),
        )
        lost = False
        unhealthy: ApiServerNotHealthy | None = None
        async with asyncio.TaskGroup() as infrastructure:
            owned: list[asyncio.Task[None]] = []
            # Serving first: /readyz says why we are not ready.
            if self.serving is not None and config is not None:
                owned.append(infrastructure.create_task(self.serving.run(config), name="serving"))
            if options.serving.metrics_port:
                owned.append(infrastructure.create_task(self.health.run(), name="health"))
            if self._webhooks:
                owned.append(infrastructure.create_task(self.webhook_server.run(), name="webhooks"))
                if options.webhook.install_url:
                    owned.append(
                        infrastructure.create_task(
                            self._install_webhooks(client, options.webhook.install_url),
                            name="install webhooks",
                        )
                    )
            try:
                if isinstance(client, ApiClient):
                    await wait_for_api_server(client)
            except ApiServerNotHealthy as error:
                unhealthy = error  # raised below, not wrapped by the task group
            else:
                self._api_server_healthy = True
                for broadcaster in broadcasters:
                    owned.append(
                        infrastructure.create_task(
                            broadcaster.run(), name=f"events {broadcaster.component}"
                        )
                    )
                await election.run(sets)  # returns only when leadership is lost
                lost = True
            # The API server never answered, or leadership was lost and every controller
            # has stopped: stop the rest.
            for task in owned:
                task.cancel()

        if unhealthy is not None:
            raise unhealthy
        if lost:
            raise LeadershipLost(f"leader election lost ({self.identity})")

    def _new_election(self, client: Client, recorder: EventRecorder) -> Election:
        """The election ``options.election`` asks for, its Leases written with ``client``."""
        election = self._options.election
        self._shards = None
        if not election.leader_elect:
            return Unelected()
        if election.shards <= 1:
            return SingleLeader(self._new_elector(client, recorder), client, election)
        shards = self._shards = ShardSet(election.shards, self._registry)
        sharded = ShardedElection(
            ShardedElectionConfig(
                client=client,
                namespace=election.resource_namespace,
                name=election.resource_name,
                identity=self.identity,
                shards=shards.count,
                lease_duration=election.lease_duration,
                renew_deadline=election.renew_deadline,
                retry_period=election.retry_period,
                registry=self._registry,
                exclusive_with=election.resource_name,
            )
        )
        self._election_health.set_leader_election(sharded)
        return ShardedLeaders(sharded, shards, client, election)

    def _new_informers(self, client: Client, shard: ShardSelector | None) -> SharedInformerFactory:
        """The shared informer factory (of one sharded generation: over ``shard``), on the
        ``shared-informers`` client, as kube-controller-manager's client builder makes it.

        A sharded generation's informers list first with a consistent read, not from the
        watch cache at ``"0"``: they start while shards change hands, right after the
        previous generation's syncs drained or another replica gave a shard back after its
        last write, and a cache missing those writes would have a ReplicaSet or Job
        controller create pods again (the expectations that covered them stayed with the
        old controllers)."""
        return SharedInformerFactory(
            self._component_client(client, "shared-informers"),
            namespace=self._options.namespace,
            namespaces=self._options.namespaces,
            scopes=self._options.cache_scopes,
            transform=INFORMER_TRANSFORM,
            shard=shard,
            reflector_options=None if shard is None else _CONSISTENT_FIRST_LIST,
        )

    def _component_client(self, client: Client, name: str) -> Client:
        if not isinstance(client, ApiClient):
            return client  # a client given to the constructor (a fake): used as it is
        return client.for_component(
            name, qps=self._options.client.kube_api_qps, burst=self._options.client.kube_api_burst
        )

    def _gated(self, client: Client, gate: tuple[WriteGate, str] | None) -> Client:
        if gate is None or not isinstance(client, ApiClient):
            return client
        check, name = gate
        return client.with_write_gate(check, name=name)

    def _build(
        self,
        root: Client,
        informers: SharedInformerFactory,
        broadcasters: list[EventBroadcaster],
        gate: tuple[WriteGate, str] | None,
        *,
        specs: Sequence[ControllerSpec],
        controller_flags: dict[str, Any],
    ) -> list[tuple[str, Runnable]]:
        """Build every enabled controller, each with its own client and event broadcaster
        (appended to ``broadcasters``, for the caller to run), as kube-controller-manager
        does: a controller's events are written with its own client, from its own queue.

        With leader election, a controller's writes pass the write gate: once the lease can
        no longer be trusted (the renew deadline passed on our clock) they are refused, even
        one that was waiting on the rate limiter; its events pass the same gate.
        """
        built: list[tuple[str, Runnable]] = []
        for spec in specs:
            client = self._component_client(root, spec.name)
            writer = self._gated(client, gate)
            broadcaster = EventBroadcaster(
                writer, component=spec.name, host=socket.gethostname(), registry=self._registry
            )
            context = ControllerContext(
                client=writer,
                informers=informers,
                options=self._options,
                registry=self._registry,
                identity=self.identity,
                recorder_factory=_recorders_of(broadcaster),
                flags=controller_flags,
            )
            runnable = spec.factory(context)
            if runnable is None:
                _log.warning(
                    "controller has nothing to run here; skipping it", controller=spec.name
                )
                continue
            broadcasters.append(broadcaster)
            _log.info("built controller", controller=spec.name)
            built.append((spec.name, runnable))
        return built

    def _new_elector(self, client: Client, recorder: EventRecorder) -> LeaderElector:
        """The elector of ``--leader-elect-resource-namespace/name``, also checked by the
        ``leaderElection`` liveness check."""
        options = self._options
        lock = LeaseLock(
            client,
            options.election.resource_namespace,
            options.election.resource_name,
            self.identity,
            recorder=recorder,
        )

        def on_new_leader(identity: str) -> None:
            if identity and identity != self.identity:
                _log.info("new leader elected", leader=identity)

        elector = self._elector = LeaderElector(
            LeaderElectionConfig(
                lock=lock,
                lease_duration=options.election.lease_duration,
                renew_deadline=options.election.renew_deadline,
                retry_period=options.election.retry_period,
                release_on_cancel=True,
                name=options.election.resource_name,
                callbacks=LeaderCallbacks(on_new_leader=on_new_leader),
                registry=self._registry,
            )
        )
        self._election_health.set_leader_election(elector)
        return elector

    async def _run_controllers(
        self,
        runnables: Sequence[tuple[str, Runnable]],
        guard: Callable[[], bool] | None,
        owns: Callable[[str], bool] | None = None,
    ) -> None:
        """Run ``runnables`` until cancelled (or one fails), syncing while ``guard()`` holds
        and only the keys ``owns`` accepts (:func:`~kcontrol.controller.guarded_by`).
        Cancelled, the controllers drain their syncs in flight for at most
        ``graceful_shutdown_timeout`` seconds; past it they are cancelled again, which
        cancels the syncs still running (controller-runtime's ``GracefulShutdownTimeout``),
        so one hung sync cannot hold a shard's Lease, or the process, forever."""
        self._leading = True
        _log.info("starting controllers", count=len(runnables))
        loop = asyncio.get_running_loop()
        deadline: asyncio.TimerHandle | None = None
        try:
            async with asyncio.TaskGroup() as controllers:
                guarding = guarded_by(guard, owns=owns) if guard is not None else None
                with guarding or contextlib.nullcontext():
                    tasks = [
                        controllers.create_task(runnable.run(), name=f"controller {name}")
                        for name, runnable in runnables
                    ]
                try:
                    await asyncio.Event().wait()  # until cancelled, or a controller fails
                except asyncio.CancelledError:
                    grace = self._options.graceful_shutdown_timeout
                    if grace >= 0:
                        deadline = loop.call_later(grace, _cancel_syncs_in_flight, tasks, grace)
                    raise
        finally:
            if deadline is not None:
                deadline.cancel()
            self._leading = False
            _log.info("all controllers stopped")


class _Sets:
    """The manager's side of an election (:class:`~kcontrol.manager._elections.ControllerSets`):
    the enabled controllers ``specs``, built on ``client`` with writes through ``gate``."""

    def __init__(
        self,
        manager: Manager,
        client: Client,
        gate: tuple[WriteGate, str] | None,
        specs: Sequence[ControllerSpec],
        controller_flags: dict[str, Any],
    ) -> None:
        self._manager = manager
        self._client = client
        self._gate = gate
        self._specs = specs
        self._controller_flags = controller_flags

    def build(self, shard: ShardSelector | None) -> ControllerSet:
        manager = self._manager
        informers = manager._informers = manager._new_informers(self._client, shard)
        broadcasters: list[EventBroadcaster] = []
        runnables = manager._build(
            self._client,
            informers,
            broadcasters,
            self._gate,
            specs=self._specs,
            controller_flags=self._controller_flags,
        )
        return ControllerSet(informers, broadcasters, runnables)

    def retire(self, built: ControllerSet) -> None:
        manager = self._manager
        manager._retire(built.informers)
        if manager._informers is built.informers:
            manager._informers = None

    async def run_controllers(
        self,
        built: ControllerSet,
        guard: Callable[[], bool] | None,
        owns: Callable[[str], bool] | None = None,
    ) -> None:
        await self._manager._run_controllers(built.runnables, guard, owns)


class _InformerSizes:
    """``kcontrol_informer_cached_objects{group, resource}`` (the objects each shared
    informer holds) and ``kcontrol_informer_watch_events_total{group, resource}`` (the watch
    events they received), read at scrape time: a sharded replica's share of the cluster."""

    def __init__(self, read: Callable[[], list[tuple[str, str, int, int]]]) -> None:
        self._read = read

    def collect(self) -> list[Metric]:
        cached = GaugeMetricFamily(
            "kcontrol_informer_cached_objects",
            "Objects in each shared informer's cache.",
            labels=["group", "resource"],
        )
        events = CounterMetricFamily(
            "kcontrol_informer_watch_events",
            "Watch events the shared informers received, bookmarks included.",
            labels=["group", "resource"],
        )
        for group, resource, objects, received in self._read():
            cached.add_metric([group, resource], objects)
            events.add_metric([group, resource], received)
        return [cached, events]

    def describe(self) -> list[Metric]:
        return []


def _cancel_syncs_in_flight(tasks: Sequence[asyncio.Task[None]], grace: float) -> None:
    """Cancel again the controllers still draining: their syncs in flight are cancelled."""
    draining = [task for task in tasks if not task.done()]
    if draining:
        _log.warning(
            "syncs still running after the graceful shutdown timeout; cancelling them",
            timeout=grace,
            controllers=[task.get_name() for task in draining],
        )
    for task in draining:
        task.cancel()


class _ManagerRecorder:
    """:meth:`Manager.recorder`'s recorder: forwards to the manager's event broadcaster once it
    runs. Recording never blocks or raises (the :class:`EventRecorder` contract); before the
    manager runs there is nowhere to send an event, so it is logged at debug level and
    dropped."""

    def __init__(self, manager: Manager, component: str) -> None:
        self._manager = manager
        self._component = component
        self._bound: tuple[EventBroadcaster, EventRecorder] | None = None

    def _recorder(self) -> EventRecorder | None:
        broadcaster = self._manager._events
        if broadcaster is None:
            return None
        if self._bound is None or self._bound[0] is not broadcaster:
            self._bound = (broadcaster, broadcaster.new_recorder(component=self._component))
        return self._bound[1]

    def event(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        recorder = self._recorder()
        if recorder is None:
            _log.debug("event dropped: the manager is not running", reason=reason)
            return
        recorder.event(obj, event_type, reason, message)

    def eventf(
        self, obj: Mapping[str, Any], event_type: str, reason: str, fmt: str, *args: object
    ) -> None:
        recorder = self._recorder()
        if recorder is None:
            _log.debug("event dropped: the manager is not running", reason=reason)
            return
        recorder.eventf(obj, event_type, reason, fmt, *args)

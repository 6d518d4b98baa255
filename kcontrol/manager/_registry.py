"""Which controllers a manager can run: one registry, names to factories.

The default registry is read from the Python entry-point group ``kcontrol.controllers``, so a
package of controllers registers itself in its own ``pyproject.toml``::

    [project.entry-points."kcontrol.controllers"]
    deployment = "kcontrol_controllers.deployment:new_controller"    # a ControllerFactory
    replicaset = "kcontrol_controllers.replicaset:SPEC"              # or a ControllerSpec

and kcontrol never imports the package that provides them. The entry point's name is the
controller's name (what ``--controllers`` refers to).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from kcontrol.client import Client
from kcontrol.errors import OptionsError
from kcontrol.events import EventRecorder
from kcontrol.informers import SharedInformerFactory
from kcontrol.logging import get_logger
from kcontrol.manager._options import ManagerOptions

__all__ = [
    "ENTRY_POINT_GROUP",
    "ControllerContext",
    "ControllerFactory",
    "ControllerFlag",
    "ControllerRegistry",
    "ControllerSpec",
    "Runnable",
    "controller_enabled",
    "resolve_controller_flags",
]

_log = get_logger(__name__)

ENTRY_POINT_GROUP = "kcontrol.controllers"
"""The entry-point group a package registers its controllers' :class:`ControllerSpec` in;
kcontrol-manager loads every one (:meth:`ControllerRegistry.from_entry_points`)."""


@dataclass(frozen=True, slots=True)
class ControllerFlag:
    """A flag a controller declares for itself (kube-controller-manager's per-controller
    options, such as ``--concurrent-deployment-syncs``), through its
    :class:`~kcontrol.manager.ControllerSpec`.

    ``name`` is the flag without its dashes; ``parse`` turns the command-line text into the
    value (raising :class:`ValueError`); ``minimum`` bounds numeric values. The manager accepts
    every registered controller's flags, enabled or not (as kube-controller-manager does), and
    a controller reads its value with :meth:`ControllerContext.flag
    <kcontrol.manager.ControllerContext.flag>`.
    """

    name: str
    default: Any
    help: str
    parse: Callable[[str], Any] = int
    minimum: float | None = None

    def check(self, value: Any) -> None:
        """Raise :class:`OptionsError` unless ``value`` is acceptable."""
        if self.minimum is not None and not value >= self.minimum:
            raise OptionsError(f"--{self.name} must be at least {self.minimum:g}, not {value}")


def resolve_controller_flags(
    flags: Iterable[ControllerFlag], given: Mapping[str, Any]
) -> dict[str, Any]:
    """Every declared flag's value: ``given`` (by name) over the declared defaults.

    Raises :class:`OptionsError` for a value out of bounds or a name nobody declared.
    """
    declared = {flag.name: flag for flag in flags}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise OptionsError(f"unknown controller flags: {', '.join('--' + n for n in unknown)}")
    values = {name: flag.default for name, flag in declared.items()}
    values.update(given)
    for name, value in values.items():
        declared[name].check(value)
    return values


def controller_enabled(name: str, controllers: Sequence[str], enabled_by_default: bool) -> bool:
    """kube-controller-manager's ``IsControllerEnabled``: the first of ``name`` / ``-name``
    decides; otherwise ``*`` enables the controllers that are on by default."""
    star = False
    for entry in controllers:
        if entry == name:
            return True
        if entry == f"-{name}":
            return False
        if entry == "*":
            star = True
    return star and enabled_by_default


class Runnable(Protocol):
    """A long-lived component: ``run()`` blocks until cancelled and owns its tasks.

    On cancellation it finishes or abandons its work, releases what it holds, and lets the
    ``CancelledError`` propagate. :class:`kcontrol.controller.Controller` is one.
    """

    async def run(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ControllerContext:
    """What a :data:`ControllerFactory` gets to build its controller with.

    - ``client``: this controller's own API client (reads and writes), with its own
      ``--kube-api-qps``/``--kube-api-burst`` budget and the user agent
      ``kcontrol-manager/<identity>/<controller name>``. With ``--leader-elect`` its writes
      pass a write gate: once this process can no longer trust its lease they raise
      :class:`~kcontrol.errors.WriteRefused` instead of being sent.
    - ``informers``: the shared informer factory; ask it for informers while building, they
      are started by the manager (caches are shared between controllers).
    - ``options``: the parsed manager flags (``kube_api_qps``, ...).
    - ``flags``: every controller-declared flag's value, by name (see :meth:`flag`).
    - ``registry``: the Prometheus registry served on ``/metrics``; pass it to controllers.
    - ``identity``: this process's leader-election identity (``<hostname>_<uuid>``).
    - ``new_recorder(component)``: an event recorder whose events carry ``component`` as
      their source (``deployment-controller``); this controller's events are queued in its
      own broadcaster and written with its own client.

    Controllers run only while this process leads (with ``--leader-elect``); a
    :class:`~kcontrol.controller.Controller` built here is additionally guarded so that it
    starts no sync once the lease can no longer be trusted locally, and when leadership is
    lost its syncs in flight are cancelled rather than drained.
    """

    client: Client
    informers: SharedInformerFactory
    options: ManagerOptions
    registry: CollectorRegistry
    identity: str
    recorder_factory: Callable[[str], EventRecorder]
    flags: Mapping[str, Any] = field(default_factory=dict)

    def new_recorder(self, component: str) -> EventRecorder:
        """An event recorder for ``component``."""
        return self.recorder_factory(component)

    def flag(self, name: str) -> Any:
        """The value of the controller flag ``name`` (``"concurrent-deployment-syncs"``): as
        given on the command line, else as its :class:`ControllerFlag` declares. Raises
        :class:`KeyError` for a flag no registered controller declares."""
        return self.flags[name]


ControllerFactory = Callable[[ControllerContext], Runnable | None]
"""Builds a controller: wires its informers and queue, returns it unstarted.

Returning ``None`` means "nothing to run here" (say, an API the cluster does not serve);
the manager logs it and carries on. Factories run once per process, before leader election,
so their informers warm up on standbys too.
"""


@dataclass(frozen=True, slots=True)
class ControllerSpec:
    """A named controller factory; ``enabled_by_default`` is what ``*`` selects; ``flags``
    are the command-line flags the controller declares (``--concurrent-...-syncs``);
    ``shardable=False`` refuses ``--shards`` above 1 while the controller is enabled (its
    work spans namespaces: the garbage collector's graph)."""

    name: str
    factory: ControllerFactory
    enabled_by_default: bool = True
    flags: tuple[ControllerFlag, ...] = ()
    shardable: bool = True


class ControllerRegistry:
    """Controller names to :class:`ControllerSpec`; one per manager.

    Names are unique. :meth:`select` applies a ``--controllers`` list.
    """

    def __init__(self, specs: Iterable[ControllerSpec] = ()) -> None:
        self._specs: dict[str, ControllerSpec] = {}
        for spec in specs:
            self.add(spec)

    def add(self, spec: ControllerSpec) -> None:
        """Register ``spec``; a second controller with the same name raises ValueError."""
        if not spec.name or spec.name.startswith("-") or spec.name == "*" or "," in spec.name:
            raise ValueError(f"invalid controller name {spec.name!r}")
        if spec.name in self._specs:
            raise ValueError(f"controller {spec.name!r} is registered twice")
        taken = {flag.name for other in self._specs.values() for flag in other.flags}
        for flag in spec.flags:
            if flag.name in taken:
                raise ValueError(f"flag --{flag.name} of {spec.name!r} is declared twice")
        self._specs[spec.name] = spec

    def register(
        self, name: str, factory: ControllerFactory, *, enabled_by_default: bool = True
    ) -> None:
        """Register ``factory`` under ``name``."""
        self.add(ControllerSpec(name, factory, enabled_by_default))

    def flags(self) -> list[ControllerFlag]:
        """The flags every registered controller declares (enabled or not, as
        kube-controller-manager accepts them all), in name order."""
        return sorted(
            (flag for spec in self._specs.values() for flag in spec.flags), key=lambda f: f.name
        )

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        return sorted(self._specs)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[ControllerSpec]:
        return iter(sorted(self._specs.values(), key=lambda spec: spec.name))

    def __len__(self) -> int:
        return len(self._specs)

    def select(self, controllers: Sequence[str], *, shards: int = 1) -> list[ControllerSpec]:
        """The specs that ``controllers`` (a ``--controllers`` list) enables, by name.

        Raises :class:`OptionsError` for entries naming no known controller, as
        kube-controller-manager refuses them, and when ``shards`` (``--shards``) is above 1
        and an enabled controller is not shardable.
        """
        for entry in controllers:
            name = entry.removeprefix("-")
            if entry != "*" and name not in self._specs:
                known = ", ".join(self.names()) or "none"
                raise OptionsError(
                    f"--controllers: {entry!r} is not in the list of known controllers ({known})"
                )
        selected = [
            spec
            for spec in self
            if controller_enabled(spec.name, controllers, spec.enabled_by_default)
        ]
        unshardable = [spec.name for spec in selected if not spec.shardable]
        if shards > 1 and unshardable:
            raise OptionsError(
                f"--controllers: {', '.join(unshardable)} cannot run with --shards={shards}: "
                "its work spans every namespace; run it in a kcontrol-manager of its own "
                "with --shards=1"
            )
        return selected

    @classmethod
    def from_entry_points(cls, group: str = ENTRY_POINT_GROUP) -> ControllerRegistry:
        """The controllers installed packages declare in the entry-point group ``group``.

        An entry point may name a :class:`ControllerSpec` (its own name must match) or a
        factory (enabled by default).
        """
        registry = cls()
        for entry in sorted(entry_points(group=group), key=lambda e: e.name):
            loaded = entry.load()
            if isinstance(loaded, ControllerSpec):
                if loaded.name != entry.name:
                    raise ValueError(
                        f"entry point {entry.name!r} names controller spec {loaded.name!r}"
                    )
                registry.add(loaded)
            elif callable(loaded):
                registry.register(entry.name, loaded)
            else:
                raise TypeError(
                    f"entry point {entry.name!r} ({entry.value}) is neither a ControllerSpec "
                    "nor a factory"
                )
            _log.debug("registered controller", controller=entry.name, entry_point=entry.value)
        return registry

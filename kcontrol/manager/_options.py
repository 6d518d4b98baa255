"""Command-line flags of ``kcontrol-manager``, named as kube-controller-manager names them.

Flags follow Go's ``pflag`` conventions so existing manifests carry over: ``--flag=value`` or
``--flag value``, booleans as ``--leader-elect`` / ``--leader-elect=false``, durations as Go
duration strings (``15s``, ``500ms``, ``1m30s``), lists comma-separated.

kcontrol's additions and differences, all documented in ``--help``:

- ``--metrics-port`` (default 10257, kube-controller-manager's port): the health and metrics
  endpoint, served as plain HTTP (kube-controller-manager serves HTTPS on ``--secure-port``);
  ``0`` disables it.
- ``--log-format`` ``json`` (default) or ``console``.
- ``--leader-elect-identity``: the holder identity (default ``<hostname>_<uuid>``, as upstream).
"""

from __future__ import annotations

import argparse
import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kcontrol.errors import InvalidLeaderElectionConfig, OptionsError
from kcontrol.leaderelection import validate_timings
from kcontrol.logging import LOG_FORMATS, LogFormat

__all__ = [
    "ControllerFlag",
    "ManagerOptions",
    "OptionsError",
    "controller_enabled",
    "parse_args",
    "parse_bool",
    "parse_duration",
]

_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "\u00b5s": 1e-6,  # Go accepts the micro sign and the Greek mu
    "\u03bcs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART = re.compile("(\\d+(?:\\.\\d*)?|\\.\\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string: ``15s``, ``500ms``, ``1m30s``, ``1.5h``, ``0``.

    Raises :class:`ValueError` for anything ``time.ParseDuration`` would reject.
    """
    value = text.strip()
    sign = 1.0
    if value[:1] in ("+", "-"):
        sign = -1.0 if value[0] == "-" else 1.0
        value = value[1:]
    if value == "0":
        return 0.0
    if not value:
        raise ValueError(f"invalid duration {text!r}")
    total = 0.0
    position = 0
    for match in _DURATION_PART.finditer(value):
        if match.start() != position:
            break
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        position = match.end()
    if position != len(value):
        raise ValueError(f"invalid duration {text!r} (expected e.g. 15s, 500ms, 1m30s)")
    return sign * total


_TRUE = {"1", "t", "true", "y", "yes", "on"}
_FALSE = {"0", "f", "false", "n", "no", "off"}


def parse_bool(text: str) -> bool:
    """A boolean flag value as Go's ``strconv.ParseBool`` reads it (case-insensitive)."""
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"invalid boolean {text!r}")


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


@dataclass(frozen=True, slots=True, kw_only=True)
class ManagerOptions:
    """The parsed flags. Durations are seconds.

    ``controller_flags`` holds the controller-declared flags given on the command line, by
    name (``{"concurrent-deployment-syncs": 10}``); the others take their declared defaults
    when the manager builds its controllers.
    """

    kubeconfig: str | None = None
    master: str | None = None
    controllers: tuple[str, ...] = ("*",)
    controller_flags: Mapping[str, Any] = field(default_factory=dict)
    kube_api_qps: float = 20.0
    kube_api_burst: int = 30
    leader_elect: bool = True
    leader_elect_lease_duration: float = 15.0
    leader_elect_renew_deadline: float = 10.0
    leader_elect_retry_period: float = 2.0
    leader_elect_resource_lock: str = "leases"
    leader_elect_resource_name: str = "kube-controller-manager"
    leader_elect_resource_namespace: str = "kube-system"
    leader_elect_identity: str | None = None
    bind_address: str = "0.0.0.0"
    metrics_port: int = 10257
    verbosity: int = 0
    log_format: LogFormat = "json"

    def validate(self) -> None:
        """Raise :class:`OptionsError` for values that cannot work together."""
        if self.kube_api_burst < 1 and self.kube_api_qps > 0:
            raise OptionsError("--kube-api-burst must be at least 1")
        if not 0 <= self.metrics_port <= 65535:
            raise OptionsError(f"--metrics-port {self.metrics_port} is not a port number")
        try:
            ipaddress.ip_address(self.bind_address)
        except ValueError:
            raise OptionsError(
                f"--bind-address {self.bind_address!r} is not an IP address"
            ) from None
        if self.leader_elect:
            try:
                validate_timings(
                    self.leader_elect_lease_duration,
                    self.leader_elect_renew_deadline,
                    self.leader_elect_retry_period,
                    names=(
                        "--leader-elect-lease-duration",
                        "--leader-elect-renew-deadline",
                        "--leader-elect-retry-period",
                    ),
                )
            except InvalidLeaderElectionConfig as error:
                raise OptionsError(str(error)) from None
            if not self.leader_elect_resource_name or not self.leader_elect_resource_namespace:
                raise OptionsError("--leader-elect-resource-name and -namespace must be set")


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


def _duration(text: str) -> float:
    try:
        seconds = parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return seconds


def _bool(text: str) -> bool:
    try:
        return parse_bool(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _list(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _controller_flag_type(flag: ControllerFlag) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = flag.parse(text)
            flag.check(value)
        except (ValueError, OptionsError) as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return value

    parse.__name__ = flag.parse.__name__  # argparse names the type in its messages
    return parse


def build_parser(
    prog: str = "kcontrol-manager", controller_flags: Iterable[ControllerFlag] = ()
) -> argparse.ArgumentParser:
    """The argument parser (also renders ``--help``), with ``controller_flags`` added."""
    defaults = ManagerOptions()
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "Runs kcontrol controllers, with kube-controller-manager's flags, leader election "
            "and health endpoints."
        ),
        allow_abbrev=False,
    )
    add = parser.add_argument
    add("--version", action="store_true", help="Print the version and exit.")
    add("--kubeconfig", help="Path to a kubeconfig file. Without it and --master: in-cluster.")
    add("--master", help="The API server address; overrides the kubeconfig's server.")
    add(
        "--controllers",
        type=_list,
        default=defaults.controllers,
        help=(
            "Controllers to enable: '*' enables the ones on by default, 'foo' enables foo, "
            "'-foo' disables foo; the first match wins. Default '*'."
        ),
    )
    for flag in controller_flags:
        add(
            f"--{flag.name}",
            dest=_flag_dest(flag.name),
            type=_controller_flag_type(flag),
            default=argparse.SUPPRESS,  # only flags given land in controller_flags
            help=f"{flag.help} (default {flag.default})",
        )
    add("--kube-api-qps", type=float, default=defaults.kube_api_qps)
    add("--kube-api-burst", type=int, default=defaults.kube_api_burst)
    add(
        "--leader-elect",
        type=_bool,
        nargs="?",
        const=True,
        default=defaults.leader_elect,
        help="Run controllers only while holding the lease (default true).",
    )
    add("--leader-elect-lease-duration", type=_duration, default="15s")
    add("--leader-elect-renew-deadline", type=_duration, default="10s")
    add("--leader-elect-retry-period", type=_duration, default="2s")
    add("--leader-elect-resource-lock", choices=["leases"], default="leases")
    add("--leader-elect-resource-name", default=defaults.leader_elect_resource_name)
    add("--leader-elect-resource-namespace", default=defaults.leader_elect_resource_namespace)
    add(
        "--leader-elect-identity",
        default=None,
        help="kcontrol: the lease holder identity (default <hostname>_<uuid>).",
    )
    add("--bind-address", default=defaults.bind_address, help="Address of the metrics port.")
    add(
        "--metrics-port",
        type=int,
        default=defaults.metrics_port,
        help=(
            "kcontrol: port serving /metrics, /healthz, /livez and /readyz over plain HTTP "
            "(kube-controller-manager serves them over HTTPS on --secure-port); 0 disables."
        ),
    )
    add("-v", "--v", dest="verbosity", type=int, default=0, help="Log verbosity (klog levels).")
    add("--log-format", choices=LOG_FORMATS, default=defaults.log_format)
    return parser


def _flag_dest(name: str) -> str:
    return "controller_flag:" + name


def parse_args(
    argv: Sequence[str] | None, controller_flags: Iterable[ControllerFlag] = ()
) -> tuple[ManagerOptions, bool]:
    """Parse ``argv`` into options; the flag says whether ``--version`` was asked for.

    ``controller_flags`` are the flags the registered controllers declare
    (:meth:`ControllerRegistry.flags <kcontrol.manager.ControllerRegistry.flags>`). Invalid
    flags exit with status 2 and a usage message (argparse's behaviour); values that are
    valid alone but not together raise :class:`OptionsError`.
    """
    flags = list(controller_flags)
    namespace = build_parser(controller_flags=flags).parse_args(argv)
    given = {
        flag.name: getattr(namespace, _flag_dest(flag.name))
        for flag in flags
        if hasattr(namespace, _flag_dest(flag.name))
    }
    options = ManagerOptions(
        kubeconfig=namespace.kubeconfig,
        master=namespace.master,
        controllers=namespace.controllers,
        controller_flags=given,
        kube_api_qps=namespace.kube_api_qps,
        kube_api_burst=namespace.kube_api_burst,
        leader_elect=namespace.leader_elect,
        leader_elect_lease_duration=namespace.leader_elect_lease_duration,
        leader_elect_renew_deadline=namespace.leader_elect_renew_deadline,
        leader_elect_retry_period=namespace.leader_elect_retry_period,
        leader_elect_resource_lock=namespace.leader_elect_resource_lock,
        leader_elect_resource_name=namespace.leader_elect_resource_name,
        leader_elect_resource_namespace=namespace.leader_elect_resource_namespace,
        leader_elect_identity=namespace.leader_elect_identity,
        bind_address=namespace.bind_address,
        metrics_port=namespace.metrics_port,
        verbosity=namespace.verbosity,
        log_format=namespace.log_format,
    )
    return options, bool(namespace.version)

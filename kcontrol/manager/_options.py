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
from collections.abc import Sequence
from dataclasses import dataclass

from kcontrol.errors import OptionsError
from kcontrol.logging import LOG_FORMATS, LogFormat

__all__ = [
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


@dataclass(frozen=True, slots=True, kw_only=True)
class ManagerOptions:
    """The parsed flags. Durations are seconds."""

    kubeconfig: str | None = None
    master: str | None = None
    controllers: tuple[str, ...] = ("*",)
    concurrent_deployment_syncs: int = 5
    concurrent_replicaset_syncs: int = 5
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
        if self.concurrent_deployment_syncs < 1 or self.concurrent_replicaset_syncs < 1:
            raise OptionsError("--concurrent-*-syncs must be at least 1")
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
            lease = self.leader_elect_lease_duration
            renew = self.leader_elect_renew_deadline
            retry = self.leader_elect_retry_period
            # client-go's NewLeaderElector rules.
            if min(lease, renew, retry) <= 0:
                raise OptionsError("leader election durations must be greater than zero")
            if lease <= renew:
                raise OptionsError(
                    "--leader-elect-lease-duration must be greater than "
                    "--leader-elect-renew-deadline"
                )
            if renew <= 1.2 * retry:
                raise OptionsError(
                    "--leader-elect-renew-deadline must be greater than 1.2 x "
                    "--leader-elect-retry-period"
                )
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


def build_parser(prog: str = "kcontrol-manager") -> argparse.ArgumentParser:
    """The argument parser (also renders ``--help``)."""
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
    add("--concurrent-deployment-syncs", type=int, default=defaults.concurrent_deployment_syncs)
    add("--concurrent-replicaset-syncs", type=int, default=defaults.concurrent_replicaset_syncs)
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


def parse_args(argv: Sequence[str] | None) -> tuple[ManagerOptions, bool]:
    """Parse ``argv`` into options; the flag says whether ``--version`` was asked for.

    Invalid flags exit with status 2 and a usage message (argparse's behaviour); values
    that are valid alone but not together raise :class:`OptionsError`.
    """
    namespace = build_parser().parse_args(argv)
    options = ManagerOptions(
        kubeconfig=namespace.kubeconfig,
        master=namespace.master,
        controllers=namespace.controllers,
        concurrent_deployment_syncs=namespace.concurrent_deployment_syncs,
        concurrent_replicaset_syncs=namespace.concurrent_replicaset_syncs,
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

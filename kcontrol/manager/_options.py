"""Command-line flags of ``kcontrol-manager``, named as kube-controller-manager names them.

Flags follow Go's ``pflag`` conventions so existing manifests carry over: ``--flag=value`` or
``--flag value``, booleans as ``--leader-elect`` / ``--leader-elect=false``, durations as Go
duration strings (``15s``, ``500ms``, ``1m30s``), lists comma-separated.

kcontrol's additions and differences, all documented in ``--help``:

- Defaults that let it run beside kube-controller-manager: the Lease
  ``kube-system/kcontrol-manager`` (:data:`DEFAULT_LEASE_NAME`; kube-controller-manager's is
  ``kube-system/kube-controller-manager``) and the secure port 10263
  (:data:`DEFAULT_SECURE_PORT`; kube-controller-manager serves on 10257).
- The secure port's flags are kube-controller-manager's (``--secure-port``, ``--cert-dir``,
  ``--tls-cert-file``, ``--client-ca-file``, ``--authentication-kubeconfig``, ...), with two
  kcontrol defaults: authentication and authorized answers are cached for a minute (upstream:
  10 s) so that a scrape every 15 s costs no review, and ``--authentication-kubeconfig`` /
  ``--authorization-kubeconfig`` default to the manager's own connection.
- ``--metrics-port`` (default 0: off): the same endpoints over plain HTTP without
  authentication, an opt-in for local runs.
- ``--log-format`` ``json`` (default) or ``console``.
- ``--leader-elect-identity``: the holder identity (default ``<hostname>_<uuid>``, as upstream).
"""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kcontrol.errors import InvalidLeaderElectionConfig, OptionsError
from kcontrol.leaderelection import validate_timings
from kcontrol.logging import LOG_FORMATS, LogFormat
from kcontrol.manager._authz import DEFAULT_ALWAYS_ALLOW_PATHS, AlwaysAllowPaths

__all__ = [
    "DEFAULT_LEASE_NAME",
    "DEFAULT_LEASE_NAMESPACE",
    "DEFAULT_SECURE_PORT",
    "ControllerFlag",
    "ManagerOptions",
    "OptionsError",
    "controller_enabled",
    "parse_args",
    "parse_bool",
    "parse_duration",
]

DEFAULT_LEASE_NAME = "kcontrol-manager"
DEFAULT_LEASE_NAMESPACE = "kube-system"
"""kcontrol-manager's own Lease, ``kube-system/kcontrol-manager``: beside kube-controller-manager
(whose Lease is ``kube-system/kube-controller-manager``) both lead, each its own controllers."""

DEFAULT_SECURE_PORT = 10263
"""kcontrol-manager's HTTPS port. No Kubernetes component uses it: kubelet has 10248, 10250
and 10255, kube-proxy 10249 and 10256, kube-controller-manager 10257, cloud-controller-manager
10258 (and 10260 for its webhooks), kube-scheduler 10259; 10251-10253 were the old insecure
ports and 10254 is ingress-nginx's metrics port. On one host network, kcontrol-manager and
those components never collide."""

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
    leader_elect_resource_name: str = DEFAULT_LEASE_NAME
    leader_elect_resource_namespace: str = DEFAULT_LEASE_NAMESPACE
    leader_elect_identity: str | None = None
    bind_address: str = "0.0.0.0"
    secure_port: int = DEFAULT_SECURE_PORT
    cert_dir: str = ""
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    client_ca_file: str | None = None
    authentication_kubeconfig: str | None = None
    authentication_skip_lookup: bool = False
    authentication_tolerate_lookup_failure: bool = False
    authentication_token_webhook_cache_ttl: float = 60.0
    authorization_kubeconfig: str | None = None
    authorization_always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    authorization_webhook_cache_authorized_ttl: float = 60.0
    authorization_webhook_cache_unauthorized_ttl: float = 10.0
    metrics_port: int = 0
    verbosity: int = 0
    log_format: LogFormat = "json"
    namespace: str | None = None
    """Watch and cache only this namespace's objects of namespaced resources (an operator
    with a Role rather than a ClusterRole); ``None``: every namespace."""
    kubeconfig_default_rules: bool = False
    """Without ``--kubeconfig`` and ``--master``: read ``$KUBECONFIG`` or ``~/.kube/config``
    before falling back to the in-cluster service account (client-go's default loading rules,
    controller-runtime's ``GetConfig``). Off for kcontrol-manager, which, like
    kube-controller-manager, then goes in-cluster; on in :meth:`for_operator`."""

    @classmethod
    def for_operator(cls, name: str, **changes: Any) -> ManagerOptions:
        """The defaults of an operator's manager (a library user's
        :class:`~kcontrol.manager.Manager`), with ``changes`` on top.

        They differ from kcontrol-manager's flags where an operator differs from
        kube-controller-manager:

        - no client-side rate limit (``kube_api_qps=0``): the API server's priority and
          fairness protects it, as SIG API Machinery recommends and controller-runtime
          defaults to since v0.21; client-go's 5 qps (or kube-controller-manager's 20) made
          an operator several times slower than kopf, which has none. Each controller and
          the event recorders still get a client of their own, so a limit, once set, is
          per component;
        - no leader election (``leader_elect=False``; turn it on for more than one replica):
          the Lease is ``name``, in the pod's own namespace in a cluster, else ``default``;
        - no secure port (``secure_port=0``): serve metrics and health when asked;
        - human-readable logs (``log_format="console"``);
        - ``$KUBECONFIG`` / ``~/.kube/config`` before the in-cluster account.
        """
        defaults: dict[str, Any] = {
            "kube_api_qps": 0.0,
            "kube_api_burst": 0,
            "leader_elect": False,
            "leader_elect_resource_name": name,
            "leader_elect_resource_namespace": _pod_namespace() or "default",
            "secure_port": 0,
            "log_format": "console",
            "kubeconfig_default_rules": True,
        }
        defaults.update(changes)
        return cls(**defaults)

    def validate(self) -> None:
        """Raise :class:`OptionsError` for values that cannot work together."""
        if self.kube_api_burst < 1 and self.kube_api_qps > 0:
            raise OptionsError("--kube-api-burst must be at least 1")
        for flag, port in (
            ("--secure-port", self.secure_port),
            ("--metrics-port", self.metrics_port),
        ):
            if not 0 <= port <= 65535:
                raise OptionsError(f"{flag} {port} is not a port number")
        if self.secure_port and self.secure_port == self.metrics_port:
            raise OptionsError("--secure-port and --metrics-port must differ")
        if bool(self.tls_cert_file) != bool(self.tls_private_key_file):
            raise OptionsError("--tls-cert-file and --tls-private-key-file go together")
        for flag, ttl in (
            (
                "--authentication-token-webhook-cache-ttl",
                self.authentication_token_webhook_cache_ttl,
            ),
            (
                "--authorization-webhook-cache-authorized-ttl",
                self.authorization_webhook_cache_authorized_ttl,
            ),
            (
                "--authorization-webhook-cache-unauthorized-ttl",
                self.authorization_webhook_cache_unauthorized_ttl,
            ),
        ):
            if ttl < 0:
                raise OptionsError(f"{flag} must not be negative")
        try:
            AlwaysAllowPaths(self.authorization_always_allow_paths)
        except ValueError as error:
            raise OptionsError(f"--authorization-always-allow-paths: {error}") from None
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


_SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def _pod_namespace() -> str | None:
    """The namespace this process runs in, when in a pod (its service account's)."""
    try:
        with open(_SERVICE_ACCOUNT_NAMESPACE, encoding="utf-8") as file:
            return file.read().strip() or None
    except OSError:
        return None


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
    prog: str = "kcontrol-manager",
    controller_flags: Iterable[ControllerFlag] = (),
    defaults: ManagerOptions | None = None,
) -> argparse.ArgumentParser:
    """The argument parser (also renders ``--help``), with ``controller_flags`` added and
    ``defaults`` (default: kcontrol-manager's) as the value of every flag not given."""
    defaults = defaults if defaults is not None else ManagerOptions()
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
    add(
        "--kubeconfig",
        default=defaults.kubeconfig,
        help=(
            "Path to a kubeconfig file. Without it and --master: "
            + (
                "$KUBECONFIG or ~/.kube/config, else in-cluster."
                if defaults.kubeconfig_default_rules
                else "in-cluster."
            )
        ),
    )
    add(
        "--master",
        default=defaults.master,
        help="The API server address; overrides the kubeconfig's server.",
    )
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
    add(
        "--leader-elect-lease-duration",
        type=_duration,
        default=defaults.leader_elect_lease_duration,
    )
    add(
        "--leader-elect-renew-deadline",
        type=_duration,
        default=defaults.leader_elect_renew_deadline,
    )
    add("--leader-elect-retry-period", type=_duration, default=defaults.leader_elect_retry_period)
    add("--leader-elect-resource-lock", choices=["leases"], default="leases")
    add("--leader-elect-resource-name", default=defaults.leader_elect_resource_name)
    add("--leader-elect-resource-namespace", default=defaults.leader_elect_resource_namespace)
    add(
        "--leader-elect-identity",
        default=defaults.leader_elect_identity,
        help="kcontrol: the lease holder identity (default <hostname>_<uuid>).",
    )
    _add_serving_flags(parser, defaults)
    add(
        "-v",
        "--v",
        dest="verbosity",
        type=int,
        default=defaults.verbosity,
        help="Log verbosity (klog levels).",
    )
    add("--log-format", choices=LOG_FORMATS, default=defaults.log_format)
    return parser


def _add_serving_flags(parser: argparse.ArgumentParser, defaults: ManagerOptions) -> None:
    """The secure port's flags (kube-controller-manager's) and the plain-HTTP opt-in."""
    group = parser.add_argument_group("secure serving of /metrics, /healthz, /livez, /readyz")
    add = group.add_argument
    add(
        "--bind-address",
        default=defaults.bind_address,
        help="The IP address to listen on for --secure-port (and --metrics-port).",
    )
    add(
        "--secure-port",
        type=int,
        default=defaults.secure_port,
        help=(
            "The port to serve HTTPS on, with authentication and authorization (default "
            f"{DEFAULT_SECURE_PORT}, kcontrol's own: kube-controller-manager uses 10257). "
            "0: no HTTPS at all."
        ),
    )
    add(
        "--cert-dir",
        default=defaults.cert_dir,
        help=(
            "The directory of the TLS pair kcontrol-manager.crt/.key, generated self-signed "
            "if missing. Ignored with --tls-cert-file. Default: a private temporary directory."
        ),
    )
    add(
        "--tls-cert-file",
        help="The serving certificate (PEM, chain allowed); reloaded when it changes.",
    )
    add("--tls-private-key-file", help="The key of --tls-cert-file; reloaded when it changes.")
    add(
        "--client-ca-file",
        help=(
            "Authenticate client certificates signed by these CAs (user: common name, "
            "groups: organizations). Default: the cluster's, looked up in "
            "kube-system/extension-apiserver-authentication."
        ),
    )
    add(
        "--authentication-kubeconfig",
        help=(
            "kubeconfig of the API server that creates TokenReviews (and serves the client CA "
            "lookup). Default: the manager's own connection."
        ),
    )
    add(
        "--authentication-skip-lookup",
        type=_bool,
        nargs="?",
        const=True,
        default=defaults.authentication_skip_lookup,
        help="Do not look up the client CA in the cluster when --client-ca-file is not given.",
    )
    add(
        "--authentication-tolerate-lookup-failure",
        type=_bool,
        nargs="?",
        const=True,
        default=defaults.authentication_tolerate_lookup_failure,
        help=(
            "Start even if the client CA lookup fails (then client certificates are not "
            "accepted until a later lookup succeeds)."
        ),
    )
    add(
        "--authentication-token-webhook-cache-ttl",
        type=_duration,
        default=defaults.authentication_token_webhook_cache_ttl,
        help="How long TokenReview answers are cached (kcontrol default 1m; upstream 10s).",
    )
    add(
        "--authorization-kubeconfig",
        help=(
            "kubeconfig of the API server that creates SubjectAccessReviews. Default: the "
            "manager's own connection."
        ),
    )
    add(
        "--authorization-always-allow-paths",
        type=_list,
        default=defaults.authorization_always_allow_paths,
        help=(
            "Paths served without authentication or authorization; a trailing * matches a "
            "prefix. Default /healthz,/readyz,/livez."
        ),
    )
    add(
        "--authorization-webhook-cache-authorized-ttl",
        type=_duration,
        default=defaults.authorization_webhook_cache_authorized_ttl,
        help="How long allowed answers are cached (kcontrol default 1m; upstream 10s).",
    )
    add(
        "--authorization-webhook-cache-unauthorized-ttl",
        type=_duration,
        default=defaults.authorization_webhook_cache_unauthorized_ttl,
        help="How long denied answers are cached (default 10s).",
    )
    add(
        "--metrics-port",
        type=int,
        default=defaults.metrics_port,
        help=(
            "kcontrol: also serve /metrics, /healthz, /livez and /readyz over plain HTTP, "
            "without authentication, on this port: an opt-in for local runs. 0 (the "
            "default): off."
        ),
    )


def _flag_dest(name: str) -> str:
    return "controller_flag:" + name


def parse_args(
    argv: Sequence[str] | None,
    controller_flags: Iterable[ControllerFlag] = (),
    *,
    defaults: ManagerOptions | None = None,
    prog: str = "kcontrol-manager",
) -> tuple[ManagerOptions, bool]:
    """Parse ``argv`` into options; the flag says whether ``--version`` was asked for.

    ``controller_flags`` are the flags the registered controllers declare
    (:meth:`ControllerRegistry.flags <kcontrol.manager.ControllerRegistry.flags>`). Invalid
    flags exit with status 2 and a usage message (argparse's behaviour); values that are
    valid alone but not together raise :class:`OptionsError`.
    """
    flags = list(controller_flags)
    defaults = defaults if defaults is not None else ManagerOptions()
    namespace = build_parser(prog, flags, defaults).parse_args(argv)
    given = {
        flag.name: getattr(namespace, _flag_dest(flag.name))
        for flag in flags
        if hasattr(namespace, _flag_dest(flag.name))
    }
    options = dataclasses.replace(
        defaults,
        kubeconfig=namespace.kubeconfig,
        master=namespace.master,
        controllers=namespace.controllers,
        controller_flags={**defaults.controller_flags, **given},
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
        secure_port=namespace.secure_port,
        cert_dir=namespace.cert_dir,
        tls_cert_file=namespace.tls_cert_file,
        tls_private_key_file=namespace.tls_private_key_file,
        client_ca_file=namespace.client_ca_file,
        authentication_kubeconfig=namespace.authentication_kubeconfig,
        authentication_skip_lookup=namespace.authentication_skip_lookup,
        authentication_tolerate_lookup_failure=namespace.authentication_tolerate_lookup_failure,
        authentication_token_webhook_cache_ttl=namespace.authentication_token_webhook_cache_ttl,
        authorization_kubeconfig=namespace.authorization_kubeconfig,
        authorization_always_allow_paths=namespace.authorization_always_allow_paths,
        authorization_webhook_cache_authorized_ttl=(
            namespace.authorization_webhook_cache_authorized_ttl
        ),
        authorization_webhook_cache_unauthorized_ttl=(
            namespace.authorization_webhook_cache_unauthorized_ttl
        ),
        metrics_port=namespace.metrics_port,
        verbosity=namespace.verbosity,
        log_format=namespace.log_format,
    )
    return options, bool(namespace.version)

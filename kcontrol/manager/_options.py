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
  ``--tls-cert-file``, ``--tls-min-version``, ``--tls-cipher-suites``, ``--client-ca-file``,
  ``--authentication-kubeconfig``, ...) with its defaults, except that
  ``--authentication-kubeconfig`` / ``--authorization-kubeconfig`` default to the manager's
  own connection.
- ``--metrics-port`` (default 0: off): the same endpoints over plain HTTP without
  authentication, an opt-in for local runs, on ``--metrics-bind-address`` (default
  ``127.0.0.1``: ``--bind-address`` is the secure port's only).
- ``--log-format`` ``json`` (default) or ``console``.
- ``--event-loop`` ``auto`` (default: uvloop when it is installed), ``uvloop`` or ``asyncio``.
- ``--leader-elect-identity``: the holder identity (default ``<hostname>_<uuid>``, as upstream).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import ipaddress
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kcontrol.errors import InvalidLeaderElectionConfig, OptionsError
from kcontrol.leaderelection import validate_timings
from kcontrol.logging import LOG_FORMATS, LogFormat
from kcontrol.manager._authz import DEFAULT_ALWAYS_ALLOW_PATHS, AlwaysAllowPaths
from kcontrol.manager._tls import (
    CIPHER_SUITES,
    DEFAULT_TLS_MIN_VERSION,
    INSECURE_CIPHER_SUITES,
    TLS_VERSIONS,
)

__all__ = [
    "DEFAULT_LEASE_NAME",
    "DEFAULT_LEASE_NAMESPACE",
    "DEFAULT_SECURE_PORT",
    "EVENT_LOOPS",
    "ControllerFlag",
    "ManagerOptions",
    "OptionsError",
    "controller_enabled",
    "format_duration",
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


def format_duration(seconds: float) -> str:
    """``seconds`` as Go's ``time.Duration.String`` writes it: ``0s``, ``500ms``, ``15s``,
    ``1m0s``, ``1h30m0.5s``, ``1.5µs``."""
    nanoseconds = round(seconds * 1e9)
    sign = "-" if nanoseconds < 0 else ""
    nanoseconds = abs(nanoseconds)
    if nanoseconds == 0:
        return "0s"
    if nanoseconds < 1_000_000_000:
        for unit, size, digits in (("ms", 1_000_000, 6), ("\u00b5s", 1_000, 3), ("ns", 1, 0)):
            if nanoseconds >= size:
                return sign + _decimal(nanoseconds, size, digits) + unit
    hours, rest = divmod(nanoseconds, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _decimal(rest, 1_000_000_000, 9) + "s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _decimal(value: int, unit: int, digits: int) -> str:
    whole, fraction = divmod(value, unit)
    if not fraction:
        return str(whole)
    return f"{whole}." + f"{fraction:0{digits}d}".rstrip("0")


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


EVENT_LOOPS = ("auto", "uvloop", "asyncio")
"""``--event-loop``'s values: ``auto`` runs uvloop when it is importable, else asyncio's own."""


def uvloop_installed() -> bool:
    """True when uvloop can be imported (``pip install 'kcontrol[uvloop]'``)."""
    return importlib.util.find_spec("uvloop") is not None


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
    shards: int = 1
    """Cut the namespaces' hash into this many shards, each held through a Lease of its own
    (``<leader_elect_resource_name>-shard-<k>-of-<N>``) by one of the replicas; 1: one
    leader does all the work, as kube-controller-manager's (:mod:`kcontrol.manager._shards`)."""
    bind_address: str = "0.0.0.0"
    secure_port: int = DEFAULT_SECURE_PORT
    cert_dir: str = ""
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    tls_cipher_suites: tuple[str, ...] = ()
    tls_min_version: str = DEFAULT_TLS_MIN_VERSION
    client_ca_file: str | None = None
    authentication_kubeconfig: str | None = None
    authentication_skip_lookup: bool = False
    authentication_tolerate_lookup_failure: bool = False
    authentication_token_webhook_cache_ttl: float = 10.0
    authorization_kubeconfig: str | None = None
    authorization_always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    authorization_webhook_cache_authorized_ttl: float = 10.0
    authorization_webhook_cache_unauthorized_ttl: float = 10.0
    metrics_port: int = 0
    metrics_bind_address: str = "127.0.0.1"
    verbosity: int = 0
    log_format: LogFormat = "json"
    event_loop: str = "auto"
    """The event loop ``main()`` runs on (:data:`EVENT_LOOPS`); the library itself runs on
    any asyncio loop."""
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
        if self.event_loop not in EVENT_LOOPS:
            raise OptionsError(
                f"--event-loop: unknown event loop {self.event_loop!r} "
                f"(possible values: {', '.join(EVENT_LOOPS)})"
            )
        if self.event_loop == "uvloop" and not uvloop_installed():
            raise OptionsError(
                "--event-loop=uvloop: uvloop is not installed (pip install 'kcontrol[uvloop]')"
            )
        if bool(self.tls_cert_file) != bool(self.tls_private_key_file):
            raise OptionsError("--tls-cert-file and --tls-private-key-file go together")
        if self.tls_min_version not in TLS_VERSIONS:
            raise OptionsError(
                f"--tls-min-version: unknown TLS version {self.tls_min_version!r} "
                f"(possible values: {', '.join(TLS_VERSIONS)})"
            )
        for suite in self.tls_cipher_suites:
            if suite not in CIPHER_SUITES:
                raise OptionsError(
                    f"--tls-cipher-suites: cipher suite {suite} not supported or doesn't exist"
                )
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
        for flag, address in (
            ("--bind-address", self.bind_address),
            ("--metrics-bind-address", self.metrics_bind_address),
        ):
            try:
                ipaddress.ip_address(address)
            except ValueError:
                raise OptionsError(f"{flag} {address!r} is not an IP address") from None
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
        if self.shards < 1:
            raise OptionsError(f"--shards must be at least 1, not {self.shards}")
        if self.shards > 1 and not self.leader_elect:
            raise OptionsError("--shards above 1 needs --leader-elect: each shard is a Lease")
        if self.shards > 1 and self.namespace:
            raise OptionsError(
                "--shards above 1 cuts namespaces apart: it cannot work within one namespace"
            )


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


def _show_number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True, slots=True)
class _Kind:
    """A flag's type as pflag shows it in ``--help``: the name after the flag (``--secure-port
    int``; none for a boolean), how the command-line text is read, how the default is
    written."""

    metavar: str
    parse: Callable[[str], Any]
    show: Callable[[Any], str]


_BOOL = _Kind("", _bool, lambda value: "true" if value else "false")
_INT = _Kind("int", int, str)
_INT32 = _Kind("int32", int, str)
_FLOAT32 = _Kind("float32", float, _show_number)
_DURATION = _Kind("duration", _duration, format_duration)
_STRING = _Kind("string", str, lambda value: f'"{value}"')
_STRINGS = _Kind("strings", _list, lambda value: "[" + ",".join(value) + "]")
_IP = _Kind("ip", str, str)
_LEVEL = _Kind("Level", int, str)


def _is_zero(value: Any) -> bool:
    """pflag leaves a zero default (false, 0, "", [], 0s, unset) out of ``--help``."""
    if value is None or isinstance(value, bool):
        return not value
    return bool(value in (0, "", ()))


def _controller_flag_kind(flag: ControllerFlag) -> _Kind:
    """The kind of a controller's flag, from its parser: ``int`` (int32, as
    kube-controller-manager's), ``float`` (float32), :func:`parse_bool`, a parser of Go
    durations (one that reads ``1m30s`` as 90 seconds), else a string."""
    if flag.parse is int:
        return _INT32
    if flag.parse is float:
        return _FLOAT32
    if flag.parse is parse_bool:
        return _BOOL
    try:
        reads_durations = flag.parse("1m30s") == 90.0
    except Exception:  # a parser that refuses it reads something else
        reads_durations = False
    return _DURATION if reads_durations else _STRING


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


class _HelpFormatter(argparse.HelpFormatter):
    """``--help`` as kube-controller-manager prints it (pflag): ``--flag type`` (a boolean
    without one), ``-v, --v Level``, and the help's own line breaks kept."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=48)

    def _format_action_invocation(self, action: argparse.Action) -> str:
        names = ", ".join(action.option_strings)
        if not action.metavar or not isinstance(action.metavar, str):
            return names
        return f"{names} {action.metavar}"

    def _split_lines(self, text: str, width: int) -> list[str]:
        return [
            line
            for paragraph in text.splitlines()
            for line in (
                textwrap.wrap(paragraph, width, break_on_hyphens=False, break_long_words=False)
                or [""]
            )
        ]


def _add(
    group: argparse._ArgumentGroup,
    name: str,
    kind: _Kind,
    default: Any,
    help: str,
    *,
    short: str | None = None,
    dest: str | None = None,
    parse: Callable[[str], Any] | None = None,
    choices: Sequence[str] | None = None,
    show_default: bool = True,
) -> None:
    """Add ``--name``: ``help`` with the default appended as pflag writes it (unless zero)."""
    text = help
    if show_default and not _is_zero(default):
        text += f" (default {kind.show(default)})"
    options: dict[str, Any] = {
        "default": default,
        "help": text.replace("%", "%%"),  # argparse formats help with %
        "type": parse or kind.parse,
        "metavar": kind.metavar or None,
    }
    if dest is not None:
        options["dest"] = dest
    if choices is not None:
        options["choices"] = choices
    if kind is _BOOL:
        options.update(nargs="?", const=True)
    names = [short] if short else []
    group.add_argument(*names, f"--{name}", **options)


def _controllers_help(known_controllers: Mapping[str, bool]) -> str:
    text = (
        "A list of controllers to enable: '*' enables the controllers that are on by "
        "default, 'foo' enables the controller named 'foo', '-foo' disables it; the first "
        "entry naming a controller decides."
    )
    if known_controllers:
        names = sorted(known_controllers)
        off = [name for name in names if not known_controllers[name]]
        text += f"\nAll controllers: {', '.join(names)}"
        text += f"\nDisabled-by-default controllers: {', '.join(off) or 'none'}"
    return text


def build_parser(
    prog: str = "kcontrol-manager",
    controller_flags: Iterable[ControllerFlag] = (),
    defaults: ManagerOptions | None = None,
    known_controllers: Mapping[str, bool] | None = None,
) -> argparse.ArgumentParser:
    """The argument parser (also renders ``--help``), with ``controller_flags`` added and
    ``defaults`` (default: kcontrol-manager's) as the value of every flag not given.
    ``known_controllers`` (name: enabled by default) are listed in ``--controllers``'s help,
    as kube-controller-manager lists its own."""
    defaults = defaults if defaults is not None else ManagerOptions()
    parser = argparse.ArgumentParser(
        prog=prog,
        usage="%(prog)s [flags]",
        description=(
            "Runs kcontrol controllers, with kube-controller-manager's flags, leader election "
            "and health endpoints."
        ),
        allow_abbrev=False,
        add_help=False,
        formatter_class=_HelpFormatter,
    )
    generic = parser.add_argument_group("Generic flags")
    _add(
        generic,
        "kubeconfig",
        _STRING,
        defaults.kubeconfig,
        "Path to a kubeconfig file. Without it and --master: "
        + (
            "$KUBECONFIG or ~/.kube/config, else in-cluster."
            if defaults.kubeconfig_default_rules
            else "in-cluster."
        ),
    )
    _add(
        generic,
        "master",
        _STRING,
        defaults.master,
        "The API server address; overrides the kubeconfig's server.",
    )
    _add(
        generic,
        "controllers",
        _STRINGS,
        defaults.controllers,
        _controllers_help(known_controllers or {}),
    )
    _add(
        generic,
        "kube-api-qps",
        _FLOAT32,
        defaults.kube_api_qps,
        "QPS of each component's client towards the API server (0: no client-side limit).",
    )
    _add(
        generic,
        "kube-api-burst",
        _INT32,
        defaults.kube_api_burst,
        "Burst of each component's client towards the API server.",
    )
    flags = sorted(controller_flags, key=lambda flag: flag.name)
    if flags:
        group = parser.add_argument_group("Controller flags")
        for flag in flags:
            kind = _controller_flag_kind(flag)
            _add(
                group,
                flag.name,
                kind,
                argparse.SUPPRESS,  # only flags given land in controller_flags
                flag.help
                + ("" if _is_zero(flag.default) else f" (default {kind.show(flag.default)})"),
                dest=_flag_dest(flag.name),
                parse=_controller_flag_type(flag),
                show_default=False,
            )
    _add_leader_election_flags(parser, defaults)
    _add_serving_flags(parser, defaults)
    logs = parser.add_argument_group("Logs flags")
    _add(
        logs,
        "v",
        _LEVEL,
        defaults.verbosity,
        "The log verbosity (klog levels: 4 for debug).",
        short="-v",
        dest="verbosity",
    )
    _add(
        logs,
        "log-format",
        _STRING,
        defaults.log_format,
        f"Log format: {' or '.join(LOG_FORMATS)}.",
        choices=LOG_FORMATS,
    )
    general = parser.add_argument_group("Global flags")
    _add(
        general,
        "event-loop",
        _STRING,
        defaults.event_loop,
        "The asyncio event loop: auto (uvloop when installed, else asyncio's own), uvloop or "
        "asyncio. uvloop spends less CPU per request.",
        choices=EVENT_LOOPS,
    )
    general.add_argument("-h", "--help", action="help", help="Print this help and exit.")
    general.add_argument("--version", action="store_true", help="Print the version and exit.")
    return parser


def _add_leader_election_flags(parser: argparse.ArgumentParser, defaults: ManagerOptions) -> None:
    group = parser.add_argument_group("Leader election flags")
    _add(
        group,
        "leader-elect",
        _BOOL,
        defaults.leader_elect,
        "Run controllers only while holding the Lease, so that several replicas can run.",
    )
    _add(
        group,
        "leader-elect-lease-duration",
        _DURATION,
        defaults.leader_elect_lease_duration,
        "How long a standby waits after the last renewal it saw before taking the Lease.",
    )
    _add(
        group,
        "leader-elect-renew-deadline",
        _DURATION,
        defaults.leader_elect_renew_deadline,
        "How long the leader keeps retrying a renewal before it stops leading.",
    )
    _add(
        group,
        "leader-elect-retry-period",
        _DURATION,
        defaults.leader_elect_retry_period,
        "How long to wait between two attempts to acquire or renew the Lease.",
    )
    _add(
        group,
        "leader-elect-resource-lock",
        _STRING,
        defaults.leader_elect_resource_lock,
        "The kind of lock object: 'leases', the only one.",
        choices=["leases"],
    )
    _add(
        group,
        "leader-elect-resource-name",
        _STRING,
        defaults.leader_elect_resource_name,
        "The name of the Lease.",
    )
    _add(
        group,
        "leader-elect-resource-namespace",
        _STRING,
        defaults.leader_elect_resource_namespace,
        "The namespace of the Lease.",
    )
    _add(
        group,
        "leader-elect-identity",
        _STRING,
        defaults.leader_elect_identity,
        "kcontrol: the Lease holder identity (default <hostname>_<uuid>).",
    )
    _add(
        group,
        "shards",
        _INT,
        defaults.shards,
        "kcontrol: cut the namespaces into this many shards, each held through a Lease of its "
        "own (<leader-elect-resource-name>-shard-<k>-of-<N>) by one replica, the replicas sharing "
        "them fairly; 1: one leader runs everything. Uses the API server's shard selectors "
        "(feature gate ShardedListAndWatch, v1.36) when it serves them, else filters here.",
    )


def _add_serving_flags(parser: argparse.ArgumentParser, defaults: ManagerOptions) -> None:
    """The secure port's flags (kube-controller-manager's) and the plain-HTTP opt-in."""
    serving = parser.add_argument_group("Secure serving flags")
    _add(
        serving,
        "bind-address",
        _IP,
        defaults.bind_address,
        "The IP address to listen on for --secure-port (0.0.0.0 or ::: every interface).",
    )
    _add(
        serving,
        "secure-port",
        _INT,
        defaults.secure_port,
        "The port to serve /metrics, /healthz, /livez and /readyz on over HTTPS, with "
        f"authentication and authorization (kcontrol's own {DEFAULT_SECURE_PORT}: "
        "kube-controller-manager uses 10257). 0: no HTTPS at all.",
    )
    _add(
        serving,
        "cert-dir",
        _STRING,
        defaults.cert_dir,
        "The directory of the TLS pair kcontrol-manager.crt/.key, generated self-signed if "
        "missing. Ignored with --tls-cert-file. Default: a private temporary directory.",
    )
    _add(
        serving,
        "tls-cert-file",
        _STRING,
        defaults.tls_cert_file,
        "The serving certificate (PEM, chain allowed); reloaded when it changes.",
    )
    _add(
        serving,
        "tls-private-key-file",
        _STRING,
        defaults.tls_private_key_file,
        "The key of --tls-cert-file; reloaded when it changes.",
    )
    preferred = sorted(name for name in CIPHER_SUITES if name not in INSECURE_CIPHER_SUITES)
    _add(
        serving,
        "tls-cipher-suites",
        _STRINGS,
        defaults.tls_cipher_suites,
        "Comma-separated list of cipher suites for TLS 1.2 (TLS 1.3's are not configurable). "
        "If omitted, OpenSSL's defaults.\n"
        f"Preferred values: {', '.join(preferred)}.\n"
        f"Insecure values: {', '.join(sorted(INSECURE_CIPHER_SUITES))}.",
    )
    _add(
        serving,
        "tls-min-version",
        _STRING,
        defaults.tls_min_version,
        f"Minimum TLS version supported. Possible values: {', '.join(TLS_VERSIONS)}.",
    )
    authn = parser.add_argument_group("Authentication flags")
    _add(
        authn,
        "client-ca-file",
        _STRING,
        defaults.client_ca_file,
        "Authenticate client certificates signed by these CAs (user: common name, groups: "
        "organizations). Default: the cluster's, looked up in "
        "kube-system/extension-apiserver-authentication.",
    )
    _add(
        authn,
        "authentication-kubeconfig",
        _STRING,
        defaults.authentication_kubeconfig,
        "kubeconfig of the API server that creates TokenReviews (and serves the client CA "
        "lookup). Default: the manager's own connection.",
    )
    _add(
        authn,
        "authentication-skip-lookup",
        _BOOL,
        defaults.authentication_skip_lookup,
        "Do not look up the client CA in the cluster when --client-ca-file is not given.",
    )
    _add(
        authn,
        "authentication-tolerate-lookup-failure",
        _BOOL,
        defaults.authentication_tolerate_lookup_failure,
        "Start even if the client CA lookup fails (then client certificates are not accepted "
        "until a later lookup succeeds).",
    )
    _add(
        authn,
        "authentication-token-webhook-cache-ttl",
        _DURATION,
        defaults.authentication_token_webhook_cache_ttl,
        "How long TokenReview answers are cached.",
    )
    authz = parser.add_argument_group("Authorization flags")
    _add(
        authz,
        "authorization-kubeconfig",
        _STRING,
        defaults.authorization_kubeconfig,
        "kubeconfig of the API server that creates SubjectAccessReviews. Default: the "
        "manager's own connection.",
    )
    _add(
        authz,
        "authorization-always-allow-paths",
        _STRINGS,
        defaults.authorization_always_allow_paths,
        "Paths served without authentication or authorization; a trailing * matches a prefix.",
    )
    _add(
        authz,
        "authorization-webhook-cache-authorized-ttl",
        _DURATION,
        defaults.authorization_webhook_cache_authorized_ttl,
        "How long allowed answers of SubjectAccessReviews are cached.",
    )
    _add(
        authz,
        "authorization-webhook-cache-unauthorized-ttl",
        _DURATION,
        defaults.authorization_webhook_cache_unauthorized_ttl,
        "How long denied answers of SubjectAccessReviews are cached.",
    )
    plain = parser.add_argument_group("Plain-HTTP metrics flags (kcontrol)")
    _add(
        plain,
        "metrics-port",
        _INT,
        defaults.metrics_port,
        "Also serve /metrics, /healthz, /livez and /readyz over plain HTTP, without "
        "authentication, on this port: an opt-in for local runs. 0: off.",
    )
    _add(
        plain,
        "metrics-bind-address",
        _IP,
        defaults.metrics_bind_address,
        "The IP address to listen on for --metrics-port (--bind-address is the secure "
        "port's only).",
    )


def _flag_dest(name: str) -> str:
    return "controller_flag:" + name


def parse_args(
    argv: Sequence[str] | None,
    controller_flags: Iterable[ControllerFlag] = (),
    *,
    defaults: ManagerOptions | None = None,
    prog: str = "kcontrol-manager",
    known_controllers: Mapping[str, bool] | None = None,
) -> tuple[ManagerOptions, bool]:
    """Parse ``argv`` into options; the flag says whether ``--version`` was asked for.

    ``controller_flags`` are the flags the registered controllers declare
    (:meth:`ControllerRegistry.flags <kcontrol.manager.ControllerRegistry.flags>`), and
    ``known_controllers`` their names (each: enabled by default or not), listed by
    ``--help``. Invalid flags exit with status 2 and a usage message (argparse's behaviour);
    values that are valid alone but not together raise :class:`OptionsError`.
    """
    flags = list(controller_flags)
    defaults = defaults if defaults is not None else ManagerOptions()
    namespace = build_parser(prog, flags, defaults, known_controllers).parse_args(argv)
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
        shards=namespace.shards,
        bind_address=namespace.bind_address,
        secure_port=namespace.secure_port,
        cert_dir=namespace.cert_dir,
        tls_cert_file=namespace.tls_cert_file,
        tls_private_key_file=namespace.tls_private_key_file,
        tls_cipher_suites=namespace.tls_cipher_suites,
        tls_min_version=namespace.tls_min_version,
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
        metrics_bind_address=namespace.metrics_bind_address,
        verbosity=namespace.verbosity,
        log_format=namespace.log_format,
        event_loop=namespace.event_loop,
    )
    return options, bool(namespace.version)

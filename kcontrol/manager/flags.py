"""``kcontrol-manager``'s command line: its flags, named as kube-controller-manager names them,
parsed into :class:`~kcontrol.manager.ManagerOptions` (:func:`parse_args`).

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
- ``--webhook-port`` (controller-runtime's 9443), ``--webhook-bind-address``,
  ``--webhook-cert-file`` / ``--webhook-key-file`` or ``--webhook-cert-dir``: the webhook
  server (:class:`~kcontrol.webhook.WebhookOptions`), which runs only when webhooks were
  added to the manager.
- ``--log-format`` ``json`` (default) or ``console``.
- ``--event-loop`` ``auto`` (default: uvloop when it is installed), ``uvloop`` or ``asyncio``.
- ``--leader-elect-identity``: the holder identity (default ``<hostname>_<uuid>``, as upstream).
- ``--graceful-shutdown-timeout`` (default 30s, controller-runtime's): how long controllers
  drain their syncs in flight when they stop before those are cancelled.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcontrol.errors import OptionsError
from kcontrol.leaderelection import LeaderElectionOptions
from kcontrol.logging import LOG_FORMATS
from kcontrol.manager._options import DEFAULT_SECURE_PORT, EVENT_LOOPS, ManagerOptions
from kcontrol.manager._registry import ControllerFlag
from kcontrol.serving import CIPHER_SUITES, INSECURE_CIPHER_SUITES, TLS_VERSIONS, ServingOptions
from kcontrol.webhook import WebhookOptions

__all__ = [
    "build_parser",
    "format_duration",
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
        defaults.client.kubeconfig,
        "Path to a kubeconfig file. Without it and --master: "
        + (
            "$KUBECONFIG or ~/.kube/config, else in-cluster."
            if defaults.client.kubeconfig_default_rules
            else "in-cluster."
        ),
    )
    _add(
        generic,
        "master",
        _STRING,
        defaults.client.master,
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
        defaults.client.kube_api_qps,
        "QPS of each component's client towards the API server (0: no client-side limit).",
    )
    _add(
        generic,
        "kube-api-burst",
        _INT32,
        defaults.client.kube_api_burst,
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
    _add_leader_election_flags(parser, defaults.election)
    _add_serving_flags(parser, defaults.serving, defaults.webhook)
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
    _add(
        general,
        "graceful-shutdown-timeout",
        _DURATION,
        defaults.graceful_shutdown_timeout,
        "kcontrol: how long controllers may drain their syncs in flight when they stop "
        "(SIGTERM, a shard given back); then the syncs still running are cancelled. 0: at "
        "once; negative: no limit.",
    )
    general.add_argument("-h", "--help", action="help", help="Print this help and exit.")
    general.add_argument("--version", action="store_true", help="Print the version and exit.")
    return parser


def _add_leader_election_flags(
    parser: argparse.ArgumentParser, defaults: LeaderElectionOptions
) -> None:
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
        defaults.lease_duration,
        "How long a standby waits after the last renewal it saw before taking the Lease.",
    )
    _add(
        group,
        "leader-elect-renew-deadline",
        _DURATION,
        defaults.renew_deadline,
        "How long the leader keeps retrying a renewal before it stops leading.",
    )
    _add(
        group,
        "leader-elect-retry-period",
        _DURATION,
        defaults.retry_period,
        "How long to wait between two attempts to acquire or renew the Lease.",
    )
    _add(
        group,
        "leader-elect-resource-lock",
        _STRING,
        defaults.resource_lock,
        "The kind of lock object: 'leases', the only one.",
        choices=["leases"],
    )
    _add(
        group,
        "leader-elect-resource-name",
        _STRING,
        defaults.resource_name,
        "The name of the Lease.",
    )
    _add(
        group,
        "leader-elect-resource-namespace",
        _STRING,
        defaults.resource_namespace,
        "The namespace of the Lease.",
    )
    _add(
        group,
        "leader-elect-identity",
        _STRING,
        defaults.identity,
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


def _add_serving_flags(
    parser: argparse.ArgumentParser, defaults: ServingOptions, hooks: WebhookOptions
) -> None:
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
    webhook = parser.add_argument_group("Webhook server flags (served when webhooks are added)")
    _add(webhook, "webhook-port", _INT, hooks.port, "The port the webhook server listens on.")
    _add(
        webhook,
        "webhook-bind-address",
        _IP,
        hooks.bind_address,
        "The IP address the webhook server listens on.",
    )
    _add(
        webhook,
        "webhook-cert-file",
        _STRING,
        str(hooks.cert_file or ""),
        "The webhook server's certificate (PEM), reloaded when the file changes; with "
        "--webhook-key-file.",
    )
    _add(
        webhook,
        "webhook-key-file",
        _STRING,
        str(hooks.key_file or ""),
        "The key of --webhook-cert-file.",
    )
    _add(
        webhook,
        "webhook-install-url",
        _STRING,
        hooks.install_url or "",
        "Managed mode, for a local cluster: once the webhook server listens, apply webhook "
        "configurations and the CRDs' conversion settings pointing the API server at this URL "
        "(e.g. https://127.0.0.1:9443). Empty: the operator's manifests configure them.",
    )
    _add(
        webhook,
        "webhook-cert-dir",
        _STRING,
        str(hooks.cert_dir or ""),
        "Without --webhook-cert-file: the directory of a generated self-signed pair. "
        "Default: a private temporary directory.",
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


_SERVING_FIELDS = tuple(field.name for field in dataclasses.fields(ServingOptions))
"""Every serving option is a flag of the same name (``secure_port``: ``--secure-port``)."""


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
        client=dataclasses.replace(
            defaults.client,
            kubeconfig=namespace.kubeconfig,
            master=namespace.master,
            kube_api_qps=namespace.kube_api_qps,
            kube_api_burst=namespace.kube_api_burst,
        ),
        election=LeaderElectionOptions(
            leader_elect=namespace.leader_elect,
            lease_duration=namespace.leader_elect_lease_duration,
            renew_deadline=namespace.leader_elect_renew_deadline,
            retry_period=namespace.leader_elect_retry_period,
            resource_lock=namespace.leader_elect_resource_lock,
            resource_name=namespace.leader_elect_resource_name,
            resource_namespace=namespace.leader_elect_resource_namespace,
            identity=namespace.leader_elect_identity,
            shards=namespace.shards,
        ),
        serving=ServingOptions(
            **{name: getattr(namespace, name) for name in _SERVING_FIELDS},
        ),
        controllers=namespace.controllers,
        controller_flags={**defaults.controller_flags, **given},
        verbosity=namespace.verbosity,
        log_format=namespace.log_format,
        event_loop=namespace.event_loop,
        graceful_shutdown_timeout=namespace.graceful_shutdown_timeout,
        webhook=_webhook_options(namespace, defaults.webhook),
    )
    return options, bool(namespace.version)


def _webhook_options(namespace: argparse.Namespace, defaults: WebhookOptions) -> WebhookOptions:
    cert, key, directory = (
        namespace.webhook_cert_file,
        namespace.webhook_key_file,
        namespace.webhook_cert_dir,
    )
    if bool(cert) != bool(key):
        raise OptionsError("--webhook-cert-file and --webhook-key-file go together")
    return dataclasses.replace(
        defaults,
        port=namespace.webhook_port,
        bind_address=namespace.webhook_bind_address,
        cert_file=Path(cert) if cert else None,
        key_file=Path(key) if key else None,
        cert_dir=Path(directory) if directory else None,
        install_url=namespace.webhook_install_url or None,
    )

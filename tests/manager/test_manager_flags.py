"""kcontrol-manager's flags (kube-controller-manager's names and syntax), its --help (as
kube-controller-manager's reads: types after the flags, Go durations, lists, the known
controllers), the controller selection, the controller registry and main()'s exit statuses
for bad input."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from importlib.metadata import EntryPoint
from operator import attrgetter
from pathlib import Path
from typing import Any

import pytest

import kcontrol
from examples.configmap_annotator import SPEC
from kcontrol.manager import (
    ControllerFlag,
    ControllerRegistry,
    ControllerSpec,
    ManagerOptions,
    OptionsError,
    _options,
    _process,
    main,
)
from kcontrol.manager import _registry as registry_module
from kcontrol.manager._manager import Manager
from kcontrol.manager._registry import controller_enabled, resolve_controller_flags
from kcontrol.manager.flags import format_duration, parse_args, parse_bool, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("15s", 15.0, id="seconds"),
        pytest.param("500ms", 0.5, id="milliseconds"),
        pytest.param("1m", 60.0, id="minutes"),
        pytest.param("1h30m", 5400.0, id="compound"),
        pytest.param("1m30.5s", 90.5, id="fraction"),
        pytest.param("0", 0.0, id="bare-zero"),
        pytest.param("0.5s", 0.5, id="decimal"),
        pytest.param(".5s", 0.5, id="leading-dot"),
        pytest.param("250us", 0.00025, id="micro"),
        pytest.param("250\u00b5s", 0.00025, id="micro-sign"),
        pytest.param("100ns", 1e-7, id="nano"),
        pytest.param("-2s", -2.0, id="negative"),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "15", "s", "1x", "1s2", "1.2.3s", "1 s", "--1s"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [("true", True), ("TRUE", True), ("1", True), ("t", True), ("false", False), ("0", False)],
)
def test_parse_bool(text: str, value: bool) -> None:
    assert parse_bool(text) is value


def test_parse_bool_rejects() -> None:
    with pytest.raises(ValueError, match="invalid boolean"):
        parse_bool("maybe")


def test_defaults_are_kube_controller_managers() -> None:
    options, version = parse_args([])
    assert not version
    assert options == ManagerOptions()
    assert options.controllers == ("*",)
    assert options.controller_flags == {}
    assert (options.client.kube_api_qps, options.client.kube_api_burst) == (20.0, 30)
    assert options.election.leader_elect is True
    assert (
        options.election.lease_duration,
        options.election.renew_deadline,
        options.election.retry_period,
    ) == (15.0, 10.0, 2.0)
    # kcontrol's own Lease and port, so that it runs beside kube-controller-manager (whose
    # Lease is kube-system/kube-controller-manager and whose port is 10257).
    assert options.election.resource_name == "kcontrol-manager"
    assert options.election.resource_namespace == "kube-system"
    assert options.election.resource_lock == "leases"
    assert (options.serving.bind_address, options.serving.secure_port) == ("0.0.0.0", 10263)
    assert options.serving.metrics_port == 0, "plain HTTP only when asked for"
    assert (options.verbosity, options.log_format) == (0, "json")
    assert options.client.kubeconfig is None and options.client.master is None
    assert options.event_loop == "auto", "uvloop when installed, asyncio's own loop otherwise"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(["--kubeconfig=/k"], {"client.kubeconfig": "/k"}, id="kubeconfig-equals"),
        pytest.param(["--kubeconfig", "/k"], {"client.kubeconfig": "/k"}, id="kubeconfig-space"),
        pytest.param(["--master=https://x:6443"], {"client.master": "https://x:6443"}, id="master"),
        pytest.param(["--controllers=*,-foo"], {"controllers": ("*", "-foo")}, id="controllers"),
        pytest.param(["--controllers", "a, b"], {"controllers": ("a", "b")}, id="spaces"),
        pytest.param(["--controllers="], {"controllers": ()}, id="controllers-empty"),
        pytest.param(
            ["--kube-api-qps=50.5", "--kube-api-burst=100"],
            {"client.kube_api_qps": 50.5, "client.kube_api_burst": 100},
            id="qps-burst",
        ),
        pytest.param(["--leader-elect=false"], {"election.leader_elect": False}, id="elect-false"),
        pytest.param(["--leader-elect=0"], {"election.leader_elect": False}, id="elect-zero"),
        pytest.param(["--leader-elect"], {"election.leader_elect": True}, id="elect-bare"),
        pytest.param(["--leader-elect=True"], {"election.leader_elect": True}, id="elect-True"),
        pytest.param(
            [
                "--leader-elect-lease-duration=4s",
                "--leader-elect-renew-deadline=3000ms",
                "--leader-elect-retry-period=0.5s",
            ],
            {
                "election.lease_duration": 4.0,
                "election.renew_deadline": 3.0,
                "election.retry_period": 0.5,
            },
            id="durations",
        ),
        pytest.param(
            ["--leader-elect-lease-duration=1m", "--leader-elect-renew-deadline=45s"],
            {"election.lease_duration": 60.0, "election.renew_deadline": 45.0},
            id="minutes",
        ),
        pytest.param(
            [
                "--leader-elect-resource-name=mine",
                "--leader-elect-resource-namespace=ops",
                "--leader-elect-identity=me",
            ],
            {
                "election.resource_name": "mine",
                "election.resource_namespace": "ops",
                "election.identity": "me",
            },
            id="lease-location",
        ),
        pytest.param(
            ["--bind-address=127.0.0.1", "--metrics-port=0"],
            {"serving.bind_address": "127.0.0.1", "serving.metrics_port": 0},
            id="serving",
        ),
        pytest.param(["-v", "4"], {"verbosity": 4}, id="v-short"),
        pytest.param(["-v=2"], {"verbosity": 2}, id="v-short-equals"),
        pytest.param(["--v=5"], {"verbosity": 5}, id="v-long"),
        pytest.param(["--log-format=console"], {"log_format": "console"}, id="console"),
        pytest.param(["--event-loop=asyncio"], {"event_loop": "asyncio"}, id="asyncio-loop"),
        pytest.param(["--event-loop", "uvloop"], {"event_loop": "uvloop"}, id="uvloop"),
    ],
)
def test_flags(argv: list[str], expected: dict[str, Any]) -> None:
    options, version = parse_args(argv)
    assert not version
    for field, value in expected.items():
        assert attrgetter(field)(options) == value, field
    options.validate()


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--leader-elect=maybe"], id="bad-bool"),
        pytest.param(["--leader-elect-lease-duration=15"], id="duration-without-unit"),
        pytest.param(["--log-format=xml"], id="bad-format"),
        pytest.param(["--event-loop=trio"], id="bad-event-loop"),
        pytest.param(["--kube-api-burst=many"], id="bad-int"),
        pytest.param(["--leader-elect-resource-lock=configmaps"], id="lock-kind"),
        pytest.param(["--no-such-flag"], id="unknown-flag"),
        pytest.param(["positional"], id="positional"),
        pytest.param(["--kubecon=/k"], id="no-abbreviations"),
    ],
)
def test_invalid_flags_exit_with_usage_status(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert "usage: kcontrol-manager" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["--leader-elect-lease-duration=10s", "--leader-elect-renew-deadline=10s"],
            "lease-duration must be greater",
            id="lease-not-above-renew",
        ),
        pytest.param(
            ["--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=2s"],
            "1.2 * --leader-elect-retry-period",
            id="renew-not-above-retry",
        ),
        pytest.param(["--leader-elect-retry-period=0"], "greater than zero", id="zero-retry"),
        pytest.param(["--metrics-port=70000"], "not a port", id="port"),
        pytest.param(["--controllers=nope"], "not in the list of known", id="unknown-ctrl"),
        pytest.param(["--controllers=*,-nope"], "'-nope'", id="unknown-disabled"),
    ],
)
def test_inconsistent_flags_exit_2_with_a_reason(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv, registry=ControllerRegistry([SPEC])) == 2
    assert message in capsys.readouterr().err


def test_uvloop_asked_for_but_not_installed_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_options, "uvloop_installed", lambda: False)
    assert main(["--event-loop=uvloop"], registry=ControllerRegistry([SPEC])) == 2
    assert "uvloop is not installed" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("choice", "installed", "loop_module"),
    [
        pytest.param("auto", True, "uvloop", id="auto-installed"),
        pytest.param("auto", False, "asyncio", id="auto-not-installed"),
        pytest.param("asyncio", True, "asyncio", id="asyncio-though-installed"),
        pytest.param("uvloop", True, "uvloop", id="uvloop"),
    ],
)
def test_the_manager_runs_on_the_chosen_loop(
    choice: str, installed: bool, loop_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_process, "uvloop_installed", lambda: installed)

    async def loop_of_main() -> int:
        module = type(asyncio.get_running_loop()).__module__
        return 1 if module.startswith(loop_module) else 0

    assert _process.run_on_loop(loop_of_main(), choice) == 1


def test_lease_durations_are_not_checked_without_leader_election() -> None:
    options, _ = parse_args(
        ["--leader-elect=false", "--leader-elect-lease-duration=1s", "--metrics-port=0"]
    )
    options.validate()


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"kcontrol-manager v{kcontrol.__version__}\n"


def test_help_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for flag in (
        "--kubeconfig",
        "--master",
        "--controllers",
        "--concurrent-deployment-syncs",
        "--concurrent-replicaset-syncs",
        "--kube-api-qps",
        "--kube-api-burst",
        "--leader-elect",
        "--leader-elect-lease-duration",
        "--leader-elect-renew-deadline",
        "--leader-elect-retry-period",
        "--leader-elect-resource-name",
        "--leader-elect-resource-namespace",
        "--bind-address",
        "--metrics-port",
        "--log-format",
        "--version",
    ):
        assert flag in out, flag


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        pytest.param(0.0, "0s", id="zero"),
        pytest.param(0.5, "500ms", id="millis"),
        pytest.param(0.0015, "1.5ms", id="fractional-millis"),
        pytest.param(2e-6, "2\u00b5s", id="micros"),
        pytest.param(5e-9, "5ns", id="nanos"),
        pytest.param(1.5, "1.5s", id="fractional-seconds"),
        pytest.param(15.0, "15s", id="seconds"),
        pytest.param(60.0, "1m0s", id="minute"),
        pytest.param(90.0, "1m30s", id="minutes"),
        pytest.param(3600.0, "1h0m0s", id="hour"),
        pytest.param(5400.5, "1h30m0.5s", id="hours"),
        pytest.param(-2.0, "-2s", id="negative"),
    ],
)
def test_format_duration_writes_go_durations(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds)


PERIOD = ControllerFlag(
    "gadget-period", default=0.5, help="How often gadgets are checked.", parse=parse_duration
)
GADGETS = ControllerSpec("gadget-controller", SPEC.factory, enabled_by_default=False)
GADGET_FLAGS = ControllerSpec("gadget-flags", SPEC.factory, flags=(PERIOD,))


def help_text(capsys: pytest.CaptureFixture[str]) -> str:
    registry = ControllerRegistry([SPEC, GADGETS, GADGET_FLAGS, WIDGETS])
    assert main(["--help"], registry=registry) == 0
    return capsys.readouterr().out


def test_help_shows_types_not_destinations(capsys: pytest.CaptureFixture[str]) -> None:
    out = help_text(capsys)
    assert "CONTROLLER_FLAG" not in out
    assert not re.search(r"--[a-z0-9-]+ [A-Z][A-Z_:-]+", out), "no argparse-style metavars"
    for invocation in (
        "--concurrent-widget-syncs int32",
        "--gadget-period duration",
        "--controllers strings",
        "--kube-api-qps float32",
        "--kube-api-burst int32",
        "--leader-elect-lease-duration duration",
        "--leader-elect-resource-name string",
        "--bind-address ip",
        "--secure-port int",
        "--authorization-always-allow-paths strings",
        "-v, --v Level",
    ):
        assert invocation in out, invocation
    # Booleans take no value on the command line: no type after them.
    assert re.search(r"^\s+--leader-elect\s{2,}\S", out, re.MULTILINE), out
    assert "usage: kcontrol-manager [flags]" in out


def test_help_shows_defaults_as_kube_controller_manager_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = " ".join(help_text(capsys).split())  # line breaks depend on the terminal
    for default in (
        "(default 500ms)",  # a controller's duration flag
        "(default 5)",  # a controller's int flag
        "(default 15s)",
        "(default 10s)",
        "(default 2s)",
        "(default 20)",  # --kube-api-qps, not 20.0
        "(default [*])",
        "(default [/healthz,/readyz,/livez])",
        '(default "kube-system")',
        "(default true)",
    ):
        assert default in out, default
    for python_default in ("()", "0.5", "20.0", "15.0", "('", "None", "(default False)"):
        assert python_default not in out, python_default


def test_help_lists_the_known_controllers(capsys: pytest.CaptureFixture[str]) -> None:
    out = " ".join(help_text(capsys).split())
    assert (
        "All controllers: configmap-annotator, gadget-controller, gadget-flags, "
        "widget-controller" in out
    )
    assert "Disabled-by-default controllers: gadget-controller (default [*])" in out


def test_an_operators_help_lists_its_controllers(capsys: pytest.CaptureFixture[str]) -> None:
    manager = Manager(name="gadget-operator")
    manager.add(GADGETS)
    manager.add(GADGET_FLAGS)
    assert manager.main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "usage: gadget-operator [flags]" in out
    assert "All controllers: gadget-controller, gadget-flags" in out
    assert "--gadget-period duration How often gadgets are checked. (default 500ms)" in out
    assert "--kube-api-qps float32" in out and "(default 20)" not in out, "an operator's 0"


def test_console_script_prints_the_version() -> None:
    script = Path(sys.executable).with_name("kcontrol-manager")
    done = subprocess.run(
        [str(script), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout.strip() == f"kcontrol-manager v{kcontrol.__version__}"


def test_no_config_outside_a_cluster_exits_1(tmp_path: Any) -> None:
    """Without --kubeconfig/--master the manager wants the in-cluster service account; there
    is none here, so it fails (status 1) instead of guessing."""
    done = subprocess.run(
        [sys.executable, "-m", "examples.configmap_annotator", "--metrics-port=0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 1, done.stderr
    assert "exiting: no usable client configuration" in done.stderr
    assert "not running in a cluster" in done.stderr


# -- controller selection (kube-controller-manager's IsControllerEnabled) ---------------------


@pytest.mark.parametrize(
    ("controllers", "name", "on_by_default", "enabled"),
    [
        pytest.param(["*"], "a", True, True, id="star-default-on"),
        pytest.param(["*"], "a", False, False, id="star-default-off"),
        pytest.param(["a"], "a", False, True, id="named-default-off"),
        pytest.param(["b"], "a", True, False, id="not-named-no-star"),
        pytest.param(["*", "-a"], "a", True, False, id="star-minus"),
        pytest.param(["-a", "*"], "a", True, False, id="minus-star"),
        pytest.param(["a", "-a"], "a", True, True, id="first-match-wins"),
        pytest.param(["-a", "a"], "a", True, False, id="first-match-wins-minus"),
        pytest.param([], "a", True, False, id="empty"),
    ],
)
def test_controller_enabled(
    controllers: list[str], name: str, on_by_default: bool, enabled: bool
) -> None:
    assert controller_enabled(name, controllers, on_by_default) is enabled


def _factory(ctx: Any) -> None:
    return None


def test_registry_select() -> None:
    registry = ControllerRegistry(
        [ControllerSpec("b", _factory), ControllerSpec("a", _factory, enabled_by_default=False)]
    )
    registry.register("c", _factory)
    assert registry.names() == ["a", "b", "c"]
    assert "a" in registry and "z" not in registry
    assert len(registry) == 3
    assert [s.name for s in registry.select(["*"])] == ["b", "c"]
    assert [s.name for s in registry.select(["*", "a", "-c"])] == ["a", "b"]
    assert [s.name for s in registry.select(["c"])] == ["c"]
    with pytest.raises(OptionsError, match="'x' is not in the list of known controllers"):
        registry.select(["x"])


@pytest.mark.parametrize("name", ["", "*", "-a", "a,b"])
def test_registry_rejects_bad_names(name: str) -> None:
    with pytest.raises(ValueError, match="invalid controller name"):
        ControllerRegistry().register(name, _factory)


def test_registry_rejects_duplicates() -> None:
    registry = ControllerRegistry([ControllerSpec("a", _factory)])
    with pytest.raises(ValueError, match="twice"):
        registry.register("a", _factory)


def test_registry_from_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    group = "kcontrol.controllers"
    points = [
        EntryPoint("configmap-annotator", "examples.configmap_annotator:SPEC", group),
        EntryPoint("plain", "tests_manager_fake:factory", group),
    ]
    monkeypatch.setitem(sys.modules, "tests_manager_fake", _FakeModule())
    seen: list[str] = []

    def fake_entry_points(*, group: str) -> list[EntryPoint]:
        seen.append(group)
        return points

    monkeypatch.setattr(registry_module, "entry_points", fake_entry_points)
    registry = ControllerRegistry.from_entry_points()
    assert seen == ["kcontrol.controllers"]
    assert registry.names() == ["configmap-annotator", "plain"]
    assert [s.factory for s in registry] == [SPEC.factory, _factory]


def test_registry_entry_point_name_must_match_its_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    point = EntryPoint("other-name", "examples.configmap_annotator:SPEC", "kcontrol.controllers")
    monkeypatch.setattr(registry_module, "entry_points", lambda *, group: [point])
    with pytest.raises(ValueError, match="names controller spec"):
        ControllerRegistry.from_entry_points()


def test_installed_entry_points_load() -> None:
    """Whatever the installed distributions declare loads (kcontrol itself declares none, and
    never imports `kcontrol_controllers` to find them)."""
    registry = ControllerRegistry.from_entry_points()
    assert all(spec.name for spec in registry)


class _FakeModule:
    factory = staticmethod(_factory)


# -- flags the controllers declare -------------------------------------------------------------

WORKERS = ControllerFlag("concurrent-widget-syncs", default=5, help="Widgets at once.", minimum=1)
WIDGETS = ControllerSpec("widget-controller", SPEC.factory, flags=(WORKERS,))


def test_controller_flags_come_from_the_registered_specs() -> None:
    registry = ControllerRegistry([SPEC, WIDGETS])
    assert registry.flags() == [WORKERS]
    options, _ = parse_args(["--concurrent-widget-syncs", "3"], registry.flags())
    assert options.controller_flags == {"concurrent-widget-syncs": 3}
    defaults, _ = parse_args([], registry.flags())
    assert defaults.controller_flags == {}, "defaults are the spec's, applied by the manager"


def test_a_controller_flag_is_accepted_even_when_its_controller_is_disabled() -> None:
    registry = ControllerRegistry([SPEC, WIDGETS])
    options, _ = parse_args(
        ["--controllers=*,-widget-controller", "--concurrent-widget-syncs=2"], registry.flags()
    )
    assert registry.select(options.controllers) == [SPEC]
    assert options.controller_flags == {"concurrent-widget-syncs": 2}


@pytest.mark.parametrize("value", ["0", "-1", "many"])
def test_bad_controller_flag_values_exit_2_naming_the_flag(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = ControllerRegistry([SPEC, WIDGETS])
    assert main([f"--concurrent-widget-syncs={value}"], registry=registry) == 2
    assert "--concurrent-widget-syncs" in capsys.readouterr().err


def test_unregistered_controller_flags_are_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--concurrent-widget-syncs=2"], registry=ControllerRegistry([SPEC])) == 2
    assert "unrecognized arguments" in capsys.readouterr().err


def test_a_flag_declared_twice_is_refused() -> None:
    other = ControllerSpec("other-controller", SPEC.factory, flags=(WORKERS,))
    with pytest.raises(ValueError, match="declared twice"):
        ControllerRegistry([WIDGETS, other])


def test_resolved_flags_take_defaults_and_check_bounds() -> None:
    assert resolve_controller_flags([WORKERS], {}) == {"concurrent-widget-syncs": 5}
    assert resolve_controller_flags([WORKERS], {"concurrent-widget-syncs": 9}) == {
        "concurrent-widget-syncs": 9
    }
    with pytest.raises(OptionsError, match="at least 1"):
        resolve_controller_flags([WORKERS], {"concurrent-widget-syncs": 0})
    with pytest.raises(OptionsError, match="unknown controller flags: --nope"):
        resolve_controller_flags([WORKERS], {"nope": 1})


def test_the_installed_controllers_declare_kube_controller_managers_flags() -> None:
    flags = {flag.name: flag for flag in ControllerRegistry.from_entry_points().flags()}
    assert flags["concurrent-deployment-syncs"].default == 5
    assert flags["concurrent-replicaset-syncs"].default == 5


def test_webhook_flags() -> None:
    options, _ = parse_args([])
    assert (options.webhook.port, options.webhook.cert_file) == (9443, None)
    options, _ = parse_args(
        [
            "--webhook-port=9444",
            "--webhook-bind-address=127.0.0.1",
            "--webhook-cert-file=/certs/tls.crt",
            "--webhook-key-file=/certs/tls.key",
        ]
    )
    webhook = options.webhook
    assert (webhook.port, webhook.bind_address) == (9444, "127.0.0.1")
    assert (webhook.cert_file, webhook.key_file) == (Path("/certs/tls.crt"), Path("/certs/tls.key"))
    options, _ = parse_args(["--webhook-cert-dir=/tmp/hooks"])
    assert options.webhook.cert_dir == Path("/tmp/hooks")
    with pytest.raises(OptionsError, match="go together"):
        parse_args(["--webhook-cert-file=/certs/tls.crt"])


def test_webhook_install_url_flag() -> None:
    options, _ = parse_args(["--webhook-install-url=https://127.0.0.1:9443"])
    assert options.webhook.install_url == "https://127.0.0.1:9443"
    assert parse_args([])[0].webhook.install_url is None

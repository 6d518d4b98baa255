"""The public surfaces of kcontrol.controller, kcontrol.manager (and its flags) and
kcontrol.serving: nothing private leaks into ``__all__`` and every listed name exists (new
exports are a deliberate change here)."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

import pytest

from kcontrol.manager import main

SURFACES = {
    "kcontrol.controller": {
        "EXPECTATIONS_TIMEOUT",
        "PerRegistry",
        "RECONCILE_TIME_BUCKETS",
        "CanAdopt",
        "CannotAdopt",
        "ClaimError",
        "ConsistencyStore",
        "ControlleeExpectations",
        "Controller",
        "ControllerExpectations",
        "ControllerOptions",
        "ControllerRefManager",
        "LastSyncResourceVersion",
        "Result",
        "SupersededWrites",
        "SyncFunc",
        "UIDTrackingControllerExpectations",
        "compare_resource_versions",
        "get_controller_of",
        "guarded_by",
        "key_func",
        "recheck_deletion_timestamp",
        "recheck_owner",
        "resolve_controller_ref",
        "superseded",
    },
    "kcontrol.manager": {
        "DEFAULT_LEASE_NAME",
        "DEFAULT_LEASE_NAMESPACE",
        "DEFAULT_SECURE_PORT",
        "ENTRY_POINT_GROUP",
        "ClientOptions",
        "ControllerContext",
        "ControllerFlag",
        "ControllerFactory",
        "ControllerRegistry",
        "ControllerSpec",
        "Manager",
        "ManagerOptions",
        "OptionsError",
        "Runnable",
        "default_identity",
        "main",
        "new_metrics_registry",
    },
    # kcontrol-manager's command line: not the library's facade.
    "kcontrol.manager.flags": {
        "build_parser",
        "format_duration",
        "parse_args",
        "parse_bool",
        "parse_duration",
    },
    "kcontrol.serving": {
        "CIPHER_SUITES",
        "DEFAULT_TLS_MIN_VERSION",
        "INSECURE_CIPHER_SUITES",
        "TLS_VERSIONS",
        "ConnectionLimits",
        "HealthCheck",
        "HealthServer",
        "NamedCheck",
        "SecureServer",
        "ServingOptions",
    },
    "kcontrol.logging": {
        "LOG_FORMATS",
        "BoundLogger",
        "LogFormat",
        "LogMessage",
        "configure",
        "configure_unless_configured",
        "get_logger",
        "level_for_verbosity",
    },
}


@pytest.mark.parametrize("module_name", sorted(SURFACES))
def test_public_surface(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert set(module.__all__) == SURFACES[module_name]
    assert len(module.__all__) == len(set(module.__all__)), "duplicates in __all__"
    for name in module.__all__:
        assert hasattr(module, name), name
    public = {n for n in vars(module) if not n.startswith("_")}
    submodules = {n for n in public if type(getattr(module, n)).__name__ == "module"}
    assert public - submodules - {"annotations"} >= set(module.__all__)


def test_console_script_target_is_the_facades_main() -> None:
    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "kcontrol-manager"]
    assert script.value == "kcontrol.manager:main"
    assert script.load() is main

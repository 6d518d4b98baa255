"""What kcontrol-manager loads at start: start-up CPU counts (benchmarks against
kube-controller-manager), so packages needed only in some configurations are imported when
that configuration is used, never by ``import kcontrol.manager``. Each check runs in a fresh
interpreter: this test process has imported everything already."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

START = (
    "import kcontrol.manager, kcontrol_controllers.job, kcontrol_controllers.replicaset, "
    "kcontrol_controllers.deployment"
)

NOT_AT_START = {
    "kubernetes_asyncio": "its generated API models cost ~0.45 s of CPU; kcontrol never needs it",
    "cryptography": "only to generate a self-signed serving certificate",
    "structlog": "only when kcontrol.logging.configure() sets up a process",
    "rich": "the rollout view (and structlog, when installed, once logging is set up)",
    "yaml": "only to read a kubeconfig",
    "kcontrol.client._clientcmd": "the kubeconfig loader, for kubeconfig users only",
    "kcontrol.client._exec": "exec credential plugins, for kubeconfig users only",
    "kcontrol.testing": "test helpers",
    "kcontrol.rollout": "the rollout view",
}


def modules_after(code: str) -> set[str]:
    """The names in ``sys.modules`` after a fresh interpreter ran ``code``."""
    report = "\nimport json as _j, sys as _s\nprint(_j.dumps(sorted(_s.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code + report],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def loaded_of(modules: set[str], packages: dict[str, str]) -> dict[str, str]:
    return {
        name: why
        for name, why in packages.items()
        if name in modules or any(m.startswith(f"{name}.") for m in modules)
    }


def test_importing_the_manager_loads_nothing_optional() -> None:
    modules = modules_after(START)
    assert "kcontrol.manager" in modules and "kcontrol_controllers.job" in modules
    assert loaded_of(modules, NOT_AT_START) == {}


def test_reading_a_kubeconfig_loads_the_loader_only(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text(
        json.dumps(
            {
                "clusters": [{"name": "c", "cluster": {"server": "https://k:6443"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    code = f"""{START}
import asyncio
from kcontrol.client import load_config
config = asyncio.run(load_config(kubeconfig={str(kubeconfig)!r}))
assert config.host == "https://k:6443", config
"""
    modules = modules_after(code)
    assert {"yaml", "kcontrol.client._clientcmd", "kcontrol.client._kubeconfig"} <= modules
    assert "kubernetes_asyncio" not in modules

"""How the benchmarks start the controllers they measure: ``--kcm-gomaxprocs`` changes only
kube-controller-manager's environment, and only when asked; kcontrol-manager comes from
``.venv-runtime`` (installed as the image installs it) when ``make bench`` has made it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import bench._process
from bench.rollout import IMPLS, KCM, KCONTROL, controller_env


def test_kcm_gets_gomaxprocs_and_the_rest_of_the_environment() -> None:
    env = controller_env(KCM, 1)
    assert env is not None
    assert env["GOMAXPROCS"] == "1"
    assert env["PATH"] == os.environ["PATH"]


def test_kcontrol_and_the_default_inherit_the_environment_unchanged() -> None:
    assert controller_env(KCONTROL, 1) is None
    assert all(controller_env(impl, 0) is None for impl in IMPLS)


def test_kcontrol_manager_prefers_the_runtime_virtualenv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench._process, "_ROOT", tmp_path)
    assert bench._process.kcontrol_manager() == tmp_path / ".venv/bin/kcontrol-manager"
    runtime = tmp_path / ".venv-runtime/bin/kcontrol-manager"
    runtime.parent.mkdir(parents=True)
    runtime.touch()
    assert bench._process.kcontrol_manager() == runtime

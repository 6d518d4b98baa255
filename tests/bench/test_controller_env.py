"""``--kcm-gomaxprocs``: only kube-controller-manager's environment changes, and only when
asked."""

from __future__ import annotations

import os

from bench.rollout import IMPLS, KCM, KCONTROL, controller_env


def test_kcm_gets_gomaxprocs_and_the_rest_of_the_environment() -> None:
    env = controller_env(KCM, 1)
    assert env is not None
    assert env["GOMAXPROCS"] == "1"
    assert env["PATH"] == os.environ["PATH"]


def test_kcontrol_and_the_default_inherit_the_environment_unchanged() -> None:
    assert controller_env(KCONTROL, 1) is None
    assert all(controller_env(impl, 0) is None for impl in IMPLS)

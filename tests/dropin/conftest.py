"""Each drop-in test module runs on its own cluster whose apiserver writes an audit log (the
writers are told apart by user agent)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from kcontrol.client import ApiClient
from kcontrol.envtest.cluster import Cluster
from tests.dropin.dropin_helpers import start_audited_cluster
from tests.integration.helpers import new_client


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path]]:
    cluster, log = start_audited_cluster(tmp_path_factory.mktemp("audit"))
    try:
        yield cluster, log
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def cluster(audited: tuple[Cluster, Path]) -> Cluster:
    """This module's own cluster (audited), also behind ``cluster_namespace``."""
    return audited[0]


@pytest.fixture(scope="module")
def audit_log(audited: tuple[Cluster, Path]) -> Path:
    return audited[1]


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[ApiClient]:
    async with new_client(cluster) as api:
        yield api

"""Fixtures of the controller tests on the test cluster (the session ``cluster`` fixture)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kcontrol.client import ApiClient
from kcontrol.envtest.cluster import Cluster
from kcontrol.manager import Manager
from kcontrol_controllers.deployment import SPEC as DEPLOYMENT_SPEC
from kcontrol_controllers.replicaset import SPEC as REPLICASET_SPEC
from tests.controllers.cluster_helpers import running_manager
from tests.integration.helpers import new_client


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[ApiClient]:
    """An unthrottled admin client of the test cluster."""
    async with new_client(cluster) as api:
        yield api


@pytest.fixture(params=[1, 3], ids=["single", "3-shards"])
async def controllers(
    cluster: Cluster, cluster_namespace: str, request: pytest.FixtureRequest
) -> AsyncIterator[Manager]:
    """kcontrol's Deployment and ReplicaSet controllers, in this process, for one test: once
    as one manager, once as three sharded replicas (``kcontrol-manager --shards=3``, issue
    24), the test's namespace in the shard of one of them.

    Depends on ``cluster_namespace`` so that they stop before the namespace is deleted.
    """
    async with running_manager(
        cluster, DEPLOYMENT_SPEC, REPLICASET_SPEC, shards=request.param
    ) as manager:
        yield manager

"""Fixtures of the controller tests on the test cluster (the session ``cluster`` fixture)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kcontrol.client import ApiClient
from kcontrol.manager import Manager
from kcontrol.testing.cluster import Cluster
from kcontrol_controllers.deployment import SPEC as DEPLOYMENT_SPEC
from kcontrol_controllers.replicaset import SPEC as REPLICASET_SPEC
from tests.controllers.cluster_helpers import running_manager
from tests.integration.helpers import new_client


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[ApiClient]:
    """An unthrottled admin client of the test cluster."""
    async with new_client(cluster) as api:
        yield api


@pytest.fixture
async def controllers(cluster: Cluster, cluster_namespace: str) -> AsyncIterator[Manager]:
    """kcontrol's Deployment and ReplicaSet controllers, in this process, for one test.

    Depends on ``cluster_namespace`` so that they stop before the namespace is deleted.
    """
    async with running_manager(cluster, DEPLOYMENT_SPEC, REPLICASET_SPEC) as manager:
        yield manager

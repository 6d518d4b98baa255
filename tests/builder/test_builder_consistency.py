"""Read your own writes in the operator layer: a builder's reconcile records what it writes
(through any client) and the next reconcile of the same key waits until the informers have
seen it - the wrapper the builder puts around every reconcile."""

from __future__ import annotations

import pytest

from kcontrol.builder._builder import _consistent
from kcontrol.client import CONFIGMAPS, SECRETS
from kcontrol.controller import ConsistencyStore, Result
from kcontrol.errors import StaleCache
from kcontrol.testing import FakeClient


def configmap(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}}


async def test_the_next_reconcile_waits_for_the_informer_to_see_the_last_write() -> None:
    client = FakeClient()
    await client.create(CONFIGMAPS, configmap("a"))
    informer_at = {"version": ""}
    store = ConsistencyStore({CONFIGMAPS: lambda: informer_at["version"]})
    calls: list[str] = []

    async def reconcile(key: str) -> Result | None:
        calls.append(key)
        await client.patch(CONFIGMAPS, "a", {"data": {"n": str(len(calls))}}, namespace="ns")
        await client.create(SECRETS, {"metadata": {"name": f"s{len(calls)}", "namespace": "ns"}})
        return None

    sync = _consistent(reconcile, store)
    await sync("ns/a")
    written = (await client.get(CONFIGMAPS, "a", namespace="ns"))["metadata"]["resourceVersion"]
    assert store.pending("ns/a") == {CONFIGMAPS: written}, "untracked kinds are not recorded"

    informer_at["version"] = str(int(written) - 1)  # the informer has not seen the patch
    with pytest.raises(StaleCache):
        await sync("ns/a")
    assert calls == ["ns/a"], "held back: the reconcile did not run on the stale cache"

    informer_at["version"] = written
    await sync("ns/a")
    assert calls == ["ns/a", "ns/a"]


async def test_writes_outside_a_reconcile_are_not_recorded() -> None:
    client = FakeClient()
    store = ConsistencyStore({CONFIGMAPS: lambda: "1"})
    await client.create(CONFIGMAPS, configmap("b"))
    with store.recording("ns/a"):
        pass
    await client.create(CONFIGMAPS, configmap("c"))
    assert store.pending("ns/a") == {}

"""The registry written with kcontrol, as docs/guides/operator.md ("Objects many reconciles
share") teaches: each owner's key set or removed with ``controllerutil.patch_entries`` - one
merge patch of that key, no resourceVersion, the ConfigMap created by the first write - on a
client at an operator manager's defaults (no client-side rate limit).

No ``reader`` (cache) is given: every key is new at ``set`` and present at ``remove``, so a
cache would skip nothing here; the guide's reconcile passes one to skip repeated writes.
"""

from __future__ import annotations

from bench.registry._worker import NAME, NAMESPACE, Counts, WriteShare, serve, value_of
from kcontrol.client import CONFIGMAPS, ApiClient, load_config
from kcontrol.controllerutil import patch_entries


async def setup(kubeconfig: str) -> WriteShare:
    client = ApiClient(await load_config(kubeconfig=kubeconfig), qps=0)

    async def write(keys: list[str], phase: str, counts: Counts) -> None:
        for key in keys:
            counts.requests += 1
            await patch_entries(
                client,
                CONFIGMAPS,
                NAME,
                {key: value_of(key) if phase == "set" else None},
                namespace=NAMESPACE,
                create=True,
            )

    return write


if __name__ == "__main__":
    serve(setup)

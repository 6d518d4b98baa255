"""The registry as a kopf user writes it: the official ``kubernetes`` client (as in kopf's
walkthrough) called from sync handlers, which kopf runs in its thread pool - here each worker
is a thread (``asyncio.to_thread``), one client shared, as a ``memo`` would hold it.

Two ways, chosen by ``$REGISTRY_WAY``:

- ``rmw`` (read-modify-write): read the ConfigMap, change the key, send a merge patch that
  carries the resourceVersion read (so a concurrent change is not overwritten); on 409
  Conflict read again and retry; a missing ConfigMap is created (409 AlreadyExists: retry);
- ``patch``: a merge patch of the key alone - patch_entries' request - the ConfigMap created
  on 404. The client's default content type for a patch is a JSON Patch
  (``application/json-patch+json``, the first it lists), which a dict is not: the merge
  patch has to be asked for.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from bench.registry._worker import NAME, NAMESPACE, Counts, WriteShare, serve, value_of

MERGE = "application/merge-patch+json"


def _create(api: Any, key: str, value: str | None, counts: Counts) -> bool:
    """Create the ConfigMap with the key; False if another worker created it first."""
    counts.requests += 1
    body = {"metadata": {"name": NAME}, "data": {key: value} if value is not None else {}}
    try:
        api.create_namespaced_config_map(NAMESPACE, body)
    except ApiException as error:
        if error.status == 409:
            return False
        raise
    return True


def rmw(api: Any, key: str, value: str | None, counts: Counts) -> None:
    while True:
        counts.requests += 1
        try:
            configmap = api.read_namespaced_config_map(NAME, NAMESPACE)
        except ApiException as error:
            if error.status != 404:
                raise
            if _create(api, key, value, counts):
                return
            continue
        patch = {
            "metadata": {"resourceVersion": configmap.metadata.resource_version},
            "data": {key: value},
        }
        counts.requests += 1
        try:
            api.patch_namespaced_config_map(NAME, NAMESPACE, patch, _content_type=MERGE)
            return
        except ApiException as error:
            if error.status != 409:
                raise
            counts.conflicts += 1


def patch(api: Any, key: str, value: str | None, counts: Counts) -> None:
    while True:
        counts.requests += 1
        try:
            api.patch_namespaced_config_map(
                NAME, NAMESPACE, {"data": {key: value}}, _content_type=MERGE
            )
            return
        except ApiException as error:
            if error.status != 404:
                raise
        if _create(api, key, value, counts):
            return


async def setup(kubeconfig: str) -> WriteShare:
    kubernetes.config.load_kube_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    api = kubernetes.client.CoreV1Api()
    way = {"rmw": rmw, "patch": patch}[os.environ.get("REGISTRY_WAY", "rmw")]

    def write_share(keys: list[str], phase: str, counts: Counts) -> None:
        for key in keys:
            way(api, key, value_of(key) if phase == "set" else None, counts)

    async def write(keys: list[str], phase: str, counts: Counts) -> None:
        await asyncio.to_thread(write_share, keys, phase, counts)

    return write


if __name__ == "__main__":
    serve(setup)

"""The Python floors, against which an informer's cost is read.

- ``asyncio models``: bare kubernetes_asyncio, ``list_pod_for_all_namespaces`` paged 500 at
  resourceVersion 0 into a dict of generated models (what users of that library get); no
  watch is started.
- ``aiohttp floor``: one aiohttp session GETting the same LIST (limit=500,
  resourceVersion=0: one response from the watch cache) and discarding the bytes - the
  least any client can take.
"""

# ruff: noqa: PLC0415

from __future__ import annotations

import argparse
import re
from typing import Any

from bench._process import settled_rss_kb
from bench.informer._child import Clock, emit

_CONTINUE = re.compile(rb'"continue":"([^"]*)"')


async def run_asyncio_models(args: argparse.Namespace, clock: Clock) -> None:
    from kubernetes_asyncio import client as k8s
    from kubernetes_asyncio import config as k8s_config

    configuration = k8s.Configuration()
    await k8s_config.load_kube_config(
        config_file=args.kubeconfig, client_configuration=configuration
    )
    cache: dict[str, Any] = {}
    async with k8s.ApiClient(configuration) as api_client:
        api = k8s.CoreV1Api(api_client)
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"limit": 500}
            if token:
                kwargs["_continue"] = token
            else:
                kwargs["resource_version"] = "0"
            if args.namespace:
                page = await api.list_namespaced_pod(args.namespace, **kwargs)
            else:
                page = await api.list_pod_for_all_namespaces(**kwargs)
            for pod in page.items:
                cache[f"{pod.metadata.namespace}/{pod.metadata.name}"] = pod
            token = page.metadata._continue
            if not token:
                break
        result = clock.sync_metrics(len(cache))
        result["rss_settled_kb"] = settled_rss_kb()
        emit({"mode": "sync", **result})


async def run_aiohttp(args: argparse.Namespace, clock: Clock) -> None:
    import aiohttp

    from kcontrol.client import load_config

    config = await load_config(kubeconfig=args.kubeconfig)
    authorization = await config.auth.authorization() if config.auth else None
    headers = {"Accept": "application/json"}
    if authorization:
        headers["Authorization"] = authorization
    path = f"/api/v1/namespaces/{args.namespace}/pods" if args.namespace else "/api/v1/pods"
    pages = total = 0
    connector = aiohttp.TCPConnector(ssl=config.ssl_context())
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        token = ""
        while True:
            params = {"limit": str(args.page_size)} if args.page_size else {}
            if token:
                params["continue"] = token
            else:
                params["resourceVersion"] = "0"
            async with session.get(config.host + path, params=params) as response:
                response.raise_for_status()
                body = await response.read()
            pages += 1
            total += len(body)
            # The list's metadata (with any continue token) comes before the items.
            match = _CONTINUE.search(body, 0, 4096)
            token = match.group(1).decode() if match else ""
            del body
            if not token:
                break
    result = clock.sync_metrics(-1)
    result.update(pages=pages, bytes=total)
    emit({"mode": "sync", **result})

"""The official client's informer child: ``kubernetes.informer.SharedInformer`` over
``CoreV1Api.list_pod_for_all_namespaces`` (threads, urllib3, typed models; one unpaged LIST).

It has no has_synced: its first LIST (and the ADDED callbacks) is complete once it has
recorded the list's resourceVersion, which is the sync point measured.
"""

# ruff: noqa: PLC0415

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from bench._process import settled_rss_kb
from bench.informer._child import Clock, emit


def run_official(args: argparse.Namespace, clock: Clock) -> None:
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config
    from kubernetes.informer import ADDED, SharedInformer

    k8s_config.load_kube_config(config_file=args.kubeconfig)
    api = k8s.CoreV1Api()
    adds = 0

    def on_add(obj: Any) -> None:
        nonlocal adds
        adds += 1

    if args.namespace:
        informer = SharedInformer(api.list_namespaced_pod, namespace=args.namespace)
    else:
        informer = SharedInformer(api.list_pod_for_all_namespaces)
    informer.add_event_handler(ADDED, on_add)
    informer.start()
    while informer._resource_version is None:
        time.sleep(0.002)
    result = clock.sync_metrics(len(informer.cache.list_keys()))
    result["rss_settled_kb"] = settled_rss_kb()
    result["handler_adds"] = adds
    emit({"mode": "sync", **result})
    os._exit(0)  # the watch thread blocks in a socket read; do not wait for it

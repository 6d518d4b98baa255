"""Registry benchmark (issue 39): an object many reconciles share - a Memcached-style
registry, one ConfigMap ``memcached-registry`` in namespace ``ops`` whose ``data`` holds one
key per owner (``memcached-0042: memcached-0042.ops.svc:11211``) - written by 5 concurrent
workers, with kcontrol's pattern and with what a kopf user writes.

The sides (bench/registry/_run.py's ``IMPLEMENTATIONS``), each a writer process of its own:

- ``kcontrol`` (bench/registry/kcontrol_registry.py): the operator guide's pattern,
  ``controllerutil.patch_entries`` - one JSON merge patch of the owner's key, no
  resourceVersion, ``create=True`` so the first write creates the ConfigMap - on an
  unthrottled client (an operator manager's default);
- ``kopf-rmw`` (bench/registry/kopf_registry.py): the official ``kubernetes`` client as kopf's
  walkthrough uses it, in sync handlers (threads, as kopf runs them): read the ConfigMap, merge
  patch the key with the resourceVersion read, on 409 read again and retry;
- ``kopf-patch``: the same client sending patch_entries' request (a merge patch of the key
  alone, no precondition) - the best a kopf user can do, for comparison.

Each run (``--runs`` per key count, the sides in rotating order) gets a fresh control plane
(kcontrol.envtest) and the namespace ``ops``; no ConfigMap exists at the start. Two phases,
each started by the benchmark once the writer is up: ``set`` (the N keys, worker ``i`` writing
keys ``i::5`` one after another) and ``remove`` (each key taken out). Per phase: the time from
its start until every worker's last write was answered (as the writer timed it); the writer's
CPU-seconds (``getrusage``, every thread) and kube-apiserver + etcd's (``/proc``); the writes
by verb, those refused (404 before the ConfigMap exists; 409 Conflict or AlreadyExists:
retried) and the reads, as the API server counted them (``apiserver_request_total`` for
ConfigMaps, scraped around the phase); and the check - the ConfigMap read after ``set``
holds exactly the N keys with their values, after ``remove`` none: a lost key fails the run.

Caveats: the workers are bare loops, not operators - no informers, no reconcile queue, no
events; what is compared is the write pattern and the client under it, which is all a shared
object's convergence depends on. The phases are short (tenths of a second at 50 keys): the
CPU figures are at ``getrusage``'s resolution but the times contend with whatever else the 2
shared cores run; the load average at each run's start is recorded.

Usage (from the repository root)::

    .venv/bin/python -m bench.registry --keys 50,500 --runs 5 \\
        --out bench/results/tables/registry.md --json bench/results/registry.json
"""

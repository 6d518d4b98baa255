"""Garbage-collector benchmark: kcontrol-manager's ``garbage-collector-controller``
(controllers/garbagecollector) side by side with kube-controller-manager's, on the same
cluster, at equal client limits.

One cluster (kcontrol.envtest.cluster: etcd, kube-apiserver with an audit log and three
CustomResourceDefinitions, the cluster's own kube-controller-manager with only its
``namespace-controller``; kube-scheduler and kwok are stopped: no nodes, no pods) is given a
start-up population once, by the benchmark's own unthrottled client, 48 requests at a time:
``--objects`` objects of the first ``--kinds`` of 20 kinds (bench/gc/_workload.py
``KINDS``: ConfigMaps, Secrets, ServiceAccounts, headless Services, PodTemplates,
LimitRanges, ReplicationControllers and Deployments of 0 replicas, ControllerRevisions,
Roles, RoleBindings, Leases, PodDisruptionBudgets, NetworkPolicies, EndpointSlices,
Ingresses, HorizontalPodAutoscalers and three custom resources), in turn, spread over
``--namespaces`` namespaces; 60% of them have an owner reference to another (live)
start-up object of their namespace, of any kind. Nothing in the cluster acts on these kinds.

Then ``--runs`` runs per client limit, each with both sides one after the other, KCM first
in even runs and kcontrol first in odd ones (bench/jobs's ``side_order``); each run starts
the side's collector as a process of its own with only that controller, built by
bench/rollout.py's ``ControllerProcess``:

- ``kcm``: ``kube-controller-manager --controllers=garbage-collector-controller
  --leader-elect=false --kube-api-qps=Q --kube-api-burst=B`` (the cluster's binary, v1.36.3);
- ``kcontrol``: ``kcontrol-manager --controllers=garbage-collector-controller
  --leader-elect=false --kube-api-qps=Q --kube-api-burst=B --secure-port=0
  --metrics-port=P`` (``.venv-runtime``'s when ``make bench-assets`` made it);

both at their defaults otherwise (``--concurrent-gc-syncs`` 20, both resync discovery every
30 s and give their monitors 30 s to sync before starting the workers anyway). Each run has
two phases:

1. **start-up**: from the process's exec until its graph is synced. Two moments are taken:
   *monitors synced*, its log line (KCM: "Garbage collector: all resource monitors have
   synced", kcontrol: "all monitors synced"; each collector's informers have listed and
   handed every object to the graph's queue), and *graph synced*, the first scrape of its
   ``/metrics`` (every 0.1 s, from the log line on) where its ``workqueue_depth`` of
   ``garbage_collector_graph_changes`` is 0 after ``workqueue_adds_total`` reached the
   number of start-up objects (both export the queue under upstream's name): the graph
   holds every object (the depth at the first scrape is kept: the events the graph still
   had to apply when the monitors said synced). Quoted: the seconds to graph synced, the process's CPU-seconds to
   then (user + sys of every thread, ``/proc/<pid>/stat``) and its ``VmHWM`` then; beside
   them kube-apiserver + etcd CPU-seconds over the same window (KCM's collector watches
   built-in kinds through its typed shared informers, whole objects as protobuf, and custom
   resources through metadata informers; kcontrol's monitors list metadata only, as JSON);
2. **cascade**: in a fresh namespace, ``--owners`` ConfigMaps with ``--dependents``
   dependents each (ConfigMaps and Secrets in turn, one owner reference each, no
   ``blockOwnerDeletion``), and ``max(1, owners/100)`` surviving owners with as many
   dependents, created by the benchmark; once the collector's graph has taken them (the
   same queue check), every owner but the survivors is deleted (``propagationPolicy:
   Background``, 32 at a time). Quoted: the seconds from the first owner DELETE until the
   benchmark's informer has seen every dependent gone; the collector's CPU-seconds over
   that window and its quiet tail (until it has sent no write for 2 s); its writes, from the
   audit log by user agent (KCM's ``generic-garbage-collector`` client,
   ``kcontrol-manager/...``) by ``"VERB resource"``; ``apiserver_request_total`` (every
   writer) kept as a check.

Peak RSS is the process's ``VmHWM`` at the end of the run (start-up included), and its
whole-run CPU-seconds are taken then too (from exec: start-up, the graph taking the
cascade's objects, the cascade). After each run the process is stopped (SIGTERM) and the
namespace deleted and waited for.

**Verification** (every run; a run with a problem is reported, and the command exits with
status 1 after writing its results): every dependent gone before ``--timeout``; the
survivors and all their dependents still there; every start-up kind's object count across
the cluster (a LIST of one item and its ``remainingItemCount``) the same after the run as
after the population was created; the collector's successful DELETEs of ConfigMaps and
Secrets exactly the number of dependents, and no other write by it in either phase. A
collector that is not running, never syncs, deletes too little or too much fails the run.

Client limits (``--qps``): ``unthrottled`` (the default) is QPS 10000 / burst 10000 for KCM
and ``--kube-api-qps=0`` (no limiter) for kcontrol-manager; ``20:30`` is QPS 20 / burst 30,
KCM's default, on both sides (KCM's collector doubles the QPS of its metadata client, as
upstream; at 20:30 a 1000x10 cascade takes minutes on either side, paced by the limiter).
The issue's targets, kcontrol/KCM: peak RSS <= 1.0x, time <= 1.0x, CPU-seconds <= 1.2x, for
each phase.

Caveats: the machine has 2 cores shared by etcd, kube-apiserver, the cluster's KCM, the
collector under test, this script and other people's work: wall time contends most,
CPU-seconds are steadier; the 1-minute load average at each run's start is recorded. The
start-up time includes each process's own start (a Go binary's exec against an
interpreter's imports), as an operator would see it. There is no warm-up run: the
population's creation warms the apiserver's watch cache, and the side order alternates. The
graph-synced moment is a scrape every 0.1 s (it may be that much late on either side) and
the scrapes cost the collector a little CPU; the monitors-synced line is taken from the log,
polled every 0.05 s. Both collectors see the same population, since neither deletes any of
it (checked).

Usage (from the repository root)::

    .venv/bin/python -m bench.gc --objects 50000 --kinds 20 --owners 1000 --dependents 10 \\
        --runs 2 --out bench/results/tables/gc.md --json bench/results/gc.json \\
        --plot bench/results/plots/gc.png

``--dump FILE`` writes the raw runs after each run; ``--keep-logs`` keeps the cluster's
directory (component logs, each collector's log, the audit log); ``--profile DIR`` records
py-spy's stacks of each kcontrol run (not for quoting).
"""

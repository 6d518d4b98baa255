"""StatefulSet and DaemonSet benchmark (issue 36): kcontrol-manager's
``statefulset-controller`` and ``daemonset-controller`` side by side with
kube-controller-manager's, on the same kwok cluster, at equal client limits.

Workloads (``--sizes``, each measured on its own in every run):

- ``sts=NxR``: N StatefulSets of R replicas, ``OrderedReady``, ``RollingUpdate`` with its
  defaults (partition 0, one pod at a time), no ``volumeClaimTemplates``;
- ``ds=MxK``: M DaemonSets over K kwok nodes (those labelled ``bench.kcontrol.io/ds-pool-K``,
  the DaemonSets' ``nodeSelector``), ``RollingUpdate`` with ``maxUnavailable: 10%`` (5 of 50
  nodes; 1 of 5), no surge. 10% rather than the default 1: with 1 a 50-node re-template is
  50 readiness waits one after the other per DaemonSet, a measure of kwok's ready delay more
  than of the controller; 10% keeps ten waves, so the controller's pace still shows.

Each run of a workload has two phases, each timed until every set is rolled out:

1. **create**: the sets POSTed, 16 at a time, by the benchmark's own unthrottled client;
2. **retemplate**: an annotation of every set's pod template changed (a merge patch), so
   every pod is replaced.

A set is rolled out (bench/sets/_workload.py ``is_rolled_out``) once its
``status.observedGeneration`` has reached the generation of the phase's write and, for a
StatefulSet, ``replicas == readyReplicas == availableReplicas == updatedReplicas ==
spec.replicas`` and ``currentRevision == updateRevision``; for a DaemonSet,
``desiredNumberScheduled == currentNumberScheduled == updatedNumberScheduled == numberReady
== numberAvailable == K``, nothing misscheduled or unavailable. The benchmark watches the sets
through an informer, checked every 0.1 s; after the last set, each phase also waits until the
controller has sent no write for 2 s (its events and last status updates trail).

One cluster serves every size (kcontrol.envtest.cluster: etcd, kube-apiserver with an audit
log, kube-scheduler, kwok with ``ceil(N*R/110) + 1`` unlabelled nodes plus the DaemonSets'
pools, pods Ready ``--pod-ready-delay`` s after they start, and the cluster's own
kube-controller-manager with ``--controllers=*,-deployment-controller,-replicaset-controller,
-statefulset-controller,-daemonset-controller``: its garbage collector, namespace and
service-account controllers keep running). After one unrecorded warm-up round per workload
(``sts=min(N,3)xR``, ``ds=1xK``) with each side, for each client limit in ``--qps``,
``--runs`` runs, each measuring every workload with both sides one after the other, KCM first
in even runs and kcontrol first in odd ones (bench/jobs's ``side_order``):

1. a fresh namespace (its ``default`` ServiceAccount waited for);
2. the controller under test started as a process of its own with only that controller,
   both built by bench/rollout.py's ``ControllerProcess``:

   - ``kcm``: ``kube-controller-manager --controllers=statefulset-controller`` (or
     ``daemonset-controller``) ``--leader-elect=false --kube-api-qps=Q --kube-api-burst=B``
     (the cluster's binary, v1.36.3; ready when ``/healthz`` answers);
   - ``kcontrol``: ``kcontrol-manager --controllers=statefulset-controller`` (or
     ``daemonset-controller``: both are opt-in entry points) ``--leader-elect=false
     --kube-api-qps=Q --kube-api-burst=B --secure-port=0 --metrics-port=P`` (ready when
     ``/readyz`` answers: caches synced);

   both at their default ``--concurrent-statefulset-syncs`` (5) and
   ``--concurrent-daemonset-syncs`` (2), then 2 idle seconds; its CPU so far is ``start
   CPU``;
3. the two phases;
4. the controller's peak RSS read, the controller stopped (SIGTERM), the namespace deleted and
   waited for until gone.

Measured per run and phase: ``wall``, from just before the first write of the phase until
every set was seen rolled out (a run's time is the two phases' sum); ``p50``, the median
set's; the controller process's CPU-seconds (user + sys of every thread, ``/proc/<pid>/stat``)
over the phase, its quiet tail included; kube-apiserver + etcd CPU-seconds over the same
window; the controller's API writes from the audit log, by user agent and ``"VERB resource"``
(pods created and deleted, StatefulSet / DaemonSet status updates, ControllerRevisions,
events; KCM's clients are ``statefulset-controller`` and ``daemon-set-controller``, see
bench/jobs/_audit.py), quoted per set. Per run: peak RSS (``VmHWM``, start-up included), the
controller's own ``rest_client_requests_total`` by method and its set queue's workqueue
histograms. ``apiserver_request_total`` scraped around each phase is kept as a check on the
audit log (all writers). The controller's reactions (bench/sets/_reaction.py): from each
event a set's controller waits for (the set written, a pod Ready, a pod gone) to its next
action on the set's pods (a pod created or deleted), as the benchmark's own pod watch sees
both - per phase the median, 90th percentile and count; the part of each rollout step that
is the controller's, where the rest is the scheduler's and kwok's.

Client limits: ``20:30`` is QPS 20 / burst 30, kube-controller-manager's default, on both
sides; ``unthrottled`` is QPS 10000 / burst 10000 for KCM and ``--kube-api-qps=0`` (no
limiter) for kcontrol-manager. Issue 36's targets are for equal limits: time <= 1.0x KCM's,
CPU <= 1.0x, writes <= 1.0x, peak RSS <= 0.7x.

Caveats: the machine has 2 cores shared by etcd, kube-apiserver, kube-scheduler, kwok, the
cluster's KCM, the controller under test, this script and other people's work - wall time
contends most, CPU-seconds are steadier; the 1-minute load average at each run's start is
recorded. The StatefulSet create and re-template are paced by kwok's ready delay (one pod at
a time per set, ``OrderedReady``), so their times say more about the controller's reaction
time than about its throughput, and the reactions table gives that time on its own.

Usage (from the repository root)::

    .venv/bin/python -m bench.sets --sizes sts=50x5,ds=5x50 --qps 20:30,unthrottled --runs 2 \\
        --out bench/results/tables/sets.md --json bench/results/sets.json \\
        --plot bench/results/plots/sets.png

``--dump FILE`` writes the raw runs after each run and ``--merge FILE`` adds earlier dumps
(``--runs 0`` renders them only); ``--keep-logs`` keeps the cluster's directory (component
logs, each controller's log, the audit log); ``--profile DIR`` records py-spy's stacks of
each kcontrol run (not for quoting).
"""

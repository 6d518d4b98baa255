"""Jobs benchmark (issue 21): kcontrol-manager's job controller side by side with
kube-controller-manager's, on the same kwok cluster, at equal client limits.

Workload: for each size ``NxMxP`` in ``--sizes``, N NonIndexed Jobs of M completions with
parallelism P; every pod runs ``sh -c "sleep 1; exit 0"``, which kwok plays as a container
that ends with exit code 0 one second after it started (``--pod-seconds``; the emulation in
kcontrol.envtest.cluster._kwok_job), so each Job needs ``ceil(M/P)`` waves of pods.

For each size, and each pod timing in ``--pod-ready-delay`` (comma-separated seconds from a
pod's start to Ready: ``1,0`` measures pods Ready 1 s after they start and at once, as a
cluster made by kwokctl has them - issue 37), one cluster is started
(kcontrol.envtest.cluster: etcd, kube-apiserver with an audit log, kube-scheduler, kwok with
``ceil(N*M/110) + 1`` nodes and pods Ready that many seconds after they start, and the
cluster's own kube-controller-manager with
``--controllers=*,-deployment-controller,-replicaset-controller,-job-controller``: its garbage
collector, namespace and service-account controllers keep running, its job controller does
not). After one unrecorded warm-up round (``min(N, 5)xMxP``) with each side, for each client
limit in ``--qps``, ``--runs`` runs, each measuring both sides one after the other on the same
apiserver, KCM first in even runs and kcontrol first in odd ones:

1. a fresh namespace (its ``default`` ServiceAccount waited for);
2. the controller under test started as a process of its own, with only its job controller,
   both built by bench/rollout.py's ``ControllerProcess``:

   - ``kcm``: ``kube-controller-manager --controllers=job-controller --leader-elect=false
     --kube-api-qps=Q --kube-api-burst=B`` (the cluster's binary, v1.36.3; ready when
     ``/healthz`` answers);
   - ``kcontrol``: ``kcontrol-manager --controllers=job-controller --leader-elect=false
     --kube-api-qps=Q --kube-api-burst=B --secure-port=0 --metrics-port=P`` (ready when
     ``/readyz`` answers: caches synced);

   both at their default ``--concurrent-job-syncs`` (5), then 2 idle seconds; its CPU so
   far is ``start CPU``;
3. the N Jobs are POSTed, 16 at a time, by the benchmark's own unthrottled client; the run
   lasts until every Job has a ``Complete`` (or ``Failed``) condition, seen through a Job
   informer in the benchmark checked every 0.1 s, then until the controller has sent no
   write for 2 s (its ``Completed`` events and last status updates trail);
4. the controller's peak RSS read, the controller stopped (SIGTERM), the namespace deleted
   and waited for until gone.

Measured per run: ``wall``, from just before the first POST until every Job was seen
finished; ``p50``, the median Job's finish time from the same start; the controller
process's CPU-seconds (user + sys of every thread, ``/proc/<pid>/stat``) over the run, its
quiet tail included, and ``whole-run`` from its exec to the same end (start-up, cache sync,
the idle seconds before the first POST and the run: what a CPU counter outside the process
sees; runs from before 2026-11-29 did not record it, and the tables then give ``start CPU``
+ run CPU, which leaves out the idle controller while the benchmark's own Job informer syncs
between the two); kube-apiserver + etcd CPU-seconds over the same window; peak RSS
(``VmHWM``, start-up included); and the controller's API writes from the audit log, by user
agent (bench/jobs/_audit.py): pods created, pods' finalizers removed, Job status updates,
events - quoted per Job (the run's writes / N). ``apiserver_request_total`` scraped before and
after is kept as a check on the audit log (all writers). Every Job's ``succeeded`` is
checked to be M (a note says otherwise).

A cell is a size, a client limit and a pod timing; the tables name the timing when some run's
is not 1 s (runs from before it was a cell are 1 s).

Client limits: ``20:30`` is QPS 20 / burst 30, kube-controller-manager's default, on both
sides (each controller has its own client and token bucket in both managers);
``unthrottled`` is QPS 10000 / burst 10000 for KCM and ``--kube-api-qps=0`` (no limiter) for
kcontrol-manager. Issue 21's targets are for equal limits: time <= 1.05x KCM's, writes <=
KCM's, CPU <= 1.5x, RSS <= 1.5x.

Caveats: the machine has 2 cores shared by etcd, kube-apiserver, kube-scheduler, kwok, the
cluster's KCM, the controller under test, this script and other people's work - wall time
contends most, CPU-seconds are steadier; the 1-minute load average at each run's start is
recorded. KCM is Go and its start-up is cheaper; start-up is reported apart.

Usage (from the repository root)::

    .venv/bin/python -m bench.jobs --sizes 20x10x5,100x4x2 --qps 20:30,unthrottled --runs 3 \\
        --pod-ready-delay 1,0 --out bench/results/tables/jobs.md --json bench/results/jobs.json

``--dump FILE`` writes the raw runs after each run and ``--merge FILE`` adds earlier dumps or
results files (``--runs 0`` renders them only); ``--keep-logs`` keeps the cluster's directory (component
logs, each controller's log, the audit log).
"""

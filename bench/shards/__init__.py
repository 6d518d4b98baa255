"""Sharding benchmark and proof (issue 24): kcontrol-manager's Deployment and ReplicaSet
controllers over ``R`` replicas sharing ``S`` shards of the namespaces (``--shards``), on a
kwok cluster, with the API server filtering by shard (``--feature-gates=ShardedListAndWatch``)
or not.

One cluster per ``--gate`` mode (kcontrol.envtest.cluster: etcd, kube-apiserver auditing
every write of pods, ReplicaSets and Deployments and the Leases' bodies, kube-scheduler,
kube-controller-manager without its deployment and replicaset controllers, kwok nodes
enough for twice the pods, Ready ``--pod-ready-delay`` after start). Then, per
configuration ``RxS`` of ``--configs`` (``x`` marks the faults, e.g. ``3x6!``):

1. ``--namespaces`` fresh namespaces, ``s000-<tag>``, ``s001-<tag>``, ... (the number first:
   FNV-1a hardly mixes a name's last bytes into the top bits the shard ranges cut, so
   ``<tag>-000`` ... ``<tag>-199`` would all fall into one shard), their ServiceAccounts
   waited for;
2. ``R`` processes ``kcontrol-manager --controllers=deployment-controller,replicaset-controller
   --shards=S --kube-api-qps=0`` electing in kube-system (Lease ``bench-shards``), ready once
   each answers ``/readyz`` and every shard is held;
3. **create**: ``--deployments`` Deployments (``--replicas`` each), spread evenly over the
   namespaces, POSTed 16 at a time, until all are complete;
4. **update**: every template changed, until all are complete again. With faults (``!``):
   once the audit log shows a tenth of the new ReplicaSets, the holder of shard 0 gets
   SIGKILL and the holder of shard 1 SIGSTOP; the phase goes on until every rollout is
   complete; the stopped one is resumed once another replica took its shards and must exit
   1 (its member Lease lost);
5. per replica: CPU-seconds per phase (``/proc/<pid>/stat``), peak RSS (``VmHWM``), the
   objects its informers cache and the watch events they received
   (``kcontrol_informer_cached_objects``, ``kcontrol_informer_watch_events_total``), read
   before it stops;
6. the audit check: every write of a replica to a namespace's pods, ReplicaSets or
   Deployments was received while the latest write of that namespace's shard Lease (for
   ``S = 1``, the single Lease) was the replica's own, naming itself, less than a lease
   duration before; and nothing was done twice: one ReplicaSet created per Deployment and
   revision, ``--replicas`` pods per ReplicaSet, no ReplicaSet deleted;
7. ``--restart`` (after the first configuration's update, on its Deployments): 3 replicas
   with ``--shards=3`` are started next to the single leader, the single leader stopped, then
   a single leader started next to the 3 and the 3 stopped - the pods' UIDs before and after
   must be the same and no pod or ReplicaSet written meanwhile.

The machine has 2 cores shared by everything: wall times with more replicas measure
contention as much as sharding; CPU-seconds per replica are the figure that carries over.
"""

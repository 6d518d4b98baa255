"""Operator benchmark (issue 19, section 3): the same Website operator written with kcontrol
(examples/website) and with kopf (bench/operator/kopf_website.py), side by side on envtest,
both at their defaults.

The operator, identical on both sides: for each Website ``<name>`` (examples/website/crd.yaml;
``spec.image``, ``spec.replicas`` defaulting to 1) a Deployment ``<name>`` (labels
``app.kubernetes.io/name: <name>`` and ``app.kubernetes.io/managed-by: website-operator``,
``spec.replicas``, selector and template labels ``{app.kubernetes.io/name: <name>}``, one
container ``web`` with the image and containerPort 80) and a Service ``<name>`` (that
selector, ports ``[{name: http, port: 80, targetPort: 80}]``), both controlled by the Website
(ownerReference); status ``observedGeneration``, ``readyReplicas`` (the Deployment's, 0 when
absent), ``phase`` (``Ready`` once readyReplicas >= spec.replicas, else ``Progressing``) and a
``Ready`` condition (``True``/``Available`` or ``False``/``Progressing``; its
lastTransitionTime kept unless its status changes). A changed spec updates the Deployment, a
Deployment's status its Website's, and a deleted Deployment or Service is created again.

Each run (``--runs`` per size, the implementations alternating) gets a fresh control plane
(etcd + kube-apiserver, kcontrol.envtest) whose apiserver writes an audit log; the
CRD is installed and established first, then the operator is started as its own process
under a user of its own (``alice``, bound to cluster-admin), with only a kubeconfig:

- ``kcontrol``: ``python -m examples.website --kubeconfig PATH`` (``_operators.KCONTROL_COMMAND``);
- ``kopf``: ``kopf run --standalone --all-namespaces bench/operator/kopf_website.py`` with
  ``$KUBECONFIG`` (``--standalone``: no peering, which would need kopf's peering CRDs).

It is up once the audit log shows its watches on Websites, Deployments and Services
(``ready``, seconds from the process start); after 2 more idle seconds its CPU so far is its
``start CPU``. Then four phases, each started by the benchmark's own unthrottled client
(16 requests in flight) and timed from its first write until every Website has converged,
as seen every 0.1 s through the benchmark's informers (bench/operator/_converge.py: the
Deployment and Service exist as above, controlled by the Website, and its status agrees
with its generation, spec and Deployment):

1. ``create``: N Websites;
2. ``update``: every Website's image changed (a merge patch of ``spec.image``);
3. ``ready``: every Deployment's status patched to say its replicas are ready (what
   kube-controller-manager would write; envtest runs no controllers), so every Website must
   turn ``Ready``;
4. ``recreate``: every Deployment and Service deleted, so each must be created again (and
   every Website turn back to ``Progressing``: the new Deployment has no ready replicas).

After convergence each phase lasts until the operator has written nothing for 2 s (``lag``:
how long after convergence its last write came), so what it writes late is counted in the
phase it belongs to. Per phase: wall seconds; ``p50``, the median Website's own time; the
operator's CPU-seconds (user + sys of every thread, ``/proc/<pid>/stat``), its quiet tail
included; kube-apiserver + etcd CPU-seconds; and the operator's API writes - every
create/update/patch/delete its user sent, from the audit log, whichever client inside it
sent them (kopf's own session, the ``kubernetes`` client the handlers call, events
included); non-2xx answers count and are listed apart. Lines: non-blank, non-comment lines
of each operator's Python source, docstrings counted as comments (bench/operator/_lines.py;
examples/website without its tests).

Caveats: the machine has 2 cores, shared by etcd, kube-apiserver, the operator, this script
and other people's work - wall time contends most, CPU-seconds are steadier; the load
average at each run's start is recorded. The kopf side's CPU includes the official
``kubernetes`` client's (pydantic models since v36) - what a kopf user following kopf's
walkthrough runs.

Usage (from the repository root)::

    .venv/bin/python -m bench.operator --websites 50,500 --runs 3 \\
        --out bench/results/tables/operator.md --json bench/results/operator.json

``--implementations kopf`` measures one side only; ``--dump FILE`` writes the raw runs after
each run and ``--merge FILE`` adds earlier dumps (``--runs 0`` renders them only).
"""

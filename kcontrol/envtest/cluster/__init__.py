"""A whole Kubernetes cluster on loopback for controller tests: the control plane plus
kube-scheduler, kube-controller-manager and kwok's fake nodes.

::

    async with Cluster(nodes=3) as cluster:
        cluster.kubectl("get", "nodes")              # kwok nodes, Ready
        await cluster.stop_component(KUBE_SCHEDULER)  # pods stay Pending
        await cluster.start_component(KUBE_SCHEDULER)

What runs, all built by ``hack/build-k8s.sh cluster`` from the same Kubernetes release:

- etcd and kube-apiserver as :class:`~kcontrol.envtest.ControlPlane` starts them, with
  the ServiceAccount admission plugin on (kube-controller-manager creates each namespace's
  ``default`` ServiceAccount, as in any cluster);
- kube-scheduler, binding pods to nodes;
- kube-controller-manager with ``--controllers`` :data:`WITHOUT_WORKLOAD_CONTROLLERS` by
  default (``*,-deployment-controller,-replicaset-controller``: the garbage collector,
  namespace, service-account and every other controller keep running, the two kcontrol
  replaces do not); :data:`ALL_CONTROLLERS` runs KCM's own, for comparisons and takeovers, and
  :meth:`Cluster.set_controller_manager_controllers` switches on a running cluster;
- kwok (sigs.k8s.io/kwok) playing kubelet for fake nodes: pods go Pending -> Running -> Ready
  after ``pod_ready_delay``, or fail, never get ready or crash-loop as their labels ask
  (the ``kwok.kcontrol.io/...`` labels and annotations below: :data:`BEHAVIOR_LABEL` and
  the ``*_DELAY_ANNOTATION`` names).

kwok runs no containers, so a Job's container is emulated from the pod spec, for pods with
``restartPolicy`` ``Never`` or ``OnFailure`` and no behaviour label (the full grammar is in
:mod:`kcontrol.envtest.cluster._kwok_job`). The first container's ``command`` + ``args`` (a shell's
``-c`` script split at ``;``, newlines and ``&&``) is read in order:

- ``exit N`` ends with code ``N``; ``false`` / ``/bin/false`` with 1;
- ``sleep infinity`` (and the ``pause`` image) keeps the container running; ``sleep N[smhd]``
  adds to its run time;
- ``if [ "$JOB_COMPLETION_INDEX" = "K" ]; then ...; [else ...;] fi`` (also ``==``, ``!=``,
  ``-eq``, ``-ne``, ``[[ ]]``, ``test``) takes a branch by the pod's
  ``batch.kubernetes.io/job-completion-index`` annotation (``$JOB_COMPLETION_INDEX``,
  ``${...}`` and ``$(...)`` are replaced by it anywhere);
- anything else succeeds; a program that ends without an ``exit`` exits 0.

kwok writes the decision on the pod (``kwok.kcontrol.io/exit-code``: a number or ``none``;
``kwok.kcontrol.io/run-time``: the sleeps, when any; set either in a pod template to decide
by hand). After the run time (default 1 s) from Running: exit 0 -> pod ``Succeeded``,
container ``terminated`` with exit code 0, reason ``Completed``; otherwise with
``restartPolicy: Never`` -> pod ``Failed``, the container's ``terminated.exitCode`` is the code,
reason ``Error``; with ``OnFailure`` -> the container restarts (``restartCount`` + 1,
``lastState.terminated`` with the code), the pod stays ``Running``, again after each run time.
A deleted Job pod that still has finalizers is killed (``Failed``, exit code 137) after its
delete delay. ``restartPolicy: Always`` pods are played as before, whatever their command.

Every component runs in its own session with its log in :attr:`Cluster.directory`, managed
without an event loop (as the control plane is), so one cluster can serve many tests.

Pods choose how kwok plays them with the label :data:`BEHAVIOR_LABEL` (:data:`BEHAVIOR_FAIL`,
:data:`BEHAVIOR_NEVER_READY`, :data:`BEHAVIOR_RESTART`) and the ``*_DELAY_ANNOTATION``
annotations; :data:`EXIT_CODE_ANNOTATION` and :data:`RUN_TIME_ANNOTATION` hold what kwok decided
a Job pod's container does (or set it by hand).

From the command line, ``python -m kcontrol.envtest.cluster [--crds PATH]... [--] COMMAND
ARGS...`` runs one command against a fresh cluster, as ``python -m kcontrol.envtest`` does
against a control plane.
"""

from kcontrol.envtest.cluster._cluster import (
    ALL_CONTROLLERS,
    COMPONENTS,
    KUBE_CONTROLLER_MANAGER,
    KUBE_SCHEDULER,
    KWOK,
    WITHOUT_WORKLOAD_CONTROLLERS,
    Cluster,
    main,
)
from kcontrol.envtest.cluster._kwok import (
    BEHAVIOR_FAIL,
    BEHAVIOR_LABEL,
    BEHAVIOR_NEVER_READY,
    BEHAVIOR_RESTART,
    DELETE_DELAY_ANNOTATION,
    EXIT_CODE_ANNOTATION,
    FAIL_DELAY_ANNOTATION,
    READY_DELAY_ANNOTATION,
    RESTART_DELAY_ANNOTATION,
    RUN_TIME_ANNOTATION,
)

__all__ = [
    "ALL_CONTROLLERS",
    "BEHAVIOR_FAIL",
    "BEHAVIOR_LABEL",
    "BEHAVIOR_NEVER_READY",
    "BEHAVIOR_RESTART",
    "COMPONENTS",
    "DELETE_DELAY_ANNOTATION",
    "EXIT_CODE_ANNOTATION",
    "FAIL_DELAY_ANNOTATION",
    "KUBE_CONTROLLER_MANAGER",
    "KUBE_SCHEDULER",
    "KWOK",
    "READY_DELAY_ANNOTATION",
    "RESTART_DELAY_ANNOTATION",
    "RUN_TIME_ANNOTATION",
    "WITHOUT_WORKLOAD_CONTROLLERS",
    "Cluster",
    "main",
]

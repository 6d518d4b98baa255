"""A real Kubernetes control plane on loopback: etcd plus kube-apiserver (controller-runtime's
``pkg/envtest``), for integration tests and for anything else that needs a cluster for a while.

::

    async with ControlPlane(crds=["config/crd"]) as cp:   # CRDs installed and served
        cfg = await cp.kube_configuration()          # kubernetes_asyncio Configuration
        subprocess.run([cp.binary("kubectl"), "--kubeconfig", cp.kubeconfig_path, "get", "ns"])
        await cp.install_crds([{"apiVersion": "apiextensions.k8s.io/v1", ...}])

The binaries (``etcd``, ``kube-apiserver``, ``kubectl``) are looked up in ``$KCONTROL_ASSETS``,
then ``$KUBEBUILDER_ASSETS`` (controller-runtime's convention), then the per-version cache that
``hack/build-k8s.sh`` fills (``~/.cache/kcontrol/k8s/<version>/``); :func:`find_binary` finds
one, or raises :class:`ControlPlaneError` saying how to build it.

What it starts: etcd with ``--unsafe-no-fsync`` and kube-apiserver with a throw-away CA and
serving certificate, service-account keys, RBAC authorization, and a static token file holding
an administrator (``system:masters``) and unprivileged users for RBAC tests (:data:`USERS`).
Processes run in their own session; they are managed with plain :mod:`subprocess`, so a control
plane started in one event loop can be stopped, or its apiserver restarted, from another (pytest
gives each test its own loop). On exit both processes are stopped and the temp dir removed.

CustomResourceDefinitions (controller-runtime envtest's ``CRDInstallOptions``): ``crds`` -
files (YAML, several documents per file are fine, or JSON), directories (every ``.yaml``,
``.yml`` and ``.json`` file in them) or dicts - are read when the plane is built (a missing
path fails at once) and installed when it starts; :meth:`ControlPlane.install_crds` installs
more on a running plane. Installing creates each CRD or updates the one already there, then
waits until each is ``Established`` and every served version answers a LIST, so a controller
started next finds its resources; :class:`ControlPlaneError` names the CRD that was not ready
in time. :meth:`ControlPlane.uninstall_crds` deletes them and waits until they are gone.
:func:`load_crds` reads sources as the plane does and :func:`served_versions` lists what a CRD
serves; the fake client (:class:`kcontrol.testing.fake.FakeClient`) serves CRDs through them.

From the command line, the control plane runs one command and stops with it::

    python -m kcontrol.envtest [--crds PATH]... [--] COMMAND ARGS...

Every ``{kubeconfig}`` in the arguments is replaced by the path of an administrator's
kubeconfig, which is also ``$KUBECONFIG`` in the command's environment; the exit code is the
command's. For example ``python -m kcontrol.envtest --crds config/crd -- pytest tests/e2e``
runs a test suite against a fresh apiserver with the project's CRDs, and
``python -m kcontrol.envtest -- kubectl --kubeconfig {kubeconfig} get ns`` a single command.
Without a command it serves until interrupted (Ctrl-C), printing where. SIGINT and SIGTERM
are passed on to the command. :mod:`kcontrol.envtest.cluster` is a whole cluster on top
(kube-scheduler, kube-controller-manager, kwok nodes) and takes the same arguments.

Needs the ``testing`` extra (aiohttp for the readiness probes, kubernetes-asyncio for
:meth:`ControlPlane.kube_configuration`).
"""

from kcontrol.envtest._command import main, run_command
from kcontrol.envtest._controlplane import ADMIN, USERS, ControlPlane
from kcontrol.envtest._crds import CRDSource, ServedVersion, load_crds, served_versions
from kcontrol.envtest._process import K8S_VERSION, ControlPlaneError, find_binary

__all__ = [
    "ADMIN",
    "K8S_VERSION",
    "USERS",
    "CRDSource",
    "ControlPlane",
    "ControlPlaneError",
    "ServedVersion",
    "find_binary",
    "load_crds",
    "main",
    "run_command",
    "served_versions",
]

"""``python -m kcontrol.rollout.local [--no-update] [-- KCONTROL-MANAGER FLAGS...]``: what
``make run`` runs - kcontrol-manager on ``$KUBECONFIG``'s cluster or on a local kwok cluster,
an example Deployment, and its rollout live (see :mod:`kcontrol.rollout._local`)."""

import sys

from kcontrol.rollout._local import LocalOptions, main, run_local

__all__ = ["LocalOptions", "main", "run_local"]

if __name__ == "__main__":
    sys.exit(main())

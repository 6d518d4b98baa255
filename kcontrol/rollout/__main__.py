"""``python -m kcontrol.rollout NAMESPACE/NAME [--kubeconfig PATH] [--once]``."""

import sys

from kcontrol.rollout._cli import main

sys.exit(main())

"""``python -m kcontrol.envtest.cluster [--crds PATH]... [--] COMMAND ARGS...`` (see
:mod:`kcontrol.envtest.cluster`)."""

from kcontrol.envtest.cluster._cluster import main

raise SystemExit(main())

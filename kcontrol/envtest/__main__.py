"""``python -m kcontrol.envtest [--crds PATH]... [--] COMMAND ARGS...`` (see
:mod:`kcontrol.envtest`)."""

from kcontrol.envtest._command import main

raise SystemExit(main())

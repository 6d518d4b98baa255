"""``python -m examples.website [flags]``: run the Website operator until SIGTERM/SIGINT."""

import sys

from examples.website import manager

sys.exit(manager.main())

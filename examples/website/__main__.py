"""``python -m examples.website [flags]``: run the Website operator, its webhooks included,
until SIGTERM/SIGINT."""

import sys

import examples.website.webhooks  # noqa: F401 - adds the webhooks to the manager
from examples.website import manager

sys.exit(manager.main())

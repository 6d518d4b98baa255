"""The two webhook servers under test: how each is started and where its source is.

Both run as processes of their own with the administrator's kubeconfig (``{kubeconfig}`` in
a command is replaced by its path, which is also in ``$KUBECONFIG``), from the repository
root, in managed mode - each applies its own webhook configurations once it listens:

- ``kcontrol``: the manager's flags ``--webhook-install-url=https://127.0.0.1:{port}`` and
  ``--webhook-port=0`` (a free port, where kcontrol's default is 9443 - other work on this
  machine may hold it; kopf picks a free port by default);
- ``kopf``: ``kopf run --standalone --all-namespaces`` (as bench/operator runs it), its
  server and ``settings.admission.managed`` set in the file's startup handler, the
  certificate pair in ``$WEBHOOK_CERT_FILE`` / ``$WEBHOOK_KEY_FILE``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["IMPLEMENTATIONS", "KCONTROL", "KOPF", "Side"]

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent

KCONTROL = "kcontrol"
KOPF = "kopf"


@dataclass(frozen=True)
class Side:
    name: str
    command: list[str]
    source: Path  # what the lines count
    needs_pair: bool = False  # give it a certificate pair through the environment


IMPLEMENTATIONS = {
    KCONTROL: Side(
        KCONTROL,
        [
            sys.executable,
            "-m",
            "bench.webhooks.kcontrol_webhooks",
            "--kubeconfig",
            "{kubeconfig}",
            "--webhook-port=0",
            "--webhook-install-url=https://127.0.0.1:{port}",
        ],
        HERE / "kcontrol_webhooks.py",
    ),
    KOPF: Side(
        KOPF,
        [
            str(BIN / "kopf"),
            "run",
            "--standalone",
            "--all-namespaces",
            str(HERE / "kopf_webhooks.py"),
        ],
        HERE / "kopf_webhooks.py",
        needs_pair=True,
    ),
}

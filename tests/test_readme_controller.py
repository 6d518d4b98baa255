"""The README's "A controller in a page" runs as printed: its code block is taken from the
README, executed against the real apiserver (``$KUBECONFIG``, as ``load_config()`` reads it),
and must annotate a labelled ConfigMap; cancelling ``main()`` stops everything it started."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from kcontrol.client import CONFIGMAPS, ApiClient, load_config
from kcontrol.testing.envtest import ControlPlane
from tests.integration.helpers import poll

README = Path(__file__).resolve().parents[1] / "README.md"
SECTION = "## A controller in a page"

pytestmark = pytest.mark.integration


def controller_in_a_page() -> str:
    """The first Python block after the section heading, without its last line
    (``asyncio.run(main())``, replaced by the test's own loop)."""
    text = README.read_text()
    start = text.index(SECTION)
    block = re.search(r"```python\n(.*?)```", text[start:], flags=re.DOTALL)
    assert block is not None, f"no python block under {SECTION!r}"
    lines = block.group(1).rstrip().splitlines()
    assert lines[-1] == "asyncio.run(main())", lines[-1]
    return "\n".join(lines[:-1]) + "\n"


async def test_the_readme_controller_annotates_a_configmap(
    control_plane: ControlPlane, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig_path))
    scope: dict[str, Any] = {"__name__": "readme_controller"}
    exec(compile(controller_in_a_page(), str(README), "exec"), scope)
    main: Callable[[], Coroutine[Any, Any, None]] = scope["main"]

    config = await load_config(kubeconfig=str(control_plane.kubeconfig_path))
    async with ApiClient(config, qps=0) as client:
        for name, labels in (("demo", {"app": "demo"}), ("other", {"app": "other"})):
            body = {"metadata": {"name": name, "namespace": namespace, "labels": labels}}
            await client.create(CONFIGMAPS, body)
        task = asyncio.create_task(main())
        try:

            async def annotated() -> bool:
                configmap = await client.get(CONFIGMAPS, "demo", namespace=namespace)
                return (configmap["metadata"].get("annotations") or {}).get("checked") == "yes"

            await poll(annotated, within=30, message="README controller annotated the ConfigMap")
            other = await client.get(CONFIGMAPS, "other", namespace=namespace)
            assert "checked" not in (other["metadata"].get("annotations") or {})
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

"""The guide "A controller in a page" runs as printed: its code block is taken from the
documentation page (docs/guides/controller-in-a-page.md), executed against the real apiserver
(``$KUBECONFIG``, as ``load_config()`` reads it), and must annotate a labelled ConfigMap;
cancelling ``main()`` stops everything it started."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from kcontrol.client import CONFIGMAPS, ApiClient, load_config
from kcontrol.envtest import ControlPlane
from tests.integration.helpers import poll

PAGE = Path(__file__).resolve().parents[1] / "docs" / "guides" / "controller-in-a-page.md"

pytestmark = pytest.mark.integration


def controller_in_a_page() -> str:
    """The page's first Python block, without its last line (``asyncio.run(main())``,
    replaced by the test's own loop)."""
    block = re.search(r"```python\n(.*?)```", PAGE.read_text(), flags=re.DOTALL)
    assert block is not None, f"no python block in {PAGE}"
    lines = block.group(1).rstrip().splitlines()
    assert lines[-1] == "asyncio.run(main())", lines[-1]
    return "\n".join(lines[:-1]) + "\n"


async def test_the_controller_in_a_page_annotates_a_configmap(
    control_plane: ControlPlane, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig_path))
    scope: dict[str, Any] = {"__name__": "controller_in_a_page"}
    exec(compile(controller_in_a_page(), str(PAGE), "exec"), scope)
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

            await poll(annotated, within=30, message="the page's controller annotated it")
            other = await client.get(CONFIGMAPS, "other", namespace=namespace)
            assert "checked" not in (other["metadata"].get("annotations") or {})
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

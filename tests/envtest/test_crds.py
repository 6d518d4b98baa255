"""CRD installation (controller-runtime envtest's CRDInstallOptions): reading files,
directories and dicts; installing into the control plane and waiting until served; the
timeout naming the CRD; uninstalling; ``python -m kcontrol.envtest --crds``."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from kcontrol.client import CUSTOMRESOURCEDEFINITIONS, ListOptions, Object, Resource
from kcontrol.envtest import ControlPlane, ControlPlaneError, load_crds, served_versions
from kcontrol.envtest._command import parse_command_line
from kcontrol.errors import NotFound
from kcontrol.testing import FakeClient


def crd(plural: str, group: str = "crds.kcontrol.io", *, kind: str | None = None) -> Object:
    kind = kind or plural[:-1].capitalize()
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": plural[:-1], "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                },
                {
                    "name": "v1alpha1",
                    "served": False,
                    "storage": False,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                },
            ],
        },
    }


def write_yaml(path: Path, *documents: Any) -> Path:
    path.write_text(yaml.safe_dump_all(documents))
    return path


# -- reading ---------------------------------------------------------------------------------


def test_load_reads_files_directories_and_dicts(tmp_path: Path) -> None:
    directory = tmp_path / "crds"
    directory.mkdir()
    not_a_crd = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}
    write_yaml(directory / "b.yaml", crd("bees"), not_a_crd, None)
    (directory / "a.json").write_text(json.dumps(crd("ants")))
    write_yaml(directory / "c.yml", {"apiVersion": "v1", "kind": "List", "items": [crd("cats")]})
    (directory / "notes.txt").write_text("not read")
    (directory / "nested").mkdir()
    write_yaml(directory / "nested" / "d.yaml", crd("dogs"))
    single = write_yaml(tmp_path / "single.manifest", crd("eels"))

    crds = load_crds([directory, str(single), crd("fish")])

    assert [c["metadata"]["name"].split(".")[0] for c in crds] == [
        "ants",
        "bees",
        "cats",
        "eels",
        "fish",
    ]


def test_load_takes_one_source_and_keeps_the_last_of_a_name(tmp_path: Path) -> None:
    newer = crd("ants")
    newer["spec"]["names"]["shortNames"] = ["an"]
    assert load_crds(crd("ants")) == [crd("ants")]
    assert load_crds([crd("ants"), crd("bees"), newer]) == [crd("bees"), newer]
    assert load_crds(write_yaml(tmp_path / "one.yaml", crd("ants"))) == [crd("ants")]


@pytest.mark.parametrize(
    ("source", "error", "match"),
    [
        pytest.param(
            {"apiVersion": "v1", "kind": "ConfigMap"}, ValueError, "not a Custom", id="not-crd"
        ),
        pytest.param(
            {**crd("ants"), "apiVersion": "apiextensions.k8s.io/v1beta1"},
            ValueError,
            "must be apiextensions.k8s.io/v1",
            id="old-version",
        ),
        pytest.param({**crd("ants"), "metadata": {}}, ValueError, "metadata.name", id="no-name"),
        pytest.param("/no/such/crds", FileNotFoundError, "/no/such/crds", id="missing-path"),
    ],
)
def test_load_refuses(source: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        load_crds([source])


def test_load_names_a_file_that_does_not_parse(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [unclosed")
    with pytest.raises(ValueError, match=r"broken\.yaml: not valid YAML"):
        load_crds(broken)


def test_served_versions() -> None:
    cluster_scoped = crd("ants")
    cluster_scoped["spec"]["scope"] = "Cluster"
    [version] = served_versions(cluster_scoped)
    assert version.resource == Resource("crds.kcontrol.io", "v1", "ants", "Ant", namespaced=False)
    assert version.status_subresource
    assert version.schema == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


async def test_fake_client_serves_the_crds_versions() -> None:
    without_status = crd("bees")
    del without_status["spec"]["versions"][0]["subresources"]
    client = FakeClient(crds=[crd("ants"), without_status])
    ants = Resource("crds.kcontrol.io", "v1", "ants", "Ant")
    bees = Resource("crds.kcontrol.io", "v1", "bees", "Bee")
    assert client.tracker.has_status_subresource(ants)
    assert not client.tracker.has_status_subresource(bees)
    assert client.tracker.resource_for("crds.kcontrol.io/v1", "Bee") == bees
    with pytest.raises(LookupError):
        client.tracker.resource_for("crds.kcontrol.io/v1alpha1", "Ant")  # not served


def test_command_line() -> None:
    assert parse_command_line(["--crds", "a", "--crds", "b", "--", "kubectl", "--x"]) == (
        ["a", "b"],
        ["kubectl", "--x"],
    )
    assert parse_command_line(["pytest", "-k", "x"]) == ([], ["pytest", "-k", "x"])
    assert parse_command_line([]) == ([], [])


# -- installing ------------------------------------------------------------------------------


def _unique(plural: str) -> Object:
    return crd(plural, group=f"g{uuid.uuid4().hex[:8]}.kcontrol.io")


async def test_install_waits_until_served_then_uninstall_removes(
    control_plane: ControlPlane, tmp_path: Path, namespace: str
) -> None:
    ants, bees = _unique("ants"), _unique("bees")
    write_yaml(tmp_path / "ants.yaml", ants, {"apiVersion": "v1", "kind": "Namespace"})
    (tmp_path / "bees.json").write_text(json.dumps(bees))
    installed = await control_plane.install_crds(tmp_path)
    assert [c["metadata"]["name"] for c in installed] == [
        ants["metadata"]["name"],
        bees["metadata"]["name"],
    ]
    for stored in installed:
        conditions = {c["type"]: c["status"] for c in stored["status"]["conditions"]}
        assert conditions["Established"] == "True"
    [version] = served_versions(ants)
    async with control_plane.admin_client() as client:
        # served at once: no retry needed
        created = await client.create(
            version.resource,
            {"apiVersion": version.resource.api_version, "kind": "Ant", "metadata": {"name": "a"}},
            namespace=namespace,
        )
        assert created["metadata"]["uid"]

        changed = copy.deepcopy(ants)
        changed["spec"]["names"]["shortNames"] = ["an"]
        [updated] = await control_plane.install_crds(changed)  # installed again: updated
        assert updated["spec"]["names"]["shortNames"] == ["an"]

        await control_plane.uninstall_crds(tmp_path)
        for gone in (ants, bees):
            with pytest.raises(NotFound):
                await client.get(CUSTOMRESOURCEDEFINITIONS, gone["metadata"]["name"])
        with pytest.raises(NotFound):
            await client.list(version.resource, options=ListOptions(limit=1))
    await control_plane.uninstall_crds([ants])  # already gone: fine


async def test_install_timeout_names_the_crd(control_plane: ControlPlane) -> None:
    group = f"g{uuid.uuid4().hex[:8]}.kcontrol.io"
    first = crd("ants", group)
    clash = crd("bugs", group, kind="Ant")  # the kind is taken: its names are never accepted
    await control_plane.install_crds(first)
    try:
        with pytest.raises(ControlPlaneError) as raised:
            await control_plane.install_crds(clash, max_time=2)
        message = str(raised.value)
        assert f"bugs.{group} not ready within 2s" in message
        assert "Established=True" in message and "NamesAccepted=False" in message
    finally:
        await control_plane.uninstall_crds([first, clash])


def test_envtest_command_line_installs_crds_before_the_command(tmp_path: Path) -> None:
    ants = _unique("ants")
    write_yaml(tmp_path / "ants.yaml", ants)
    [version] = served_versions(ants)
    resource = version.resource
    resource_expr = (
        f"Resource({resource.group!r}, {resource.version!r}, {resource.plural!r}, "
        f"{resource.kind!r})"
    )
    check = textwrap.dedent(
        f"""
        import asyncio, sys
        from kcontrol.client import ApiClient, ListOptions, Resource, load_config

        async def main() -> None:
            async with ApiClient(await load_config(kubeconfig=sys.argv[1]), qps=0) as c:
                page = await c.list({resource_expr}, options=ListOptions(limit=1))
                print("served", page["kind"])

        asyncio.run(main())
        """
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kcontrol.envtest",
            "--crds",
            str(tmp_path),
            "--",
            sys.executable,
            "-c",
            check,
            "{kubeconfig}",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "served AntList" in done.stdout

"""Bad input at start-up, tried as a new user would against ``kcontrol-manager``: each case
gets one clear ``exiting:`` log line (or argparse's usage error) and a non-zero exit - or, where
kube-controller-manager retries, a documented retry - and never a traceback.

The table runs the real ``main()`` in a child process, as the console script does, with one
change: the start-up wait for the API server is cut from 10 s to a few seconds.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from manager_helpers import eventually, free_port, http_get

from kcontrol.client import ApiClient, ClientConfig
from kcontrol.clock import FakeClock
from kcontrol.envtest import ControlPlane
from kcontrol.envtest._pki import write_pki
from kcontrol.errors import ApiServerNotHealthy
from kcontrol.manager._apiserver import wait_for_api_server
from kcontrol.testing.faults import FaultProxy

REPO = Path(__file__).resolve().parents[2]
WAIT = 3.0  # the start-up wait for the API server in the child processes
RUNNER = """
import sys

import kcontrol.manager._apiserver as startup
from examples.configmap_annotator import SPEC
from kcontrol.manager import ControllerRegistry, main

startup.API_SERVER_WAIT_TIMEOUT = float(sys.argv[1])
sys.exit(main(sys.argv[2:], registry=ControllerRegistry([SPEC])))
"""


# -- wait_for_api_server ----------------------------------------------------------------------


@pytest.fixture
async def healthz() -> AsyncIterator[tuple[str, list[int]]]:
    """A server whose ``/healthz`` answers the statuses in the list in turn (then 200);
    ``-1`` means "never answer"."""
    answers: list[int] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        code = answers.pop(0) if answers else 200
        if code == -1:
            await asyncio.Event().wait()
        body = {"kind": "Status", "code": code, "reason": "Unauthorized" if code == 401 else ""}
        return web.json_response(body if code != 200 else "ok", status=code)

    app = web.Application()
    app.router.add_get("/healthz", handler)
    runner = web.AppRunner(app, shutdown_timeout=0.1, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}", answers
    finally:
        await runner.cleanup()


async def test_wait_returns_once_healthz_answers_ok(
    healthz: tuple[str, list[int]], caplog: pytest.LogCaptureFixture
) -> None:
    url, answers = healthz
    answers.extend([500, 500])
    caplog.set_level(logging.INFO, logger="kcontrol.manager._apiserver")
    clock = FakeClock()
    async with ApiClient(ClientConfig(host=url), qps=0, max_retries=0) as client:
        waiting = asyncio.create_task(wait_for_api_server(client, within=10, clock=clock))
        for _ in range(2):  # two failed probes, one second apart
            await _until(lambda: clock.has_waiters() or waiting.done())
            assert not waiting.done()
            clock.step(1.0)
        await asyncio.wait_for(waiting, 10)
    messages = [r.getMessage() for r in caplog.records]
    assert any(f"waiting up to 10s for the API server at {url}" in m for m in messages)
    assert sum("not healthy yet" in m for m in messages) == 1, "one line per kind of failure"


async def test_wait_gives_up_with_the_last_failure(healthz: tuple[str, list[int]]) -> None:
    url, answers = healthz
    answers.extend([500] * 3 + [401] * 10)
    clock = FakeClock()
    async with ApiClient(ClientConfig(host=url), qps=0, max_retries=0) as client:
        waiting = asyncio.create_task(
            wait_for_api_server(client, within=5, interval=1, clock=clock)
        )
        while not waiting.done():
            await _until(lambda: clock.has_waiters() or waiting.done())
            clock.step(1.0)
        with pytest.raises(ApiServerNotHealthy, match=r"within 5s: 401 Unauthorized"):
            await waiting
    assert answers == [401] * 8, "probes at 0, 1, 2, 3 and 4 s; none after the deadline"


async def test_wait_abandons_a_probe_that_gets_no_answer(healthz: tuple[str, list[int]]) -> None:
    url, answers = healthz
    answers.extend([-1] * 5)
    async with ApiClient(ClientConfig(host=url), qps=0, max_retries=0) as client:
        with pytest.raises(ApiServerNotHealthy, match="no answer in time"):
            await asyncio.wait_for(wait_for_api_server(client, within=0.5), 30)


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


# -- the table --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Env:
    """What the cases build their flags from: the control plane, a temp dir, a fault proxy
    in front of the apiserver answering 403 to ``/healthz``, and a port something else
    listens on."""

    plane: ControlPlane
    tmp: Path
    proxy: FaultProxy
    busy_port: int

    def kubeconfig(self, name: str, *, server: str | None = None, **overrides: Any) -> str:
        """A kubeconfig like the admin's, with ``overrides`` of the cluster (``server``,
        ``certificate-authority``), user (``token``) and ``current-context``."""
        admin = json.loads(self.plane.kubeconfig_path.read_text())
        cluster = admin["clusters"][0]["cluster"]
        if server is not None:
            cluster["server"] = server
        for key in ("certificate-authority",):
            if key in overrides:
                cluster[key] = overrides.pop(key)
        if "token" in overrides:
            admin["users"][0]["user"]["token"] = overrides.pop("token")
        admin.update(overrides)
        return self.write(name, json.dumps(admin))

    def write(self, name: str, text: str) -> str:
        path = self.tmp / name
        path.write_text(text)
        return str(path)


@dataclass(frozen=True)
class Case:
    argv: Callable[[Env], list[str]]
    exit_code: int
    expected: tuple[str, ...]  # fragments of the one line that says what is wrong
    waits: bool = False  # says in its log that it waits for the API server first


def _no_server(env: Env) -> str:
    text = env.plane.kubeconfig_path.read_text()
    document = json.loads(text)
    document["clusters"][0]["cluster"] = {}
    return env.write("no-server.yaml", json.dumps(document))


def _wrong_ca(env: Env) -> str:
    directory = env.tmp / "other-ca"
    directory.mkdir()
    other = write_pki(directory, ["127.0.0.1"])
    return env.kubeconfig("wrong-ca.yaml", **{"certificate-authority": str(other.ca_cert)})


def _junk_ca(env: Env) -> str:
    return env.kubeconfig("ca.yaml", **{"certificate-authority": env.write("ca.pem", "junk")})


def _taken_port(env: Env) -> list[str]:
    return [
        f"--kubeconfig={env.plane.kubeconfig_path}",
        "--bind-address=127.0.0.1",
        f"--metrics-port={env.busy_port}",
    ]


CASES = {
    "missing-kubeconfig": Case(
        lambda env: [f"--kubeconfig={env.tmp / 'missing.yaml'}"],
        1,
        ("kubeconfig", "missing.yaml does not exist"),
    ),
    "unreadable-kubeconfig": Case(  # a directory: as root, no file mode stops a read
        lambda env: [f"--kubeconfig={env.tmp}"], 1, ("cannot be read", "Is a directory")
    ),
    "malformed-kubeconfig": Case(
        lambda env: [f"--kubeconfig={env.write('malformed.yaml', '{{{')}"],
        1,
        ("malformed.yaml is not valid YAML", "line 1"),
    ),
    "kubeconfig-not-a-mapping": Case(
        lambda env: ["--kubeconfig=" + env.write("list.yaml", "- a\n- b\n")],
        1,
        ("list.yaml is not a kubeconfig",),
    ),
    "empty-kubeconfig": Case(
        lambda env: [f"--kubeconfig={env.write('empty.yaml', '')}"], 1, ("empty.yaml is empty",)
    ),
    "wrong-context": Case(
        lambda env: [f"--kubeconfig={env.kubeconfig('ctx.yaml', **{'current-context': 'nope'})}"],
        1,
        ("nope", "ctx.yaml"),
    ),
    "cluster-without-server": Case(
        lambda env: [f"--kubeconfig={_no_server(env)}"], 1, ("no-server.yaml is malformed",)
    ),
    "unreadable-ca-file": Case(
        lambda env: [f"--kubeconfig={_junk_ca(env)}"],
        1,
        ("cannot load the CA certificate", "ca.pem"),
    ),
    "expired-credentials": Case(
        lambda env: [f"--kubeconfig={env.kubeconfig('expired.yaml', token='expired-token')}"],
        1,
        ("did not answer /healthz with ok", "401 Unauthorized"),
        waits=True,
    ),
    "unreachable-server": Case(
        lambda env: [
            f"--kubeconfig={env.kubeconfig('unreachable.yaml', server='https://127.0.0.1:1')}",
            "--leader-elect=false",
        ],
        1,
        ("did not answer /healthz with ok", "127.0.0.1:1"),
        waits=True,
    ),
    "tls-mismatch": Case(
        lambda env: [f"--kubeconfig={_wrong_ca(env)}"],
        1,
        ("did not answer /healthz with ok", "certificate verify failed"),
        waits=True,
    ),
    "403-from-the-server": Case(
        lambda env: [f"--kubeconfig={env.kubeconfig('proxied.yaml', server=env.proxy.host)}"],
        1,
        ("did not answer /healthz with ok", "403 Forbidden"),
        waits=True,
    ),
    "metrics-port-taken": Case(_taken_port, 1, ("cannot serve metrics", "in use")),
    "invalid-number": Case(lambda env: ["--kube-api-qps=fast"], 2, ("invalid float value",)),
    "invalid-duration": Case(
        lambda env: ["--leader-elect-lease-duration=15"], 2, ("invalid duration",)
    ),
    "renew-deadline-above-lease": Case(
        lambda env: ["--leader-elect-lease-duration=2s", "--leader-elect-renew-deadline=3s"],
        2,
        ("lease-duration must be greater",),
    ),
    "invalid-bind-address": Case(
        lambda env: [f"--kubeconfig={env.plane.kubeconfig_path}", "--bind-address=nowhere"],
        2,
        ("--bind-address 'nowhere' is not an IP address",),
    ),
}


@pytest.fixture
async def env(control_plane: ControlPlane, tmp_path: Path) -> AsyncIterator[Env]:
    proxy = FaultProxy(
        control_plane.host, control_plane.ssl_context(), control_plane.serving_cert_pair
    )
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        async with proxy:
            proxy.inject(403, match=lambda request: request.path == "/healthz", times=10**6)
            yield Env(control_plane, tmp_path, proxy, busy.getsockname()[1])


async def run_manager(argv: list[str], tmp: Path, within: float = 60) -> tuple[int, str]:
    """Run kcontrol-manager (the runner above) with ``argv``; its status and output."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        RUNNER,
        str(WAIT),
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=str(REPO),
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp)},
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), within)
    except TimeoutError:
        process.kill()
        output, _ = await process.communicate()
        raise AssertionError(
            f"kcontrol-manager did not exit within {within}s:\n{output.decode()}"
        ) from None
    assert process.returncode is not None
    return process.returncode, output.decode(errors="replace")


def log_events(output: str) -> list[dict[str, Any]]:
    events = []
    for line in output.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
async def test_bad_start_up_input_gets_one_clear_line_and_a_non_zero_exit(
    env: Env, name: str
) -> None:
    case = CASES[name]
    argv = [*case.argv(env), "--log-format=json"]
    if not any(arg.startswith("--metrics-port") for arg in argv):
        argv.append("--metrics-port=0")
    if not any(arg.startswith("--secure-port") for arg in argv):
        argv.append("--secure-port=0")  # the secure port has its own tests
    code, output = await run_manager(argv, env.tmp)
    assert "Traceback" not in output, output
    assert code == case.exit_code, output
    if case.exit_code == 2:  # refused before anything runs, with usage help as argparse does
        lines = [line for line in output.splitlines() if line.startswith("kcontrol-manager: ")]
    else:
        events = log_events(output)
        assert not any("exception" in event or "exc_info" in event for event in events), output
        lines = [e["event"] for e in events if str(e.get("event", "")).startswith("exiting:")]
        if case.waits:
            assert any("waiting up to" in str(e.get("event")) for e in events), output
    assert len(lines) == 1, output
    for fragment in case.expected:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"


@pytest.mark.slow
async def test_readyz_is_false_while_waiting_for_the_api_server(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "unreachable.yaml"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    port = free_port()
    argv = [
        f"--kubeconfig={kubeconfig}",
        "--leader-elect=false",
        f"--metrics-port={port}",
        "--secure-port=0",
    ]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        RUNNER,
        "30",
        *argv,
        "--bind-address=127.0.0.1",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=str(REPO),
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    try:

        async def not_ready() -> str | None:
            status, body = await http_get(port, "/readyz")
            return body if status == 500 else None

        body = await eventually(not_ready, within=30, message="/readyz answering 500")
        assert "[-]api-server failed" in body
        status, _ = await http_get(port, "/livez")
        assert status == 200, "waiting is not a liveness failure"
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = await asyncio.wait_for(process.communicate(), 60)
    text = output.decode(errors="replace")
    assert "Traceback" not in text, text
    assert process.returncode == 0, text  # stopped while waiting: a clean stop


@pytest.mark.slow
async def test_forbidden_lease_is_retried_with_a_clear_line_as_kcm_does(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    """A user without RBAC for the Lease (alice): kube-controller-manager keeps trying to
    acquire and logs why; so does kcontrol-manager, until it is stopped."""
    port = free_port()
    argv = [
        f"--kubeconfig={control_plane.user_kubeconfig('alice')}",
        f"--leader-elect-resource-namespace={namespace}",
        "--leader-elect-retry-period=500ms",
        "--leader-elect-renew-deadline=1s",
        "--leader-elect-lease-duration=2s",
        f"--metrics-port={port}",
        "--secure-port=0",  # alice may not read the client CA either: not this test's point
        "--bind-address=127.0.0.1",
        "--log-format=json",
    ]
    log = tmp_path / "manager.log"
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            RUNNER,
            str(WAIT),
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            cwd=str(REPO),
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        )
    try:

        async def refused() -> list[dict[str, Any]]:
            events = log_events(log.read_text(errors="replace"))
            return [e for e in events if e.get("event") == "error retrieving lease"]

        lines = await eventually(refused, within=30, message="the refusal logged")
        assert "forbidden" in lines[0]["error"]
        assert 'User "alice" cannot get resource "leases"' in lines[0]["error"]
        status, _ = await http_get(port, "/readyz")
        assert status == 500, "not ready: not leading, caches not synced"
        assert process.returncode is None, "a refused Lease is retried, not fatal"
    finally:
        process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), 60)
    output = log.read_text(errors="replace")
    assert "Traceback" not in output, output
    assert process.returncode == 0, output

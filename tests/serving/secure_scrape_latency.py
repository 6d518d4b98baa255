"""What an authenticated scrape costs: ``python -m tests.serving.secure_scrape_latency``.

A measurement, not a test (nothing is asserted): one kcontrol-manager (no controllers, no
leader election) serving both its secure port and, for comparison, the plain-HTTP
``--metrics-port``, against a local control plane. Scrapes alternate between the two, on
kept-alive connections as Prometheus keeps them, after a warm-up that fills the review
caches; the TokenReviews and SubjectAccessReviews the manager sent during the measured
scrapes are counted from its own metrics. Prints medians and 90th percentiles in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp

from kcontrol.envtest import ControlPlane
from tests.manager.manager_helpers import free_port
from tests.serving.secure_helpers import (
    METRICS_READER,
    SecureManager,
    apply,
    binding,
    metrics_reader_role,
)


def _sum(metrics: str, name: str) -> float:
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith(name + "{")
    )


async def _timed(request: Callable[[], Awaitable[int]], samples: list[float]) -> None:
    start = time.perf_counter()
    status = await request()
    samples.append((time.perf_counter() - start) * 1000)
    if status != 200:
        raise RuntimeError(f"scrape answered {status}")


def _row(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[int(len(ordered) * 0.9) - 1]
    return f"| {name} | {statistics.median(ordered):.2f} | {p90:.2f} |"


async def measure(rounds: int) -> None:
    async with ControlPlane() as plane:
        with tempfile.TemporaryDirectory(prefix="kcontrol-latency-") as directory:
            name = f"latency-{uuid.uuid4().hex[:6]}"
            apply(
                plane,
                metrics_reader_role(),
                binding(name, METRICS_READER, [{"kind": "User", "name": "bob"}]),
            )
            plain_port = free_port()
            manager = SecureManager(plane, Path(directory), f"--metrics-port={plain_port}", "-v=0")
            try:
                await manager.wait_ready()
                await _run(manager, plain_port, plane.token("bob"), plane.token(), rounds)
            finally:
                manager.stop()


async def _run(
    manager: SecureManager, plain_port: int, token: str, admin: str, rounds: int
) -> None:
    context = manager.context()
    secure = f"https://127.0.0.1:{manager.port}"
    plain = f"http://127.0.0.1:{plain_port}"
    bearer = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession() as session:

        def get(url: str, headers: dict[str, str] | None = None) -> Callable[[], Awaitable[int]]:
            async def request() -> int:
                async with session.get(url, headers=headers or {}, ssl=context) as response:
                    await response.read()
                    return response.status

            return request

        async def fresh_connection() -> int:  # a TLS handshake per scrape
            async with (
                aiohttp.ClientSession() as own,
                own.get(f"{secure}/metrics", headers=bearer, ssl=context) as response,
            ):
                await response.read()
                return response.status

        async def reviews() -> float:
            async with session.get(
                f"{secure}/metrics", headers={"Authorization": f"Bearer {admin}"}, ssl=context
            ) as response:
                text = await response.text()
            return _sum(text, "apiserver_delegated_authn_request_total") + _sum(
                text, "apiserver_delegated_authz_request_total"
            )

        cases: dict[str, Callable[[], Awaitable[int]]] = {
            "plain HTTP /metrics (--metrics-port, no authentication)": get(f"{plain}/metrics"),
            "HTTPS /metrics, bearer token, reviews cached": get(f"{secure}/metrics", bearer),
            "HTTPS /metrics, new connection per scrape": fresh_connection,
            "plain HTTP /healthz": get(f"{plain}/healthz"),
            "HTTPS /healthz (always allowed: TLS only)": get(f"{secure}/healthz"),
        }
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for request in cases.values():  # warm-up: connections open, answers cached
            for _ in range(5):
                await _timed(request, [])
        await reviews()
        before = await reviews()
        for _ in range(rounds):
            for case, request in cases.items():
                await _timed(request, samples[case])
        sent = await reviews() - before
    print(f"{rounds} scrapes of each, alternating; {sys.version.split()[0]}")
    print("| request | median ms | p90 ms |")
    print("|---|--:|--:|")
    for case, values in samples.items():
        print(_row(case, values))
    plain_median = statistics.median(samples[next(iter(cases))])
    secure_median = statistics.median(samples["HTTPS /metrics, bearer token, reviews cached"])
    print(
        f"added by HTTPS + cached authentication and authorization: "
        f"{secure_median - plain_median:.2f} ms per scrape (median)"
    )
    print(f"reviews sent during the measured scrapes: {max(sent, 0):g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    asyncio.run(measure(parser.parse_args().rounds))


if __name__ == "__main__":
    main()

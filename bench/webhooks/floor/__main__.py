"""``python -m bench.webhooks.floor``: see the package docstring."""

from __future__ import annotations

import argparse
import asyncio
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
KEEPALIVE_CONCURRENCY = 25
"""client-go's idle connections per host: what a kept-alive burst reuses."""


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _serve() -> None:
    """The server process: print the port, then the CPU-seconds so far for each line read."""
    from bench.webhooks import kcontrol_webhooks as hooks  # noqa: PLC0415
    from kcontrol.webhook import AdmissionWebhook, WebhookOptions, WebhookServer  # noqa: PLC0415

    server = WebhookServer(WebhookOptions(port=0, bind_address="127.0.0.1", hosts=("127.0.0.1",)))
    server.register("/mutate", AdmissionWebhook(default=hooks.default))
    server.register("/validate", AdmissionWebhook(validate=hooks.validate))
    task = asyncio.create_task(server.run())
    await server.wait_ready()
    print(server.port, flush=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while await reader.readline():
        print(f"{_cpu():.6f}", flush=True)
    task.cancel()


class _Server:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.webhooks.floor", "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())

    def cpu(self) -> float:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


def _call(client: Path, url: str, concurrency: int, rounds: int) -> None:
    out = subprocess.run(
        [str(client), url, str(concurrency), str(rounds), str(HERE / "review.json")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    if " 0 errors" not in out.splitlines()[-1]:
        raise SystemExit(f"calls failed: {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--burst", type=int, default=200, help="calls at once, new connections")
    parser.add_argument("--rounds", type=int, default=5, help="bursts of new connections")
    parser.add_argument("--keepalive-rounds", type=int, default=80)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        import uvloop  # noqa: PLC0415

        uvloop.run(_serve())
        return
    go = shutil.which("go")
    if go is None:
        raise SystemExit("needs Go on PATH to build the client")
    with tempfile.TemporaryDirectory() as tmp:
        client = Path(tmp) / "client"
        subprocess.run([go, "build", "-o", str(client), "."], cwd=HERE, check=True)
        server = _Server()
        try:
            base = f"https://127.0.0.1:{server.port}"
            _call(client, f"{base}/mutate", KEEPALIVE_CONCURRENCY, 2)  # warm up
            print(
                "| webhook | us per call, new connection | us per call, kept alive | us per handshake |"
            )
            print("|---|--:|--:|--:|")
            for path in ("mutate", "validate"):
                start = server.cpu()
                for _ in range(args.rounds):
                    _call(client, f"{base}/{path}", args.burst, 1)
                fresh = (server.cpu() - start) / (args.rounds * args.burst)
                start = server.cpu()
                _call(client, f"{base}/{path}", KEEPALIVE_CONCURRENCY, args.keepalive_rounds)
                kept = (server.cpu() - start) / (KEEPALIVE_CONCURRENCY * args.keepalive_rounds)
                print(
                    f"| {path} | {fresh * 1e6:.0f} | {kept * 1e6:.0f} | {(fresh - kept) * 1e6:.0f} |"
                )
        finally:
            server.stop()


if __name__ == "__main__":
    main()

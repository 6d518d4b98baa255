"""Build the Go reference programs of bench/reference/ (client-go itself) for the benchmarks.

``build_reference("workqueue")`` compiles ``bench/reference/workqueue`` into
``~/.cache/kcontrol/bench/<client-go version>/workqueue`` and returns that path. The binary is
reused while it is newer than the program's sources and the module files; otherwise it is
rebuilt. The module proxy is used as usual; the checksum database is not (``GOSUMDB=off``),
and ``-mod=mod`` lets ``go`` complete go.sum if a new program needs another module.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

__all__ = ["REFERENCE_DIR", "build_reference", "client_go_version"]

REFERENCE_DIR = Path(__file__).resolve().parent / "reference"
CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kcontrol" / "bench"


def client_go_version() -> str:
    """The k8s.io/client-go version bench/reference/go.mod requires (e.g. ``v0.36.3``)."""
    go_mod = (REFERENCE_DIR / "go.mod").read_text()
    match = re.search(r"^\s*(?:require\s+)?k8s\.io/client-go\s+(v\S+)", go_mod, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"{REFERENCE_DIR / 'go.mod'} does not require k8s.io/client-go")
    return match.group(1)


def _newest_source(program_dir: Path) -> float:
    sources = [p for p in program_dir.rglob("*") if p.is_file()]
    sources += [REFERENCE_DIR / "go.mod", REFERENCE_DIR / "go.sum"]
    return max(p.stat().st_mtime for p in sources if p.exists())


def _go() -> str:
    go = shutil.which("go") or (
        "/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None
    )
    if go is None:
        raise RuntimeError("the Go toolchain ('go') is needed to build the reference programs")
    return go


def build_reference(name: str) -> Path:
    """Build (if needed) the reference program ``bench/reference/<name>``; return the binary."""
    program_dir = REFERENCE_DIR / name
    if not (program_dir / "main.go").is_file():
        raise FileNotFoundError(f"no reference program at {program_dir}")
    binary = CACHE_DIR / client_go_version() / name
    if binary.exists() and binary.stat().st_mtime > _newest_source(program_dir):
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["GOSUMDB"] = "off"
    env["GOFLAGS"] = " ".join(filter(None, [env.get("GOFLAGS", ""), "-mod=mod"]))
    partial = binary.with_name(f".{name}.partial")
    subprocess.run(
        [_go(), "build", "-o", str(partial), f"./{name}"],
        cwd=REFERENCE_DIR,
        env=env,
        check=True,
    )
    partial.replace(binary)
    return binary

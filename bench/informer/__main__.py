"""``python -m bench.informer``: the command line (see ``bench.informer``'s docstring).

The same entry point runs the measured children (``--child KIND``, internal flags): it
imports nothing else before handing over to ``bench.informer._child``.
"""

# ruff: noqa: PLC0415

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # python bench/informer ...

import bench.informer


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.informer",
        description=bench.informer.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--pods", default="10000,50000", help="comma-separated pod counts")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--variants", help="comma-separated variant names (default: all)")
    p.add_argument(
        "--slow-runs",
        type=int,
        default=-1,
        help="runs that include the slow variants (default: all up to 20k pods, else 1)",
    )
    p.add_argument("--slow-timeout", type=float, default=240.0, help="seconds")
    p.add_argument("--churn-seconds", type=float, default=15.0)
    p.add_argument("--writer-concurrency", type=int, default=32)
    p.add_argument("--create-concurrency", type=int, default=32)
    p.add_argument("--write", help="also write the table (Markdown) to this file")
    p.add_argument("--json", help="write the results (bench/_results.py's format) to this file")
    p.add_argument("--dump", help="write every raw measurement (JSON) to this file")
    p.add_argument("--load", help="render an earlier --dump instead of measuring")
    # child mode (internal)
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    p.add_argument("--namespace", default="", help=argparse.SUPPRESS)
    p.add_argument("--transform", default="none", choices=("none", "trim"), help=argparse.SUPPRESS)
    p.add_argument("--watch-list", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--churn", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--gc-freeze", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--no-compression", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--no-intern", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--page-size", type=int, default=500, help=argparse.SUPPRESS)
    p.add_argument("--seconds", type=float, default=15.0, help=argparse.SUPPRESS)
    p.add_argument("--concurrency", type=int, default=32, help=argparse.SUPPRESS)
    return p


def main() -> None:
    args = parser().parse_args()
    if args.child:
        from bench.informer._child import child_main

        child_main(args)
        return

    import asyncio
    from pathlib import Path

    from bench.informer._orchestrate import Collected, orchestrate
    from bench.informer._report import finish
    from bench.informer._variants import variants

    if args.load:
        data = Collected.load(args.load)
        all_variants = variants(Path("client-go"))  # names only: nothing is run
        names = {name for _, name in data.sync}
        all_variants = [v for v in all_variants if v.name in names]
        finish(args, data, all_variants, data.counts())
    else:
        finish(args, *asyncio.run(orchestrate(args)))


if __name__ == "__main__":
    main()

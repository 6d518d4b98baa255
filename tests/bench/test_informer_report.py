"""bench/informer's sync table: the whole process's CPU to has_synced beside the sync's."""

from __future__ import annotations

from bench.informer._orchestrate import Collected
from bench.informer._report import report, results_points, sync_medians
from bench.informer._variants import Variant


def _variant(name: str, runtime: str) -> Variant:
    return Variant(name, runtime, lambda kubeconfig, namespace: [])


KCONTROL = _variant("kcontrol", "kcontrol")
CLIENT_GO = _variant("client-go", "go")


def _sync(cpu: float, imports: float | None) -> dict[str, float]:
    run = {"wall_seconds": cpu, "cpu_seconds": cpu, "maxrss_kb": 40960.0, "rss_kb": 40960.0}
    run["rss_settled_kb"] = run["heap_inuse_after_gc"] = 1.0
    if imports is not None:
        run["import_cpu_seconds"] = imports
    return run


def test_process_cpu_adds_the_imports_to_the_sync() -> None:
    data = Collected(
        sync={
            (1000, "kcontrol"): [_sync(0.07, 0.10), _sync(0.08, 0.11), _sync(0.06, 0.09)],
            (1000, "client-go"): [_sync(0.05, None), _sync(0.05, None), _sync(0.06, None)],
        }
    )
    ours = sync_medians(data, KCONTROL, 1000)
    theirs = sync_medians(data, CLIENT_GO, 1000)
    assert ours is not None and theirs is not None
    assert round(ours["process"], 3) == 0.17  # the median run's import + sync
    assert round(theirs["process"], 3) == 0.05  # Go: from main, no import figure
    text = report(data, [KCONTROL, CLIENT_GO], [1000])
    assert "| kcontrol | 3 | 0.07 | 0.07 | 0.10 | 0.17 | 40 |" in text
    assert "| client-go | 3 | 0.05 | 0.05 | - | 0.05 | 40 |" in text
    ratios = next(line for line in text.splitlines() if line.startswith("| kcontrol / client-go ("))
    assert ratios.split(" | ")[1:4] == ["1.40", "1.40", "3.40"]
    sync_points, _ = results_points(data, [KCONTROL, CLIENT_GO], [1000])
    assert [round(p["process_cpu_seconds"], 3) for p in sync_points] == [0.17, 0.05]

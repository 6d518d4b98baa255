"""kcontrol's benchmarks, each run side by side with its Go (or Python) peers.

Run a suite with ``python -m bench.<suite>`` from the repository root (``decode``,
``workqueue``, ``informer``, ``rollout``), and ``python -m bench.report`` to turn the JSON
results under ``bench/results/`` into plots; ``make bench`` does all of it. Shared pieces:
``bench._process`` (CPU-seconds and memory of processes), ``bench._results`` (the JSON
results files), ``bench._reference`` (building the Go programs), ``bench._pods`` (pods to
create on an apiserver).
"""

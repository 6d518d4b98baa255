# kcontrol's two entry points: `make test` and `make run`. Both do all set-up themselves:
# a virtualenv with the package and its tools, and the control-plane binaries (built once from
# Go modules into ~/.cache/kcontrol, see hack/build-k8s.sh).

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: all test run lint format typecheck docs assets tools bench-assets bench venv bytecode clean

all: test

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,bench]'
	touch $@

# Everything the test cluster runs: etcd, kube-apiserver, kubectl, kube-scheduler,
# kube-controller-manager (k8s.io/kubernetes) and kwok (sigs.k8s.io/kwok).
assets:
	hack/build-k8s.sh cluster >/dev/null

# kcontrol-manager as the image installs it (the uvloop extra, none of the dev tools), for the
# benchmarks' controller processes (bench/_process.py: kcontrol_manager). Editable, so it runs
# the working tree.
RUNTIME_VENV ?= .venv-runtime
$(RUNTIME_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(RUNTIME_VENV)
	$(RUNTIME_VENV)/bin/python -m pip install -q --upgrade pip
	$(RUNTIME_VENV)/bin/python -m pip install -q -e '.[uvloop]'
	touch $@

bench-assets: assets $(RUNTIME_VENV)/.installed bytecode
	hack/build-k8s.sh kwokctl >/dev/null

# Byte code for the working tree, which both virtualenvs install editable: a start of
# kcontrol-manager then reads it instead of compiling every module of the project, a few
# tenths of a CPU-second at every start (issue 37). Written explicitly because machines that set PYTHONDONTWRITEBYTECODE
# never write it on import; compileall skips modules whose byte code is current.
bytecode: venv
	$(BIN)/python -m compileall -q kcontrol controllers examples >/dev/null

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: venv
	$(BIN)/mypy

format: venv
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The documentation site (docs/, mkdocs.yml) into site/, warnings as errors: a broken link, or
# an API reference entry or docstring cross-reference whose symbol was renamed, fails it.
docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# System tools the tests use that pip cannot install: tmux drives the rollout view's terminal
# tests (tests/rollout). Installed from the distribution's packages when missing and this is
# a root shell with apt-get; otherwise those tests are skipped, and this says so.
tools:
	@command -v tmux >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& apt-get update -qq && apt-get install -y -qq tmux >/dev/null; } \
		|| echo "tmux is not installed: tests/rollout's terminal tests will be skipped"

# Asyncio debug mode: slow callbacks are logged and never-retrieved task exceptions surface.
test: venv assets tools lint typecheck docs
	PYTHONASYNCIODEBUG=1 $(BIN)/pytest -q $(PYTEST_ARGS)

# kcontrol-manager against $(KUBECONFIG) when given, else against a built-in local cluster
# (control plane, kube-scheduler, kube-controller-manager without its deployment and
# replicaset controllers, kwok nodes; started for the run and removed afterwards), an example
# Deployment (examples/rollout/) and its rollout live in the terminal; Ctrl-C stops it all.
# kcontrol-manager flags: RUN_ARGS=...
RUN_ARGS ?= --log-format=console
run: venv assets bytecode
	$(BIN)/python -m kcontrol.rollout.local $(if $(KUBECONFIG),--kubeconfig "$(KUBECONFIG)") -- $(RUN_ARGS)

# Benchmarks (bench/), each side by side with its peers in the same run: decode, workqueue
# (client-go's), informer (client-go's and the official Python client's), rollout
# (kube-controller-manager's controllers), operator (the Website operator written with kcontrol
# and with kopf, on envtest), then the plots. Writes $(BENCH_OUT)/<suite>.json,
# the tables as $(BENCH_OUT)/tables/<suite>.md and the PNGs in $(BENCH_OUT)/plots/.
# The default is what docs/benchmarks.md quotes; on the shared 2-core machine: decode + workqueue
# ~6 min, informer at 1k, 10k and 50k pods 15-30 min, and the full rollout matrix (50x3,
# 200x5 and 1000x1, at QPS 20 / burst 30 and unthrottled, pods Ready 1 s after they start and
# at once - issue 37 -, 3 runs each) about 8-10 hours,
# kwokctl (the rollout on a cluster kwokctl makes, pods Ready at once, kubectl apply: 50x3 and
# 200x3, 3 runs; issue 37's outside harness) ~10 min, operator at 50 and 500 Websites, 3 runs each, ~15 min; jobs (KCM's job controller) at 20x10x5
# and 100x4x2 (N Jobs x M completions x parallelism P), QPS 20 / burst 30 and unthrottled,
# pods Ready 1 s after they start and at once (issue 37), 3 runs each, ~50 min; shards (kcontrol-manager over 1 and 3 replicas, 2,000 Deployments in
# 200 namespaces, with faults and a 1 -> 3 -> 1 restart, the API server filtering by shard and
# not) ~1 h; sets (KCM's StatefulSet and DaemonSet controllers: 50 StatefulSets x 5 and 5
# DaemonSets over 50 nodes, QPS 20 / burst 30 and unthrottled, 2 runs each) ~20 min; gc
# (KCM's garbage collector: start-up over 50,000 objects of 20 kinds, then a cascade of 1,000
# owners x 10 dependents, unthrottled, 2 runs) ~6 min; webhooks (the same admission webhooks
# with kcontrol and with kopf: 100 and 200 concurrent creates, 5 runs each) ~3 min; registry
# (one ConfigMap 5 writers share, 50 and 500 keys, kcontrol and two kopf ways, 5 runs) ~8 min;
# writes (the CPU of one write, kcontrol's client against client-go's, 3 runs) ~2 min.
# BENCH_QUICK=1: every suite small (~7 min), into $(BENCH_OUT) = /tmp/kcontrol-bench.
# Choose suites and sizes with BENCH_SUITES="decode informer" and BENCH_<SUITE>_ARGS=...
# (e.g. BENCH_ROLLOUT_ARGS="--sizes 50x3 --runs 3"); plots only: BENCH_SUITES= .
BENCH_SUITES ?= decode workqueue informer writes rollout kwokctl operator jobs sets shards webhooks registry gc
ifdef BENCH_QUICK
BENCH_OUT ?= /tmp/kcontrol-bench
BENCH_DECODE_ARGS ?= -n 2000 --rounds 3
BENCH_WORKQUEUE_ARGS ?= --items 50000 --runs 1
BENCH_INFORMER_ARGS ?= --pods 1000,5000 --runs 1 --churn-seconds 5
BENCH_ROLLOUT_ARGS ?= --sizes 20x2 --qps unthrottled --runs 1 --pod-ready-delay 1,0
BENCH_OPERATOR_ARGS ?= --websites 20 --runs 1
BENCH_JOBS_ARGS ?= --sizes 5x4x2 --qps unthrottled --runs 1 --pod-ready-delay 1,0
BENCH_SETS_ARGS ?= --sizes sts=3x3,ds=2x5 --qps unthrottled --runs 1
BENCH_SHARDS_ARGS ?= --deployments 60 --namespaces 12 --configs 1x1,3x3! --gates on
BENCH_KWOKCTL_ARGS ?= --sizes 20x2 --runs 1
BENCH_WEBHOOKS_ARGS ?= --creates 50 --runs 1
BENCH_REGISTRY_ARGS ?= --keys 50 --runs 1
BENCH_GC_ARGS ?= --objects 2000 --kinds 20 --namespaces 10 --owners 50 --dependents 5 --runs 1
BENCH_WRITES_ARGS ?= --ops 200 --runs 1
else
BENCH_OUT ?= bench/results
BENCH_DECODE_ARGS ?=
BENCH_WORKQUEUE_ARGS ?=
BENCH_INFORMER_ARGS ?= --pods 1000,10000,50000
BENCH_ROLLOUT_ARGS ?= --sizes 50x3,200x5,1000x1 --qps 20:30,unthrottled --runs 3 --pod-ready-delay 1,0
BENCH_OPERATOR_ARGS ?= --websites 50,500 --runs 3
BENCH_JOBS_ARGS ?= --sizes 20x10x5,100x4x2 --qps 20:30,unthrottled --runs 3 --pod-ready-delay 1,0
BENCH_SETS_ARGS ?= --sizes sts=50x5,ds=5x50 --qps 20:30,unthrottled --runs 2
BENCH_SHARDS_ARGS ?= --deployments 2000 --namespaces 200 --configs 1x1,3x3,3x6! --restart
BENCH_KWOKCTL_ARGS ?= --sizes 50x3,200x3 --runs 3
BENCH_WEBHOOKS_ARGS ?= --creates 100,200 --runs 5
BENCH_REGISTRY_ARGS ?= --keys 50,500 --runs 5
BENCH_GC_ARGS ?= --objects 50000 --kinds 20 --owners 1000 --dependents 10 --runs 2
BENCH_WRITES_ARGS ?=
endif
bench: venv bench-assets
	mkdir -p $(BENCH_OUT)/tables
	set -e; for suite in $(BENCH_SUITES); do \
		case $$suite in \
		decode) args="$(BENCH_DECODE_ARGS)"; md=--out;; \
		workqueue) args="$(BENCH_WORKQUEUE_ARGS)"; md=--out;; \
		informer) args="$(BENCH_INFORMER_ARGS)"; md=--write;; \
		rollout) args="$(BENCH_ROLLOUT_ARGS)"; md=--out;; \
		operator) args="$(BENCH_OPERATOR_ARGS)"; md=--out;; \
		jobs) args="$(BENCH_JOBS_ARGS)"; md=--out;; \
		sets) args="$(BENCH_SETS_ARGS)"; md=--out;; \
		shards) args="$(BENCH_SHARDS_ARGS)"; md=--out;; \
		kwokctl) args="$(BENCH_KWOKCTL_ARGS)"; md=--out;; \
		webhooks) args="$(BENCH_WEBHOOKS_ARGS)"; md=--out;; \
		registry) args="$(BENCH_REGISTRY_ARGS)"; md=--out;; \
		gc) args="$(BENCH_GC_ARGS)"; md=--out;; \
		writes) args="$(BENCH_WRITES_ARGS)"; md=--out;; \
		*) echo "unknown suite $$suite"; exit 2;; \
		esac; \
		echo "== bench.$$suite $$args"; \
		$(BIN)/python -m bench.$$suite $$args $$md $(BENCH_OUT)/tables/$$suite.md \
			--json $(BENCH_OUT)/$$suite.json; \
	done
	$(BIN)/python -m bench.report --results $(BENCH_OUT) --out $(BENCH_OUT)/plots

clean:
	rm -rf $(VENV) $(RUNTIME_VENV) .mypy_cache .ruff_cache .pytest_cache site

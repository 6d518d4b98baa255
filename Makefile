# kcontrol's two entry points: `make test` and `make run`. Both do all set-up themselves:
# a virtualenv with the package and its tools, and the control-plane binaries (built once from
# Go modules into ~/.cache/kcontrol, see hack/build-k8s.sh).

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: all test run lint format typecheck assets bench-assets venv clean

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

bench-assets: assets

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: venv
	$(BIN)/mypy

format: venv
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Asyncio debug mode: slow callbacks are logged and never-retrieved task exceptions surface.
test: venv assets lint typecheck
	PYTHONASYNCIODEBUG=1 $(BIN)/pytest -q $(PYTEST_ARGS)

# kcontrol-manager against $(KUBECONFIG) when given, else against a built-in local cluster
# (control plane, kube-scheduler, kube-controller-manager without its deployment and
# replicaset controllers, kwok nodes; started for the run and removed afterwards), an example
# Deployment (examples/rollout/) and its rollout live in the terminal; Ctrl-C stops it all.
# kcontrol-manager flags: RUN_ARGS=...
RUN_ARGS ?= --log-format=console
run: venv assets
	$(BIN)/python -m kcontrol.rollout.local $(if $(KUBECONFIG),--kubeconfig "$(KUBECONFIG)") -- $(RUN_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

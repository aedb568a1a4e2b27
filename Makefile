# kueue-bridge developer entry points. Everything runs from a local virtualenv (.venv)
# so a fresh machine needs only python3 (>= 3.11) and make.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test test-real test-install kind dev dev-multicluster lint typecheck contracts unit bench clean release-manifests

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check --no-cache .
	$(BIN)/ruff format --no-cache --check .

typecheck: $(STAMP)
	$(BIN)/mypy

contracts: $(STAMP)
	$(BIN)/lint-imports

unit: $(STAMP)
	$(BIN)/pytest

test: lint typecheck contracts unit

# conformance + end-to-end tests on a real kube-apiserver with real Kueue (../shared/real-cluster);
# `make test-real TEST_REAL_ARGS="--stage e2e -- -x -k batch"` passes flags (README: Testing on a real cluster)
test-real: $(STAMP)
	$(BIN)/python -m devrun.real_suite $(TEST_REAL_ARGS)

# kueue-bridge as users install it (tests/install): a one-node cluster (../shared/real-cluster/node.sh),
# Kueue v0.19.2 from its own chart, our image built and loaded, then our Helm chart, the release
# manifest and kustomize deploy/; everything it starts is stopped at the end. A skip fails it.
# `make test-install TEST_INSTALL_ARGS="-k helm -x"` passes pytest flags.
test-install: $(STAMP)
	KUEUE_BRIDGE_INSTALL_TEST=1 $(BIN)/pytest tests/install -p no:cacheprovider -ra -s $(TEST_INSTALL_ARGS)

# the same install steps on a kind cluster (Docker + kind + helm + kubectl on PATH): hack/kind.sh
kind:
	hack/kind.sh

# `make dev DEV_ARGS="--reset --port 0"` passes flags to `kueue-bridge dev` (README: Local development)
dev: $(STAMP)
	$(BIN)/kueue-bridge dev $(DEV_ARGS)

# a MultiKueue manager and two workers, each with its webhook and reconciler (README: Local development)
dev-multicluster: $(STAMP)
	$(BIN)/kueue-bridge dev --workers 2 $(DEV_ARGS)

# one YAML per install flavour, built from deploy/, image pinned (README: Deploying);
# `make release-manifests IMAGE=registry.example.com/kueue-bridge:0.1.0`
IMAGE ?=
release-manifests: $(STAMP)
	$(BIN)/python -m bridge_tools.manifests.release_bundle --out dist $(if $(IMAGE),--image $(IMAGE))

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build dist *.egg-info

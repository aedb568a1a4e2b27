# kueue-bridge developer entry points. Everything runs from a local virtualenv (.venv)
# so a fresh machine needs only python3 (>= 3.11) and make.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test test-real test-compose test-install kind dev dev-multicluster lint typecheck contracts unit docs bench clean release-manifests

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

# the documentation site (mkdocs.yml, docs/): --strict fails on a broken link or anchor and on a page
# left out of the nav; built into a temporary folder, so nothing is left behind
docs: $(STAMP)
	@out=$$(mktemp -d) && NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir "$$out"; status=$$?; rm -rf "$$out"; exit $$status

test: lint typecheck contracts docs unit

# conformance + end-to-end tests on a real kube-apiserver with real Kueue (../shared/real-cluster);
# `make test-real TEST_REAL_ARGS="--stage e2e -- -x -k batch"` passes flags (docs/testing-real-cluster.md)
test-real: $(STAMP)
	$(BIN)/python -m testkit.real_suite $(TEST_REAL_ARGS)

# kueue-bridge as users install it (tests/install): a one-node cluster (../shared/real-cluster/node.sh),
# Kueue v0.19.2 from its own chart, our image built and loaded, then our Helm chart, the release
# manifest and kustomize deploy/; everything it starts is stopped at the end. A skip fails it.
# `make test-install TEST_INSTALL_ARGS="-k helm -x"` passes pytest flags.
test-install: $(STAMP)
	KUEUE_BRIDGE_INSTALL_TEST=1 $(BIN)/pytest tests/install -p no:cacheprovider -ra -s $(TEST_INSTALL_ARGS)

# the same install steps on a kind cluster (Docker + kind + helm + kubectl on PATH): hack/kind.sh
kind:
	hack/kind.sh

# docker-compose.yaml, run as a user runs it, through the kit's podman and Docker Compose v2
# (tests/compose; needs root). Sets up podman, the base image and the stand-ins it lacks, starts and
# stops its own podman service. A skipped test fails the run (tests/compose/conftest.py).
test-compose: $(STAMP)
	KUEUE_BRIDGE_TEST_COMPOSE=1 $(BIN)/pytest tests/compose -p no:cacheprovider $(TEST_COMPOSE_ARGS)

# `make dev DEV_ARGS="--reset --port 0"` passes flags to `kueue-bridge dev` (docs/local-development.md)
dev: $(STAMP)
	$(BIN)/kueue-bridge dev $(DEV_ARGS)

# a MultiKueue manager and two workers, each with its webhook and reconciler (docs/local-development.md)
dev-multicluster: $(STAMP)
	$(BIN)/kueue-bridge dev --workers 2 $(DEV_ARGS)

# one YAML per install flavour, built from deploy/, image pinned (docs/installing.md);
# `make release-manifests IMAGE=registry.example.com/kueue-bridge:0.1.0`
IMAGE ?=
release-manifests: $(STAMP)
	$(BIN)/python -m bridge_tools.manifests.release_bundle --out dist $(if $(IMAGE),--image $(IMAGE))

bench: $(STAMP)
	$(BIN)/python -m bench.run_all

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build dist site *.egg-info

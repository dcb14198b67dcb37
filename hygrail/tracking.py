"""MLflow logging of one cell: config as params, figures as metrics, predictions and evidence
samples as artifacts. SQLite store under outputs/ (MLflow 3's file store refuses by default).

Parallel sweep jobs (joblib processes) share one SQLite file, so every write happens under a file
lock; cells are small, so the lock is held for well under a second.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

from filelock import FileLock
from omegaconf import DictConfig, OmegaConf

# Config parts that say where things go, not what was computed: not logged as the cell's config
# (``discover``: task=discover's own settings, logged by its own run, not part of a cell).
VOLATILE = ("paths", "hydra", "tracking", "log_samples", "resume", "discover")
# ... and parts that say how it was run (where the server is, how many threads or requests at once):
# logged, but not part of the cell's identity, so a sweep resumed against a moved server skips done cells.
HOW_RUN = ("threads", "format", "task", "llm.base_url", "llm.api_key_env", "llm.concurrency", "llm.timeout",
           "llm.max_retries", "llm.transport", "llm.max_call_failure_rate", "llm.serve", "llm.embedded.threads",
           "llm.embedded.model.cache_dir")
# Bump when a code change alters the results of existing cells, so resume recomputes them.
# 2: an unreachable LLM server stops the cell instead of logging GNN-only decisions as HyGRAIL's.
# 3: test_call_rate is the routed share (paper); decision attribution; KG-FM reviews raw triples.
RESULT_VERSION = 3
SECRET_WORDS = ("secret", "password", "api_key")
MAX_PARAM = 500


def cell_config(cfg: DictConfig) -> dict:
    plain = OmegaConf.to_container(cfg, resolve=True)
    return {k: v for k, v in plain.items() if k not in VOLATILE}


def cell_identity(cfg: DictConfig) -> dict:
    """Everything that determines a cell's result, and nothing else."""
    ident = cell_config(cfg)
    for dotted in HOW_RUN:
        *parents, last = dotted.split(".")
        node = ident
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(last, None)
    if ident["method"]["name"] in ("gnn_only", "tsh"):  # no LLM, no evidence text
        ident.pop("llm", None)
        ident.pop("evidence", None)
    elif ident["method"]["name"] == "kgfm":  # its context is method.context, not the evidence group
        ident.pop("evidence", None)
    data_files = _data_files(ident["data"])
    return _floats(ident) | {"result_version": RESULT_VERSION} | ({"data_files": data_files} if data_files else {})


def _floats(x):
    """1 and 1.0 are one setting (budget=1 on the CLI, 1.0 in a file)."""
    if isinstance(x, dict):
        return {k: _floats(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_floats(v) for v in x]
    return float(x) if isinstance(x, int) and not isinstance(x, bool) else x


def _data_files(data: dict) -> list | None:
    """Name, size and mtime of the files under a data path: edited files are new data."""
    path = data.get("path")
    if not path or not Path(path).is_dir():
        return None
    return [[f.name, st.st_size, st.st_mtime_ns] for f in sorted(Path(path).iterdir()) if f.is_file() and (st := f.stat())]


def cell_key(cfg: DictConfig) -> str:
    """Content hash of everything that determines a cell's result."""
    return hashlib.sha256(json.dumps(cell_identity(cfg), sort_keys=True, default=str).encode()).hexdigest()[:16]


def flatten(d: Mapping, prefix: str = "") -> dict[str, Any]:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if any(w in str(k).lower() for w in SECRET_WORDS) and not str(k).endswith("_env"):
            continue  # a secret never reaches MLflow; configs name env variables instead
        if isinstance(v, Mapping):
            out |= flatten(v, key + ".")
        else:
            s = json.dumps(v) if isinstance(v, (list, tuple)) else str(v)
            # Long values (naturalization templates) live in the config.yaml artifact instead.
            out[key] = s if len(s) <= MAX_PARAM else f"sha1:{hashlib.sha1(s.encode()).hexdigest()[:12]}"
    return out


@contextmanager
def store(uri: str, lock_path: Path) -> Iterator[Any]:
    import mlflow

    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lock_path)):
        mlflow.set_tracking_uri(uri)
        yield mlflow


def experiment_id(mlflow, name: str, artifact_root: Path) -> str:
    exp = mlflow.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    return mlflow.create_experiment(name, artifact_location=(artifact_root / name).resolve().as_uri())


def finished_run(cfg: DictConfig) -> str | None:
    """Run id of a finished run of this exact cell, so a re-run sweep skips it. A run in which
    some LLM calls got no reply is not finished work: rerunning it sends only those (the rest are
    cached)."""
    t = cfg.tracking
    with store(t.uri, Path(t.lock)) as mlflow:
        exp = mlflow.get_experiment_by_name(t.experiment)
        if exp is None:
            return None
        runs = mlflow.search_runs(
            [exp.experiment_id],
            filter_string=f"tags.cell_key = '{cell_key(cfg)}' and attributes.status = 'FINISHED'",
            order_by=["attributes.start_time DESC"],
            output_format="list",
        )
        complete = [r for r in runs if not r.data.metrics.get("llm_call_failures")]
        return complete[0].info.run_id if complete else None


def log_cell(cfg: DictConfig, result, sweep: str | None) -> str:
    from hygrail.report import score_figure

    t = cfg.tracking
    params = flatten(cell_config(cfg))
    tags = {"cell_key": cell_key(cfg), "sweep": sweep or "", "method_label": method_label(cfg)}
    tags |= {g: str(cfg[g].name) for g in ("relation", "backbone", "llm", "method")}
    tags["evidence"] = str((cfg.method.context if cfg.method.name == "kgfm" else cfg.evidence).mode)
    tags["data"] = str(cfg.data.name)
    with tempfile.TemporaryDirectory() as tmp:
        # Files first, outside the store lock: parallel jobs wait only for the MLflow writes.
        tmp = Path(tmp)
        result.predictions.write_parquet(tmp / "predictions.parquet")
        (tmp / "evidence_samples.json").write_text(json.dumps(result.samples, indent=1, default=str))
        (tmp / "config.yaml").write_text(OmegaConf.to_yaml(cell_config(cfg)))
        if "score" in result.predictions.columns:  # KG-FM has no triage scores to plot
            score_figure(result.predictions, result.band, result.gnn_threshold).savefig(tmp / "score_distribution.png", dpi=120)
        run_name = "/".join(tags.get(g, "-") for g in ("relation", "backbone", "method", "llm", "evidence"))
        with store(t.uri, Path(t.lock)) as mlflow:
            exp = experiment_id(mlflow, t.experiment, Path(t.artifacts))
            with mlflow.start_run(experiment_id=exp, run_name=run_name, tags=tags) as run:
                mlflow.log_params(params)  # MLflow batches them (100 per request) itself
                mlflow.log_metrics({k: float(v) for k, v in result.metrics.items() if v is not None})
                mlflow.log_artifacts(str(tmp))
        return run.info.run_id


def method_label(cfg: DictConfig) -> str:
    """The paper's row names (Table 2): GNN, HyGRAIL-NE/-Auto/-LLM, TSH, KG-FM."""
    m = cfg.method.name
    if m == "hygrail":
        return str(cfg.evidence.label)  # each evidence mode names its row (conf/evidence/*.yaml)
    return {"gnn_only": "GNN", "tsh": "TSH", "kgfm": "KG-FM"}.get(m, m)

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

# Config parts that say where things go, not what was computed: not part of a cell's identity.
VOLATILE = ("paths", "hydra", "tracking", "log_samples", "resume")
SECRET_WORDS = ("secret", "password", "api_key")
MAX_PARAM = 500


def cell_config(cfg: DictConfig) -> dict:
    plain = OmegaConf.to_container(cfg, resolve=True)
    return {k: v for k, v in plain.items() if k not in VOLATILE}


def cell_key(cfg: DictConfig) -> str:
    """Content hash of everything that determines a cell's result."""
    return hashlib.sha256(json.dumps(cell_config(cfg), sort_keys=True, default=str).encode()).hexdigest()[:16]


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
    """Run id of a finished run of this exact cell, so a re-run sweep skips it."""
    t = cfg.tracking
    with store(t.uri, Path(t.lock)) as mlflow:
        exp = mlflow.get_experiment_by_name(t.experiment)
        if exp is None:
            return None
        runs = mlflow.search_runs(
            [exp.experiment_id],
            filter_string=f"tags.cell_key = '{cell_key(cfg)}' and attributes.status = 'FINISHED'",
            max_results=1,
            output_format="list",
        )
        return runs[0].info.run_id if runs else None


def log_cell(cfg: DictConfig, result, sweep: str | None) -> str:
    from hygrail.report import score_figure

    t = cfg.tracking
    params = flatten(cell_config(cfg))
    tags = {"cell_key": cell_key(cfg), "sweep": sweep or "", "method_label": method_label(cfg)}
    tags |= {g: str(cfg[g].name) for g in ("relation", "backbone", "llm", "method")}
    tags["evidence"] = str(cfg.evidence.mode)
    with tempfile.TemporaryDirectory() as tmp, store(t.uri, Path(t.lock)) as mlflow:
        tmp = Path(tmp)
        result.predictions.write_parquet(tmp / "predictions.parquet")
        (tmp / "evidence_samples.json").write_text(json.dumps(result.samples, indent=1, default=str))
        (tmp / "config.yaml").write_text(OmegaConf.to_yaml(cell_config(cfg)))
        if "score" in result.predictions.columns:  # KG-FM has no triage scores to plot
            score_figure(result.predictions, result.band, result.gnn_threshold).savefig(tmp / "score_distribution.png", dpi=120)
        exp = experiment_id(mlflow, t.experiment, Path(t.artifacts))
        run_name = "/".join(tags.get(g, "-") for g in ("relation", "backbone", "method", "llm", "evidence"))
        with mlflow.start_run(experiment_id=exp, run_name=run_name, tags=tags) as run:
            for chunk in _chunks(params, 100):
                mlflow.log_params(chunk)
            mlflow.log_metrics({k: float(v) for k, v in result.metrics.items() if v is not None})
            mlflow.log_artifacts(str(tmp))
        return run.info.run_id


def method_label(cfg: DictConfig) -> str:
    """The paper's row names (Table 2): GNN, HyGRAIL-NE/-Auto/-LLM, TSH, KG-FM."""
    m = cfg.method.name
    if m == "hygrail":
        return {"none": "HyGRAIL-NE", "template": "HyGRAIL-Auto", "llm": "HyGRAIL-LLM"}[cfg.evidence.mode]
    return {"gnn_only": "GNN", "tsh": "TSH", "kgfm": "KG-FM"}.get(m, m)


def _chunks(d: dict, n: int):
    items = list(d.items())
    for i in range(0, len(items), n):
        yield dict(items[i : i + n])

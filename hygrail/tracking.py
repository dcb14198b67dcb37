"""MLflow logging of one cell, live: the run opens when the cell starts (RUNNING, with its config
as params, the config artifact and the KG as a dataset input), the triage training writes its
per-epoch curves into it through Lightning's MLflow logger, and it ends FINISHED with the cell's
figures, predictions and evidence samples, or FAILED with the one-line reason as a tag (KILLED on
an interrupt or SIGTERM). A killed sweep therefore leaves its failed cells visible, and `resume`
reruns exactly the cells with no FINISHED run.

Stores: a SQLite file under outputs/ on one machine (MLflow 3's file store refuses by default), or
an MLflow tracking server (``tracking.uri=http://...``, ``make tracking-server``) for a cluster,
where SQLite on the shared filesystem would be unsafe. Parallel local jobs share one SQLite file:
run creation and the end-of-cell writes happen under a file lock (SQLite's own locking handles the
small per-epoch writes in between); a server serialises writes itself and needs no lock.

Nothing secret is logged: params, tags, the config artifact and failure reasons pass through
``hygrail.redact``.
"""

from __future__ import annotations

import hashlib
import json
import signal
import socket
import tempfile
import threading
import traceback
import warnings
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np
import polars as pl
from filelock import FileLock
from omegaconf import DictConfig, OmegaConf

# Config parts that say where things go, not what was computed: not logged as the cell's config
# (``discover``: task=discover's own settings, logged by its own run, not part of a cell).
VOLATILE = ("paths", "hydra", "tracking", "log_samples", "resume", "discover")
# ... and parts that say how it was run (where the server is, how many threads or requests at once):
# logged, but not part of the cell's identity, so a sweep resumed against a moved server skips done cells
# (llm.training_data_date describes the model, for discovery's contamination warning: it computes nothing).
HOW_RUN = ("threads", "format", "task", "llm.base_url", "llm.api_key_env", "llm.concurrency", "llm.timeout",
           "llm.max_retries", "llm.transport", "llm.max_call_failure_rate", "llm.serve", "llm.embedded.threads",
           "llm.embedded.model.cache_dir", "llm.training_data_date")
# Bump when a code change alters the results of existing cells, so resume recomputes them.
# 2: an unreachable LLM server stops the cell instead of logging GNN-only decisions as HyGRAIL's.
# 3: test_call_rate is the routed share (paper); decision attribution; KG-FM reviews raw triples.
# 4: test/val ROC-AUC and average precision of every scored method (test_auc, gnn_test_auc, ...).
RESULT_VERSION = 4
# Methods that use no LLM and no evidence text: their cells ignore the llm and evidence groups.
NO_LLM = ("gnn_only", "tsh", "structural", "gbdt", "kge")
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
    if ident["method"]["name"] in NO_LLM:
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
    """Params from a (redacted) config: dotted keys, lists as JSON, long values as a hash."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out |= flatten(v, key + ".")
        else:
            s = json.dumps(v) if isinstance(v, (list, tuple)) else str(v)
            # Long values (naturalization templates) live in the config.yaml artifact instead.
            out[key] = s if len(s) <= MAX_PARAM else f"sha1:{hashlib.sha1(s.encode()).hexdigest()[:12]}"
    return out


def remote(uri: str) -> bool:
    """A tracking server (it serialises writes and stores artifacts itself), not a local file."""
    return uri.startswith(("http://", "https://"))


@contextmanager
def store(t: Mapping) -> Iterator[Any]:
    """The mlflow module pointed at ``tracking.uri``, under the SQLite file lock when local."""
    import mlflow

    lock = nullcontext()
    if not remote(t["uri"]):
        Path(t["lock"]).parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(t["lock"]))
    with lock:
        mlflow.set_tracking_uri(t["uri"])
        yield mlflow


# MLflow 3's UI opens an experiment on its GenAI "Traces" page unless the experiment says it holds
# model-training runs (the tag the UI reads; values from its ExperimentKind enum).
EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}


def experiment_id(mlflow, t: Mapping) -> str:
    from mlflow.exceptions import MlflowException

    exp = mlflow.get_experiment_by_name(t["experiment"])
    if exp is None:
        # A server picks the artifact location itself (its --artifacts-destination).
        where = None if remote(t["uri"]) else (Path(t["artifacts"]) / t["experiment"]).resolve().as_uri()
        try:
            return mlflow.create_experiment(t["experiment"], artifact_location=where, tags=EXPERIMENT_KIND)
        except MlflowException as e:
            # parallel cells on a tracking server (no file lock there): another one made it between the two calls
            if e.error_code != "RESOURCE_ALREADY_EXISTS":
                raise
            exp = mlflow.get_experiment_by_name(t["experiment"])
    if exp.tags.get("mlflow.experimentKind") is None:  # made by an earlier version
        mlflow.MlflowClient().set_experiment_tag(exp.experiment_id, *next(iter(EXPERIMENT_KIND.items())))
    return exp.experiment_id


def finished_run(cfg: DictConfig) -> str | None:
    """Run id of a finished run of this exact cell, so a re-run sweep skips it. A run in which
    some LLM calls got no reply is not finished work: rerunning it sends only those (the rest are
    cached). FAILED, KILLED and abandoned RUNNING runs are not finished either."""
    with store(cfg.tracking) as mlflow:
        exp = mlflow.get_experiment_by_name(cfg.tracking.experiment)
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


def cell_tags(cfg: DictConfig, sweep: str | None) -> dict[str, str]:
    tags = {"cell_key": cell_key(cfg), "sweep": sweep or "", "method_label": method_label(cfg)}
    tags |= {g: str(cfg[g].name) for g in ("relation", "backbone", "llm", "method")}
    tags["evidence"] = str((cfg.method.context if cfg.method.name == "kgfm" else cfg.evidence).mode)
    tags["data"] = str(cfg.data.name)
    tags["host"] = socket.gethostname()
    return tags


def dataset(cfg: DictConfig):
    """The cell's KG as an MLflow dataset: its name, where it came from, and a digest of its content
    (the bytes of every file under ``data.path``; for the synthetic KG, which has no files, of the
    generator config it is a pure function of)."""
    from mlflow.data.code_dataset_source import CodeDatasetSource
    from mlflow.data.dataset_source_registry import resolve_dataset_source
    from mlflow.data.meta_dataset import MetaDataset

    data = OmegaConf.to_container(cfg.data, resolve=True)
    path = data.get("path")
    h = hashlib.sha256()
    if path and Path(path).is_dir():
        for f in sorted(p for p in Path(path).rglob("*") if p.is_file()):
            h.update(f"{f.relative_to(path)}\0".encode())
            with f.open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
        with warnings.catch_warnings():  # MLflow registers two local-file sources; either will do
            warnings.simplefilter("ignore", UserWarning)
            source = resolve_dataset_source(Path(path).resolve().as_uri())
    else:
        h.update(json.dumps(data, sort_keys=True, default=str).encode())
        source = CodeDatasetSource({"loader": str(data.get("loader", data.get("name")))})
    return MetaDataset(source, name=str(cfg.data.name), digest=h.hexdigest()[:16])


def cell_logger_class():
    """Lightning's MLflow logger, writing into the cell's open run. The cell owns the run's
    lifecycle: Lightning would mark it FINISHED when training ends, before the reviews."""
    from lightning.pytorch.loggers import MLFlowLogger

    class CellLogger(MLFlowLogger):
        def log_hyperparams(self, params) -> None:
            # Paths (the triage checkpoint) are logged as absolute locations: a link to the file.
            params = params if not isinstance(params, Mapping) else {
                k: Path(v).resolve().as_uri() if isinstance(v, Path) else v for k, v in params.items()}
            super().log_hyperparams(params)

        def finalize(self, status: str = "success") -> None:
            pass

    return CellLogger


class CellInterrupted(BaseException):
    """SIGTERM (SLURM's time limit or preemption, `kill`) during a cell: ends its run as KILLED.
    A BaseException, like KeyboardInterrupt, so that a multirun does not record it as a failed
    cell and go on."""


@dataclass
class CellRun:
    run_id: str
    cfg: DictConfig

    def logger(self):
        """A Lightning logger writing the triage training curves into this run."""
        return cell_logger_class()(tracking_uri=self.cfg.tracking.uri, run_id=self.run_id)

    def log_result(self, result) -> None:
        """The finished cell's figures (metrics) and files (artifacts)."""
        with tempfile.TemporaryDirectory() as tmp:
            # Files first, outside the store lock: parallel jobs wait only for the MLflow writes.
            tmp = Path(tmp)
            result.predictions.write_parquet(tmp / "predictions.parquet")
            (tmp / "evidence_samples.json").write_text(json.dumps(result.samples, indent=1, default=str))
            if "score" in result.predictions.columns:  # KG-FM has no triage scores to plot
                score_figure(result.predictions, result.band, result.gnn_threshold).savefig(
                    tmp / "score_distribution.png", dpi=120)
            with store(self.cfg.tracking) as mlflow:
                mlflow.set_tags(result.tags)
                metrics = {k: float(v) for k, v in result.metrics.items() if v is not None}
                mlflow.log_metrics(metrics, step=self._last_step(mlflow, metrics))
                mlflow.log_artifacts(str(tmp))

    def _last_step(self, mlflow, metrics: Mapping) -> int:
        """The highest step the run already holds for any of ``metrics``' names. The triage training
        curves (val_ap, val_f1 per epoch: hygrail/triage/module.py) share names with the cell's
        figures, and MLflow shows a metric's value at its highest step: logged at step 0 the cell's
        val_ap would read as the last epoch's. At the curves' last step, and later, the figure wins."""
        client = mlflow.MlflowClient()
        shared = client.get_run(self.run_id).data.metrics.keys() & metrics.keys()
        return max((m.step for k in shared for m in client.get_metric_history(self.run_id, k)), default=0)


@contextmanager
def cell_run(cfg: DictConfig, sweep: str | None) -> Iterator[CellRun]:
    """The cell's MLflow run, open for the duration of the block: RUNNING with tags, params, the
    redacted config artifact and the dataset input; FINISHED when the block ends, FAILED (tag
    ``failure``: the one-line reason; artifact ``error.txt``: the traceback) when it raises, KILLED
    on KeyboardInterrupt or SIGTERM."""
    from hygrail.redact import redact, redact_config

    t = cfg.tracking
    config = redact_config(cell_config(cfg))
    tags = cell_tags(cfg, sweep)
    run_name = "/".join(tags.get(g, "-") for g in ("relation", "backbone", "method", "llm", "evidence"))
    ds = dataset(cfg)
    with store(t) as mlflow:
        run_id = mlflow.start_run(experiment_id=experiment_id(mlflow, t), run_name=run_name, tags=tags).info.run_id
    # Python's default SIGTERM handling ends the process with no cleanup: the run would stay RUNNING.
    own_signal = threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is not None
    previous = signal.signal(signal.SIGTERM, _raise_interrupted) if own_signal else None
    status, failure = "FAILED", None
    try:
        with store(t) as mlflow, tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "config.yaml").write_text(OmegaConf.to_yaml(config))
            mlflow.log_params(flatten(config))  # MLflow batches them (100 per request) itself
            mlflow.log_input(ds, context="training")
            mlflow.log_artifact(str(Path(tmp) / "config.yaml"))
        yield CellRun(run_id, cfg)
        status = "FINISHED"
    except (KeyboardInterrupt, CellInterrupted):
        status = "KILLED"
        raise
    except BaseException as e:
        failure = e
        raise
    finally:
        if own_signal:
            signal.signal(signal.SIGTERM, previous)
        with store(t) as mlflow:
            if failure is not None:
                mlflow.set_tag("failure", redact(one_line(failure))[:5000])
                with tempfile.TemporaryDirectory() as tmp:
                    tb = "".join(traceback.format_exception(failure))
                    (Path(tmp) / "error.txt").write_text(redact(tb))
                    mlflow.log_artifact(str(Path(tmp) / "error.txt"))
            mlflow.end_run(status)


def _raise_interrupted(signum, frame):
    raise CellInterrupted(f"signal {signal.Signals(signum).name}")


def one_line(error: BaseException) -> str:
    """An error as one line: its message (with the type when the message alone would be unclear)."""
    from hygrail.kg import DataError
    from hygrail.review.contract import LLMCallError

    msg = " ".join(str(error).split())
    if isinstance(error, (DataError, LLMCallError)) and msg:
        return msg
    return f"{type(error).__name__}: {msg}" if msg else type(error).__name__


def log_cell(cfg: DictConfig, result, sweep: str | None) -> str:
    """Log an already computed cell as one finished run (scripts and tests; the sweep uses
    ``cell_run`` so that the run is live while the cell computes)."""
    with cell_run(cfg, sweep) as cell:
        cell.log_result(result)
    return cell.run_id


def method_label(cfg: DictConfig) -> str:
    """The paper's row names (Table 2): GNN, HyGRAIL-NE/-Auto/-LLM, TSH, KG-FM, and the structural
    baselines' (hygrail/baselines/structural.py); " + compatibility" where the compatibility
    descriptor is on (TSH's ``method.compatible``, a plus backbone's ``backbone.head_compatible``). A
    decision threshold other than the paper's max-F1 (``routing.threshold``) is named in brackets,
    "GNN (half_max_f1)", so a sweep over the rule gives rows side by side; KG-FM decides without one."""
    m = cfg.method.name
    if m == "hygrail":
        label = str(cfg.evidence.label)  # each evidence mode names its row (conf/evidence/*.yaml)
    elif m == "structural":
        from hygrail.baselines.structural import label as heuristic_label

        label = heuristic_label(cfg.method)  # PA, CN, AA, 3-paths, L3, degree prior
    else:
        from hygrail.baselines.kge import LABEL as KGE_LABEL
        from hygrail.baselines.transitions import LABEL as GBDT_LABEL

        label = {"gnn_only": "GNN", "tsh": "TSH", "kgfm": "KG-FM", "gbdt": GBDT_LABEL, "kge": KGE_LABEL}.get(m, m)
    # the compatibility descriptor (hygrail/descriptors.py) is an option with rows of its own: "TSH +
    # compatibility" beside "TSH", "GNN + compatibility" beside "GNN" (a plus backbone's head reads it)
    if (m == "tsh" and cfg.method.get("compatible")) or (m in ("gnn_only", "hygrail") and cfg.backbone.get("head_compatible")):
        label += " + compatibility"
    rule = cfg.routing.threshold
    label = label if m == "kgfm" or rule == "max_f1" else f"{label} ({rule})"
    # split.graph_cut=time is another protocol than the paper's: its rows carry it
    return f"{label} (time cut)" if cfg.split.get("graph_cut", "relation") == "time" else label


def score_figure(predictions: pl.DataFrame, band: tuple[float, float] | None, threshold: float | None):
    """Paper Fig. 2: validation score distribution by label, with the routed band [a*, b*]; logged
    as every cell's artifact score_distribution.png."""
    import matplotlib

    matplotlib.use("Agg")  # figures are files; no display on servers
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    val = predictions.filter(pl.col("split") == "val")
    # Triage scores of a 1:20 task crowd near 0: zoom to where they are, not the whole [0, 1].
    bins = np.linspace(0, min(1.0, max(0.05, 1.05 * float(predictions["score"].max()))), 41)
    for label, colour, name in ((0, "tab:blue", "negative"), (1, "tab:red", "positive")):
        s = val.filter(pl.col("label") == label)["score"].to_numpy()
        ax.hist(s, bins=bins, alpha=0.6, color=colour, label=f"{name} ({len(s)})", density=True)
    if band is not None:
        ax.axvspan(band[0], band[1], color="grey", alpha=0.2, label=f"routed [{band[0]:.3f}, {band[1]:.3f}]")
    if threshold is not None:
        ax.axvline(threshold, color="black", ls="--", lw=1, label=f"GNN F1 threshold {threshold:.3f}")
    ax.set_xlabel("GNN score")
    ax.set_ylabel("density (validation)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def ui_links(uri: str, base: str) -> list[str]:
    """A link per experiment of the store that opens its runs in the MLflow UI served at ``base``.
    MLflow 3.17's UI opens every experiment on its GenAI pages unless the address asks for model
    training (``workflowType=machine_learning``): its workflow switch, not the experiment's kind
    tag, decides (read from the UI's bundle; checked in headless Chromium, tests/test_cluster.py)."""
    import mlflow

    mlflow.set_tracking_uri(uri)
    return [f"{e.name}: {base.rstrip('/')}/#/experiments/{e.experiment_id}?workflowType=machine_learning"
            for e in mlflow.search_experiments() if e.name != "Default"]


if __name__ == "__main__":  # python -m hygrail.tracking <uri> <ui base url>: the links `make ui` prints
    import sys

    print("\n".join(ui_links(sys.argv[1], sys.argv[2])))

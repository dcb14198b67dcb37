"""The Hydra app: ``python -m hygrail.sweep [-m] group=option ...``.

Only composes: loads the KG the config names and runs the requested task. Every stage it calls is
a plain function elsewhere.

A cell that fails is a recorded failure, not the end of a sweep. In a multirun every job records
its outcome (``cell.json`` in its job folder: finished, failed with the one-line reason, or skipped
as already done) and its MLflow run ends FINISHED or FAILED; the other cells run on, and
``SweepSummary`` (a Hydra callback) prints the counts at the end and exits non-zero when any cell
failed. A single run stops with a one-line ``error: ...`` as before. Before any training, a cell
that needs a served LLM asks each of its endpoints for its model list once (``probe``): with no
server up, the design card's two-cell sweep failed after 91 s of training and 389 doomed requests;
it now fails each cell in seconds.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from hygrail.kg import DataError
from hygrail.redact import redact
from hygrail.review.contract import LLMCallError

log = logging.getLogger("hygrail.sweep")
STATUS_FILE = "cell.json"


def check_data(cfg: DictConfig) -> None:
    """``data.schema=mybio`` (Hydra's key=value) replaces the schema with the string "mybio"; the
    schema file is chosen with the group syntax ``data/schema=mybio``. Said in one line here, before
    the loader would fail on the string with a TypeError."""
    schema = cfg.data.get("schema")
    if not isinstance(schema, DictConfig):
        name = schema if isinstance(schema, str) and schema else "<name>"
        raise DataError(f"data.schema={schema} is not a schema: key=value sets a string; select the file "
                        f"data/schema/{name}.yaml with data/schema={name} (in conf/ or under --config-dir), or "
                        f"use the data config python -m hygrail.data.init writes (data=<name>)")


def stats(cfg: DictConfig) -> dict:
    from hygrail.data import load_kg
    from hygrail.data.stats import format_tables, kg_stats, split_stats

    kg = load_kg(OmegaConf.to_container(cfg.data, resolve=True))
    figures = kg_stats(kg)
    splits = split_stats(kg, cfg.split)
    if cfg.format == "json":
        print(json.dumps(figures | {"splits": splits}, indent=2))
    else:
        print(format_tables(figures, splits, other_edges=cfg.data.schema.get("stats_other_edges", "each")))
    return {"status": "finished"}


def run(cfg: DictConfig) -> dict:
    """One cell: probe the LLM, train/score (cached), route, review (cached), calibrate; live in
    its MLflow run from start to end."""
    from hygrail import tracking

    label = cell_label(cfg)
    if cfg.resume and (done := tracking.finished_run(cfg)):
        log.info("cell %s already finished as MLflow run %s; skipping (resume=false reruns it)", label, done)
        return {"status": "skipped", "cell": label, "run_id": done}
    hc = HydraConfig.get()
    sweep = hc.sweep.dir if hc.mode == RunMode.MULTIRUN else hc.run.dir
    with tracking.cell_run(cfg, sweep) as cell:
        from hygrail.stages import check_config

        check_config(cfg)  # before torch and Lightning are imported (~6 s): a down server fails in seconds
        import torch

        from hygrail.pipeline import run_cell

        torch.set_num_threads(int(cfg.threads))
        result = run_cell(cfg, logger=cell.logger())
        cell.log_result(result)
    line = result_line(label, result.metrics, cell.run_id)
    print(line, flush=True)  # stdout holds results
    logging.getLogger("hygrail.result").info("%s", line)  # and the job's log file (conf/config.yaml: file only)
    return {"status": "finished", "cell": label, "run_id": cell.run_id}


# The methods that train and read the triage GNN (``pipeline.run_gnn_only``, ``run_hygrail``): only
# their result lines name a backbone (issue #36: TSH's line read "hpo_dis_phe rgcn TSH", though TSH,
# KG-FM and the baselines train no GNN and one cell of theirs serves every backbone).
USES_BACKBONE = ("gnn_only", "hygrail")


def cell_label(cfg: DictConfig) -> str:
    """A cell's name on its result line: the relation, the backbone where the method uses one, the
    method's row name (``tracking.method_label``)."""
    from hygrail import tracking

    backbone = [str(cfg.backbone.name)] if cfg.method.name in USES_BACKBONE else []
    return " ".join([str(cfg.relation.name), *backbone, tracking.method_label(cfg)])


def result_line(label: str, m: dict, run_id: str) -> str:
    """The cell's one-line summary (terminal and the job's log file); a cell whose reviews partly
    fell back says so beside its label ("HyGRAIL-Auto (12% of reviews fell back)")."""
    from hygrail.review.stage import fallback_note

    note = fallback_note(m.get("review_fallback_share", 0.0))
    line = [f"{label} ({note}):" if note else f"{label}:"]
    if "gnn_test_f1" in m:  # TSH and KG-FM train no GNN
        line.append(f"GNN P/R/F1 {m['gnn_test_precision']:.3f}/{m['gnn_test_recall']:.3f}/{m['gnn_test_f1']:.3f} |")
    line.append(f"method P/R/F1 {m['test_precision']:.3f}/{m['test_recall']:.3f}/{m['test_f1']:.3f} |")
    if "band_a" in m:
        line.append(f"band [{m['band_a']:.3f}, {m['band_b']:.3f}] routes {m['band_test_call_rate']:.1%} of test |")
    line.append(f"LLM call rate {m['test_call_rate']:.1%}")
    if m.get("test_routed_unreviewed"):  # a review budget: say how much of the band the LLM decided
        line.append(f"(LLM reviewed {m['test_reviewed']:.0f} of {m['test_reviewed'] + m['test_routed_unreviewed']:.0f} routed)")
    line.append(f"| MLflow run {run_id}")
    return " ".join(line)


def discover(cfg: DictConfig) -> dict:
    """New hypotheses of one relation, ranked, reviewed and written up (hygrail/discovery)."""
    from hygrail.discovery import options

    options(cfg)  # discover.* errors before torch is imported (~5 s)
    from hygrail.discovery.run import main as discover_main

    return discover_main(cfg)


def recipes(cfg: DictConfig) -> dict:
    """Precursor sets a chemist can try, for named targets of the synthesis recipes (hygrail/recipes)."""
    from hygrail.recipes.page import main as recipes_main

    return recipes_main(cfg)


TASKS = {"stats": stats, "run": run, "discover": discover, "recipes": recipes}


def _record(outcome: dict) -> None:
    """The job's outcome, in its own folder, for SweepSummary (jobs may run on other machines)."""
    out = Path(HydraConfig.get().runtime.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / STATUS_FILE).write_text(json.dumps(outcome))


@hydra.main(config_path="../conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig):
    # auto reads the load once, here: read again later it would count this job's own work (a cold make
    # discover trained on one thread of two, the load average being its own name embedding and stack fit)
    cfg.threads = int(cfg.threads)
    if cfg.threads < 1:
        sys.exit(f"error: threads={cfg.threads}: expected >= 1")
    task = TASKS.get(cfg.task)
    if task is None:
        sys.exit(f"error: task={cfg.task!r}; expected one of {sorted(TASKS)}")
    multirun = HydraConfig.get().mode == RunMode.MULTIRUN
    try:
        check_data(cfg)
        outcome = task(cfg)
    except Exception as e:
        from hygrail.tracking import one_line

        reason = redact(one_line(e))
        if not multirun:
            if isinstance(e, (DataError, LLMCallError)):
                # Bad input or an unreachable LLM server: one line and a non-zero exit, never a traceback.
                sys.exit(f"error: {reason}")
            raise
        # One failed cell of a sweep: recorded (its MLflow run is FAILED with this reason), the rest run on.
        log.error("cell failed: %s", reason)
        outcome = {"status": "failed", "reason": reason}
    if multirun:
        _record(outcome)
    return outcome


class SweepSummary(Callback):
    """Hydra callback (``hydra.callbacks`` in conf/config.yaml). Before a multirun: refuses SQLite
    tracking on a cluster launcher. After it: the count of finished, failed and skipped cells from
    the jobs' ``cell.json`` files (a job with none was killed before it could write one), written to
    ``summary.json`` in the sweep folder; a non-zero exit when any cell failed."""

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        launcher = str(config.hydra.launcher.get("_target_", ""))
        uri = str(config.get("tracking", {}).get("uri", ""))
        if "Slurm" in launcher and uri.startswith("sqlite:"):
            # SystemExit passes Hydra's callback guard (it catches Exception only): nothing is submitted.
            sys.exit(f"error: tracking.uri={uri}: SQLite on a cluster's shared filesystem is unsafe; start an MLflow "
                     f"tracking server (make tracking-server) and pass tracking.uri=http://<host>:<port>")

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        root = Path(str(config.hydra.sweep.dir))
        jobs = sorted({p.parent.parent for p in root.rglob(".hydra/config.yaml")})
        counts = {"finished": 0, "failed": 0, "skipped": 0}
        failed = []
        for job in jobs:
            status = job / STATUS_FILE
            outcome = json.loads(status.read_text()) if status.is_file() else {
                "status": "failed", "reason": "no outcome recorded (job killed?)"}
            counts[outcome["status"]] = counts.get(outcome["status"], 0) + 1
            if outcome["status"] == "failed":
                failed.append(f"  {job.relative_to(root)}: {outcome['reason']}")
        summary = f"sweep {root}: {counts['finished']} finished, {counts['failed']} failed, {counts['skipped']} skipped as done"
        (root / "summary.json").write_text(json.dumps(counts | {"failed_cells": failed}, indent=1))
        print("\n".join([summary, *failed]), flush=True)
        if counts["failed"]:
            sys.exit(f"error: {counts['failed']} of {len(jobs)} cells failed (reasons above; in MLflow: tag 'failure'); "
                     f"rerun the same command to run only those")


if __name__ == "__main__":
    main()

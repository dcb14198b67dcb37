"""The Hydra app: ``python -m hygrail.sweep [-m] group=option ...``.

Only composes: loads the KG the config names and runs the requested task. Every stage it calls is
a plain function elsewhere.
"""

from __future__ import annotations

import json
import sys

import hydra
from omegaconf import DictConfig, OmegaConf

from hygrail.kg import DataError
from hygrail.review.contract import LLMCallError


def stats(cfg: DictConfig) -> dict:
    from hygrail.data import load_kg
    from hygrail.data.stats import format_tables, kg_stats, split_stats

    kg = load_kg(OmegaConf.to_container(cfg.data, resolve=True))
    figures = kg_stats(kg)
    splits = split_stats(kg, cfg.split)
    if cfg.format == "json":
        print(json.dumps(figures | {"splits": splits}, indent=2))
    else:
        print(format_tables(figures, splits))
    return figures | {"splits": splits}


def run(cfg: DictConfig) -> dict:
    """One cell: train/score (cached), route, review (cached), calibrate, log to MLflow."""
    from hydra.core.hydra_config import HydraConfig

    import torch  # here, not in main(): task=stats needs no torch (~2 s to import)

    from hygrail import tracking
    from hygrail.pipeline import run_cell

    torch.set_num_threads(int(cfg.threads))
    check_config(cfg)
    if cfg.resume and (done := tracking.finished_run(cfg)):
        print(f"cell {tracking.method_label(cfg)} already finished as MLflow run {done}; skipping (resume=false reruns it)")
        return {}
    hc = HydraConfig.get()
    sweep = hc.sweep.dir if hc.mode.name == "MULTIRUN" else hc.run.dir
    result = run_cell(cfg)
    run_id = tracking.log_cell(cfg, result, sweep)
    m = result.metrics
    line = [f"{cfg.relation.name} {cfg.backbone.name} {tracking.method_label(cfg)}:"]
    if "gnn_test_f1" in m:  # TSH and KG-FM train no GNN
        line.append(f"GNN P/R/F1 {m['gnn_test_precision']:.3f}/{m['gnn_test_recall']:.3f}/{m['gnn_test_f1']:.3f} |")
    line.append(f"method P/R/F1 {m['test_precision']:.3f}/{m['test_recall']:.3f}/{m['test_f1']:.3f} |")
    if "band_a" in m:
        line.append(f"band [{m['band_a']:.3f}, {m['band_b']:.3f}] routes {m['band_test_call_rate']:.1%} of test |")
    line.append(f"LLM call rate {m['test_call_rate']:.1%} | MLflow run {run_id}")
    print(" ".join(line))
    return m


def check_config(cfg: DictConfig) -> None:
    """Options that would otherwise fail only after a cell's GNN training (or not at all)."""
    from hygrail.evidence.mode import load_mode
    from hygrail.review.client import llm_settings

    if cfg.method.name in ("hygrail", "kgfm"):
        context = cfg.method.context if cfg.method.name == "kgfm" else cfg.evidence
        load_mode(OmegaConf.to_container(context, resolve=True), OmegaConf.to_container(cfg.relation.templates))
        try:
            llm_settings(cfg.llm)
        except ValueError as e:
            raise DataError(str(e)) from None


def discover(cfg: DictConfig) -> dict:
    """New hypotheses of one relation, ranked, reviewed and written up (hygrail/discovery)."""
    from hygrail.discovery import options

    options(cfg)  # discover.* errors before torch is imported (~5 s)
    import torch

    from hygrail.discovery.run import main as discover_main

    torch.set_num_threads(int(cfg.threads))
    check_config(cfg)
    return discover_main(cfg)


TASKS = {"stats": stats, "run": run, "discover": discover}


@hydra.main(config_path="../conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig):
    if int(cfg.threads) < 1:
        sys.exit(f"error: threads={cfg.threads}: expected >= 1")
    task = TASKS.get(cfg.task)
    if task is None:
        sys.exit(f"error: task={cfg.task!r}; expected one of {sorted(TASKS)}")
    try:
        return task(cfg)
    except (DataError, LLMCallError) as e:
        # Bad input or an unreachable LLM server: one line and a non-zero exit, never a traceback.
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    main()

"""GNN triage benchmark (issue 3): speed of the Lightning training, quality of the scores, the band.

    .venv/bin/python bench/bench_triage.py                          # all three backbones + full-size run
    .venv/bin/python bench/bench_triage.py --backbones hgt --skip-full
    .venv/bin/python bench/bench_triage.py --epochs 10 --skip-full   # quick look

Per backbone, on the paper-size synthetic MatKG (3,000 nodes; relation --relation, default chm_apl),
with the paper's epochs (conf/backbone/*.yaml):
  - seconds per epoch of the Lightning module (lean Trainer, as the pipeline runs it) and of the same
    module driven by a plain PyTorch loop (same steps, same validation); ratio target <= 1.15.
    After an untimed warm-up fit, each is timed --repeats times, interleaved, and the fastest kept
    (the machine is shared).
  - val/test AUC, GNN-only precision/recall/F1 on test at the val max-F1 threshold;
  - the purity band [a*, b*] for conf/routing/default.yaml's m, n (or --m/--n) and val/test call rates.
Full size (--full-scale 23.334: ~70k nodes, ~2.7 M edges): --full-backbone trained full-batch for
--full-epochs epochs; peak RSS of the process. Skipped with --skip-full, or when one epoch would
make the run exceed --full-budget seconds.
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import numpy as np
import torch
from omegaconf import OmegaConf
from sklearn.metrics import precision_recall_fscore_support, roc_auc_score

from hygrail.data import data_config, load_kg
from hygrail.data.split import temporal_split
from hygrail.triage.routing import f1_threshold, purity_interval, route
from hygrail.triage.train import build_module, fit, predict

CONF = Path(__file__).resolve().parents[1] / "conf"


def backbone_cfg(name: str, epochs: int | None) -> dict:
    cfg = OmegaConf.to_container(OmegaConf.load(CONF / f"backbone/{name}.yaml"))
    if epochs is not None:
        cfg["epochs"] = epochs
    return cfg


def plain_loop(split, cfg: dict, seed: int) -> float:
    """The same module, steps and validation schedule as ``fit``, without Lightning: seconds."""
    import lightning as L

    L.seed_everything(seed, verbose=False)
    module, batches = build_module(split, cfg)
    opt = module.configure_optimizers()
    t0 = time.perf_counter()
    for epoch in range(1, int(cfg["epochs"]) + 1):
        module.train()
        loss = module.training_step(batches["train"], 0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if epoch % int(cfg["val_every"]) == 0:
            module.eval()
            with torch.no_grad():
                module.validation_step(batches["val"], 0)
    return time.perf_counter() - t0


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def small_graph(args, m: float, n: float) -> None:
    t0 = time.perf_counter()
    kg = load_kg(data_config(scale=1.0))
    split = temporal_split(kg, kg.schema.relation(args.relation), seed=args.seed)
    print(f"{kg}; split {split.counts()} ({time.perf_counter() - t0:.1f} s)")
    y_val, y_test = split.part("val")["label"].to_numpy(), split.part("test")["label"].to_numpy()
    print(f"band purity m={m}, n={n}")
    header = (f"{'backbone':<11}{'epochs':>7}{'L s/ep':>8}{'plain s/ep':>11}{'ratio':>7}{'fit s':>7}{'best':>5}"
              f"{'valAUC':>8}{'testAUC':>8}{'P':>7}{'R':>7}{'F1':>7}{'a*':>8}{'b*':>8}{'val call':>9}{'test call':>10}")
    print(header)
    for name in args.backbones.split(","):
        cfg = backbone_cfg(name, args.epochs)
        epochs = int(cfg["epochs"])
        # Untimed warm-up: the first fit of a backbone in a process pays one-off costs (PyG
        # generates its message-passing code, allocator warm-up) that would all land on the first mode.
        fit(split, cfg | {"epochs": 2, "val_every": 1}, args.seed)
        runs, plains = [], []
        for _ in range(args.repeats):  # interleaved, so that load from other processes hits both
            runs.append(fit(split, cfg, args.seed))
            plains.append(plain_loop(split, cfg, args.seed))
        run, plain = min(runs, key=lambda r: r.seconds), min(plains)
        s_val, s_test = run.scores["val"], run.scores["test"]
        t = f1_threshold(s_val, y_val)
        p, r, f1, _ = precision_recall_fscore_support(y_test, s_test >= t, average="binary", zero_division=0)
        band = purity_interval(s_val, y_val, m, n)
        call_val, call_test = np.mean(route(s_val, band) == -1), np.mean(route(s_test, band) == -1)
        print(f"{name:<11}{epochs:>7}{run.seconds / epochs:>8.3f}{plain / epochs:>11.3f}{run.seconds / plain:>7.2f}"
              f"{run.seconds:>7.1f}{run.best_epoch:>5}{roc_auc_score(y_val, s_val):>8.3f}"
              f"{roc_auc_score(y_test, s_test):>8.3f}{p:>7.3f}{r:>7.3f}{f1:>7.3f}{band.a:>8.4f}{band.b:>8.4f}"
              f"{call_val:>9.1%}{call_test:>10.1%}", flush=True)


def full_graph(args) -> None:
    """Full batch: PyG's neighbour samplers need pyg-lib or torch-sparse, neither of which has a wheel
    for this torch; and one full-batch step over the whole graph fits in memory (measured here)."""
    t0 = time.perf_counter()
    kg = load_kg(data_config(scale=args.full_scale))
    split = temporal_split(kg, kg.schema.relation(args.relation), seed=args.seed)
    print(f"\nfull size: {kg}; {split.pairs.height} hypotheses; generated + split in "
          f"{time.perf_counter() - t0:.0f} s; peak RSS so far {peak_rss_gb():.2f} GB")
    cfg = backbone_cfg(args.full_backbone, 1) | {"val_every": 1}
    t0 = time.perf_counter()
    module, batches = build_module(split, cfg)
    built = time.perf_counter() - t0
    opt = module.configure_optimizers()
    t0 = time.perf_counter()
    module.train()
    loss = module.training_step(batches["train"], 0)
    opt.zero_grad()
    loss.backward()
    opt.step()
    epoch = time.perf_counter() - t0
    print(f"{args.full_backbone}: inputs built in {built:.1f} s; one full-batch epoch {epoch:.1f} s; "
          f"peak RSS {peak_rss_gb():.2f} GB")
    if epoch * (args.full_epochs + 1) > args.full_budget:
        print(f"skipping the {args.full_epochs}-epoch fit: it would exceed --full-budget {args.full_budget:.0f} s")
        return
    run = fit(split, cfg | {"epochs": args.full_epochs, "val_every": args.full_epochs}, args.seed)
    y_val = split.part("val")["label"].to_numpy()
    t0 = time.perf_counter()
    predict(run.module, batches["test"])
    print(f"{args.full_backbone} full-batch fit: {args.full_epochs} epochs in {run.seconds:.1f} s "
          f"({run.seconds / args.full_epochs:.1f} s/epoch incl. validation); val AUC {roc_auc_score(y_val, run.scores['val']):.3f}; "
          f"scoring the test split {time.perf_counter() - t0:.1f} s; peak RSS {peak_rss_gb():.2f} GB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--relation", default="chm_apl")
    ap.add_argument("--backbones", default="heteroconv,hgt,rgcn")
    ap.add_argument("--epochs", type=int, default=None, help="override the paper's epochs (quick runs)")
    ap.add_argument("--repeats", type=int, default=2, help="timings per mode; the fastest is kept")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--m", type=float, default=None)
    ap.add_argument("--n", type=float, default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--skip-full", action="store_true")
    ap.add_argument("--full-scale", type=float, default=23.334)
    ap.add_argument("--full-backbone", default="heteroconv")
    ap.add_argument("--full-epochs", type=int, default=3)
    ap.add_argument("--full-budget", type=float, default=300.0, help="seconds; the full-size fit is skipped beyond")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    routing = OmegaConf.load(CONF / "routing/default.yaml")
    m = args.m if args.m is not None else float(routing.m)
    n = args.n if args.n is not None else float(routing.n)
    small_graph(args, m, n)
    if not args.skip_full:
        full_graph(args)


if __name__ == "__main__":
    main()

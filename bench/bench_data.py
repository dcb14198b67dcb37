"""Data-layer benchmark on a full-MatKG-size synthetic graph, plus the small graph's calibration.

    python bench/bench_data.py                     # calibration at scale 1, then the full-size run
    python bench/bench_data.py --scale 5 --skip-calibration
    python bench/bench_data.py --profile           # cProfile of load / adjacency / split

Full-size run (default scale 23.334: ~70k nodes, ~2.7 M undirected edges): generate and save in
one process, then load, build the adjacency and split one relation in a fresh one, so that the
second process's peak memory is what a run on the real release would need.
Target (issue 2): load + adjacency + split <= 60 s and <= 4 GB.

Calibration (scale 1): Table 5/6 split sizes per relation and Adamic-Adar AUC of val/test
positives against their negatives on the training graph (planted structure: learnable, not trivial).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from hygrail.data import data_config

# Paper Table 6: (pos, neg) per split.
TABLE6 = {
    "chm_apl": [(137, 2714), (18, 390), (39, 776)],
    "chm_pro": [(437, 8691), (58, 1246), (126, 2483)],
    "pro_apl": [(152, 3023), (21, 432), (43, 865)],
    "smt_pro": [(98, 1930), (13, 277), (27, 553)],
    "chm_smt": [(106, 2128), (15, 304), (31, 608)],
    "chm_dsc": [(213, 4255), (31, 608), (60, 1217)],
    "chm_cmt": [(270, 5389), (38, 771), (77, 1540)],
}




def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB


class Steps:
    def __init__(self) -> None:
        self.total = 0.0

    def run(self, name: str, fn, *args):
        t = time.perf_counter()
        out = fn(*args)
        dt = time.perf_counter() - t
        self.total += dt
        print(f"  {name:<28} {dt:8.2f} s   peak RSS {peak_gb():6.2f} GB", flush=True)
        return out


def make(folder: Path, scale: float, seed: int) -> None:
    from hygrail.data.csv import save_csv
    from hygrail.data.synthetic import generate
    from hygrail.kg import Schema

    cfg = data_config(scale=scale, seed=seed)
    steps = Steps()
    kg = steps.run("generate", generate, Schema.from_config(cfg["schema"]), cfg)
    print(f"  {kg}")
    steps.run("save_csv", save_csv, kg, folder)
    sizes = {p.name: p.stat().st_size / 2**20 for p in folder.glob("*.csv")}
    print("  files: " + ", ".join(f"{k} {v:.0f} MB" for k, v in sorted(sizes.items())))


def load(folder: Path, relation: str, profile: bool) -> None:
    from hygrail.data.csv import load_csv
    from hygrail.data.split import temporal_split
    from hygrail.kg import Schema

    schema = Schema.from_config(data_config()["schema"])
    steps = Steps()
    prof = cProfile.Profile() if profile else None
    if prof:
        prof.enable()
    kg = steps.run("load_csv", load_csv, folder / "nodes.csv", folder / "edges.csv", schema)
    steps.run("adjacency", lambda: kg.adjacency)
    split = steps.run(f"temporal_split({relation})", temporal_split, kg, schema.relation(relation))
    if prof:
        prof.disable()
    counts = split.counts()
    print("  split: " + ", ".join(f"{s} {c['pos']}+{c['neg']}" for s, c in counts.items()))
    verdict = "OK" if steps.total <= 60 and peak_gb() <= 4 else "OVER TARGET"
    print(f"  load+adjacency+split: {steps.total:.1f} s, peak RSS {peak_gb():.2f} GB"
          f"  (target <= 60 s, <= 4 GB: {verdict})")
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


def calibration(seeds: tuple[int, ...]) -> None:
    from sklearn.metrics import roc_auc_score

    from hygrail.data.split import temporal_split
    from hygrail.data.synthetic import BRIDGE, NOISE, generate_with_topics
    from hygrail.kg import Schema

    cfg = data_config()
    schema = Schema.from_config(cfg["schema"])
    print("Calibration at scale 1 (paper Tables 5-6; Adamic-Adar AUC on the training graph)")
    print(f"  {'relation':<9} {'split':<6} {'pos':>4} {'T6 pos':>6} {'total':>6} {'T6 tot':>6} {'dev':>6}"
          f"  {'AA AUC':>6} {'pos AA=0':>8} {'neg AA>0':>8} {'cross':>6}")
    totals = np.zeros((2, 3))
    for seed in seeds:
        kg, planted = generate_with_topics(schema, dict(cfg, seed=seed))
        for name, rel in schema.relations.items():
            split = temporal_split(kg, rel)
            adj = (split.train_graph.adjacency > 0).astype(float).tocsr()
            deg = np.asarray(adj.sum(axis=1)).ravel()
            inv_log = np.where(deg > 1, 1 / np.log(np.maximum(deg, 2)), 0.0)
            edges = kg.relation_edges(rel)
            for i, part in enumerate(("train", "val", "test")):
                p = split.part(part)
                u, v, y = p["src"].to_numpy(), p["dst"].to_numpy(), p["label"].to_numpy()
                pos = int(y.sum())
                t6 = sum(TABLE6[name][i])
                if seed == seeds[0]:
                    totals[:, i] += (len(y), t6)
                pos_edges = edges.join(p.filter(p["label"] == 1), on=["src", "dst"])["edge_id"].to_numpy()
                cross = np.isin(planted.channel[pos_edges], [BRIDGE, NOISE]).mean()
                if part == "train":
                    auc, zero, nonzero = float("nan"), float("nan"), float("nan")
                else:
                    aa = np.asarray(adj[u].multiply(adj[v]) @ inv_log).ravel()
                    auc = roc_auc_score(y, aa)
                    zero, nonzero = (aa[y == 1] == 0).mean(), (aa[y == 0] > 0).mean()
                print(f"  {name:<9} {part:<6} {pos:>4} {TABLE6[name][i][0]:>6} {len(y):>6} {t6:>6} "
                      f"{len(y) / t6 - 1:>+6.1%}  {auc:>6.3f} {zero:>8.2f} {nonzero:>8.2f} {cross:>6.2f}"
                      f"  (seed {seed})")
    dev = totals[0] / totals[1] - 1
    print("  Table 6 Total row: " + ", ".join(
        f"{s} {int(a)} vs {int(b)} ({d:+.2%})" for s, a, b, d in zip(("train", "val", "test"), *totals, dev)))
    print("  cross = share of positives from the bridge/noise channels (cross-topic links)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=23.334)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--relation", default="chm_apl")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--skip-calibration", action="store_true")
    ap.add_argument("--phase", choices=["make", "load"], help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase == "make":
        return make(args.folder, args.scale, args.seed)
    if args.phase == "load":
        return load(args.folder, args.relation, args.profile)
    if not args.skip_calibration:
        calibration(seeds=(0, 1))
    with tempfile.TemporaryDirectory() as tmp:
        for phase in ("make", "load"):
            print(f"Full-size synthetic MatKG (scale {args.scale}): {phase} (fresh process)", flush=True)
            cmd = [sys.executable, __file__, "--phase", phase, "--folder", tmp, "--scale", str(args.scale),
                   "--seed", str(args.seed), "--relation", args.relation] + (["--profile"] if args.profile else [])
            subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()

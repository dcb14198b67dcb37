"""Whole-graph retrospective cost (issue #34): wall time and peak memory of one ``make retro`` cell.

    python bench/bench_retro.py                                   # HPO 2015 and the recipes 2014
    python bench/bench_retro.py --cells hpo:2012,hpo:2015,hpo:2018,synthesis_recipes:2010,synthesis_recipes:2014
    python bench/bench_retro.py --cells hpo:2015 --args "backbone=hgt"

Each cell runs ``python -m hygrail.sweep experiment=retro_<data> discover.cutoff=<year>`` in a
process of its own (training on one torch thread, as the Makefile sets; scoring and evaluation on
the experiment's ``discover.threads``, 2): train the GNN on the split of the cut
graph (or read it from the cache: say ``--fresh`` to train again in an empty cache folder), score
every candidate exactly from the cut graph, every baseline, the whole-space grid and every entity.
It prints the wall seconds, the child's peak RSS (``ru_maxrss``: the largest process of the cell),
the seconds of each stage (training the GNN, fitting the stacked ranker ``stack_fit``, scoring,
evaluating, the per-entity rows) and the headline rows (3 years, every degree, >= 1 reference) from the run's metrics.json, against
the targets: <= 30 min and <= 4 GB a cell on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S, TARGET_GB = 30 * 60, 4.0


def run_cell(data: str, cutoff: int, extra: list[str], outputs: Path) -> dict:
    out = outputs / "retro" / f"{data}-{cutoff}"
    cmd = [sys.executable, "-m", "hygrail.sweep", f"experiment=retro_{data}", f"discover.cutoff={cutoff}",
           f"discover.out={out}", *extra]
    env = os.environ | {"HYGRAIL_OUTPUTS": str(outputs), "OMP_NUM_THREADS": "1", "HYGRAIL_THREADS": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env)
    seconds = time.perf_counter() - t0
    peak_gb = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before) / 2**20
    if done.returncode:
        raise SystemExit(f"{data} {cutoff}: {shlex.join(cmd)} exited {done.returncode}")
    return {"seconds": seconds, "peak_gb": peak_gb, "metrics": json.loads((out / "metrics.json").read_text()), "out": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cells", default="hpo:2015,synthesis_recipes:2014", help="data:cutoff,...")
    ap.add_argument("--args", default="", help="more Hydra overrides for every cell")
    ap.add_argument("--fresh", action="store_true", help="an empty outputs folder: train every model again")
    a = ap.parse_args()
    outputs = Path(tempfile.mkdtemp(prefix="bench-retro-")) if a.fresh else Path(os.environ.get("HYGRAIL_OUTPUTS", ROOT / "outputs"))
    print(f"{'cell':<24} {'seconds':>8} {'peak GB':>8} {'candidates':>12} {'answers':>8}  within target")
    for cell in a.cells.split(","):
        data, year = cell.split(":")
        r = run_cell(data, int(year), shlex.split(a.args), outputs)
        m = r["metrics"]
        ok = r["seconds"] <= TARGET_S and r["peak_gb"] <= TARGET_GB
        print(f"{cell:<24} {r['seconds']:>8.0f} {r['peak_gb']:>8.2f} {int(m['discover_candidates']):>12,} "
              f"{int(m.get('retro_gnn_n_answers', 0)):>8,}  {'yes' if ok else 'NO'}")
        for key in sorted(k for k in m if k.startswith("retro_") and k.endswith("_auc")):
            print(f"    {key[6:-4]:<28} AUC {m[key]:.3f}  AP {m[key[:-4] + '_ap']:.4f}")
        stages = {k.removeprefix("discover_seconds_"): v for k, v in m.items() if k.startswith("discover_seconds_")}
        print("    seconds by stage: " + ", ".join(f"{k} {v:.0f}" for k, v in stages.items())
              + (f" (gnn training {m['gnn_fit_seconds']:.0f})" if m.get("gnn_fit_seconds") else ""))
        print(f"    report: {r['out'] / 'index.html'}", flush=True)


if __name__ == "__main__":
    main()

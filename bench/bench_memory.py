"""Training memory at real size (issue #27): peak RSS and epoch time, full batch against mini-batch.

    python bench/bench_memory.py                        # the table below, every cell in a fresh process
    python bench/bench_memory.py --kgs hpo --backbones rgcn --attribute

Cells: the full graphs of data=hpo (relation hpo_dis_phe) and data=synthesis_recipes (syn_tgt_pre),
and the full-size synthetic MatKG (data.scale=23.334, bench_discover.py's graph, chm_apl); default
splits (7:1:2, 20 negatives a positive). Each cell trains 2 epochs (validation once, then test
scored) by ``train.fit`` in a fresh process with one thread, and reports fit seconds / 2 and the
process's peak RSS (ru_maxrss: loading and setup included). Each process caps its address space at
--max-gb (an allocation past it fails there instead of the OOM killer hitting a neighbour). The
plus backbones run without name embeddings unless --names (embedding 36k names costs ~4 min).

Measured 2026-12-02 on this 2-core machine (one thread), under other load (rgcn = the paper's R-GCN config,
training=full vs training=minibatch with the default 65,536 pairs a step):

    KG                 backbone   training pairs full s/epoch  full GB mini s/epoch  mini GB GB ratio
    hpo                rgcn            3,723,909       failed     >17*        125.9     2.32        -
    synthesis_recipes  rgcn              999,726         20.3     6.51         30.1     1.63      4.0
    matkg_full         rgcn              781,410         50.2    12.68        181.6     3.08      4.1
    * an allocation of 6.0 GB refused at the 17 GB cap; uncapped, the OOM killer stopped it at 20.9 GB RSS

    KG                 backbone   training pairs full s/epoch  full GB mini s/epoch  mini GB GB ratio
    synthesis_recipes  rgcn_plus         999,726         41.8     2.14         44.0     1.40      1.5
    hpo                rgcn_plus       3,723,909         86.6     4.49        107.7     2.32      1.9

(rgcn_plus: names off, 4 folds, so a step is one fold's positives and fresh negatives, a quarter of
the pairs. Its full-size MatKG cells were not run to the end: the setup alone takes 561 s, below.)
Every R-GCN cell trains in <= 4 GB in mini-batches (at most 3.08 GB, the full-size MatKG); at real
size the full batch fits only for rgcn_plus on the recipes KG. Mini-batch epochs are slower where
the encoder is large (MatKG: 12 steps, each with a whole-graph encoder pass) or the steps many (hpo:
57). ``auto`` (``train.full_batch_gb``) picks mini-batches in every cell above, rgcn_plus on recipes
included: its estimate, 1.6 GB, is just over the 1.5 GB limit, though its full batch fits (2.14 GB).
The full-batch cells were measured while pair features were still computed all at once (now in
chunks of 65,536 in either mode: ``features.pair_features``), which lowers their setup peak only.

Where the memory goes (``--attribute``, full batch as before the option; per cell, fresh processes
stop after the setup (load, split, ``train.build_module``), then reset the peak (``VmHWM`` via
/proc/self/clear_refs) and run either one encoder forward + backward on the full training graph or
one decoder forward + backward over the first 250,000 pairs of a step with the node states fixed;
"held" is the RSS before that stage, "+" its own peak above it):

- hpo, rgcn (36,206 nodes, 212,372 edges, 3,723,909 pairs a step): setup peak 3.06 GB (pair
  features of all pairs at once), held 1.55; encoder +0.29 GB; decoder +1.20 GB for 250,000 pairs
  (5.0 KB a pair: 18 GB for the step's 3.7 M).
- synthesis_recipes, rgcn (20,952 nodes, 195,402 edges, 999,726 pairs): setup peak 1.73, held 0.88;
  encoder +0.52; decoder +1.11 GB for 250,000 pairs.
- matkg_full, rgcn (70,002 nodes, 2,689,567 edges, 781,410 pairs): setup peak 3.06, held 1.25;
  encoder +3.07 GB (49 relations x 2 layers of per-relation means kept for the weight gradient;
  1.52 GB as ``train.lean_rgcn`` computes it, which mini-batch training uses).
- matkg_full, rgcn_plus (195,363 pairs a fold step): setup 561 s, peak 2.90, held 2.86 GB (four
  fold graphs besides the training graph); encoder +5.39 GB; decoder +0.51 GB for the step's pairs.
So at real size pair scoring dominates (millions of pairs), except on the full-size MatKG, whose
2.7 M edges make the encoder as large; mini-batches bound the first, ``lean_rgcn`` halves the second.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import torch
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
KGS = {"hpo": "hpo_dis_phe", "synthesis_recipes": "syn_tgt_pre", "matkg_full": "chm_apl"}
FULL_SCALE = 23.334  # bench_discover.py's full-release size: 70,002 nodes, 2.7 M edges


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB


def hwm_gb() -> float:
    """Peak RSS since the last reset (``/proc/self/clear_refs``), unlike ru_maxrss which never resets."""
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmHWM"))
    return int(line.split()[1]) / 2**20


def rss_gb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**30


def load_split(kg_name: str):
    from hygrail.data import data_config, load_kg
    from hygrail.data.split import temporal_split

    if kg_name == "matkg_full":
        from bench_discover import full_kg

        kg = full_kg(FULL_SCALE)
    else:
        kg = load_kg(OmegaConf.to_container(OmegaConf.create(data_config(kg_name)), resolve=True))
    return temporal_split(kg, kg.schema.relation(KGS[kg_name]))


def backbone_cfg(name: str, overrides: list[str]) -> dict:
    cfg = OmegaConf.load(ROOT / "conf" / "backbone" / f"{name}.yaml")
    cfg.merge_with(OmegaConf.from_dotlist(overrides))
    return OmegaConf.to_container(cfg)


def one(args) -> None:
    """One cell in this process; prints a JSON line."""
    from hygrail.triage import train

    torch.set_num_threads(1)
    # An allocation past the cap fails in this process instead of the kernel's OOM killer picking
    # a process of the shared machine; address space is ~3.5 GB above RSS for torch here.
    cap = int(args.max_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    t0 = time.perf_counter()
    split = load_split(args.kg)
    cfg = backbone_cfg(args.backbone, ["epochs=2", "val_every=2", *args.set])
    out = {"load_seconds": time.perf_counter() - t0, "train_pairs": split.part("train").height,
           "nodes": split.train_graph.num_nodes, "edges": split.train_graph.edges.height}
    if args.stage == "fit":
        out["before_gb"] = rss_gb()
        run = train.fit(split, cfg, args.seed)
        out |= {"fit_seconds": run.seconds, "epoch_seconds": run.seconds / cfg["epochs"], "peak_gb": peak_gb()}
        print(json.dumps(out))
        return
    torch.manual_seed(args.seed)
    module, batches, train_data = train.build_module(split, cfg)
    out["setup_peak_gb"] = peak_gb()
    backbone, batch = module.backbone, train_data[0]
    g = module.graph if "fold" not in batch else module.fold_graphs[int(batch["fold"])]
    out["step_pairs"] = len(batch["src"])

    def encoder() -> None:
        z = backbone.encode(g)
        (sum(v.sum() for v in z.values()) if isinstance(z, dict) else z.sum()).backward()

    if args.stage == "encoder":
        out |= measure(encoder)
    else:  # the decoder over the step's first --pairs pairs, node states fixed (computed before the reset)
        with torch.no_grad():
            z = backbone.encode(g)
        z = {k: v.requires_grad_() for k, v in z.items()} if isinstance(z, dict) else z.requires_grad_()
        n = out["pairs_run"] = min(args.pairs, len(batch["src"]))
        feats = batch.get("pair_feats")
        out |= measure(lambda: backbone.decode(g, z, batch["src"][:n], batch["dst"][:n],
                                               None if feats is None else feats[:n]).sum().backward())
    print(json.dumps(out))


def measure(fn) -> dict:
    """RSS held before ``fn`` and ``fn``'s own peak above it (VmHWM reset first)."""
    held = rss_gb()
    Path("/proc/self/clear_refs").write_text("5")
    fn()
    return {"held_gb": held, "extra_gb": hwm_gb() - held}


def run_cell(args, kg: str, backbone: str, stage: str, overrides: list[str]) -> dict:
    """One cell in a fresh process (its own ru_maxrss); ``{"error": ...}`` when it failed, e.g. past --max-gb."""
    if backbone.endswith("_plus") and not args.names:
        overrides = ["names=null", *overrides]
    cmd = [sys.executable, __file__, "--one", "--kg", kg, "--backbone", backbone, "--stage", stage,
           "--seed", str(args.seed), "--max-gb", str(args.max_gb)]
    for o in [*args.set, *overrides]:
        cmd += ["--set", o]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        lines = [x for x in r.stderr.strip().splitlines() if x.strip()]
        return {"error": lines[-1][:160] if lines else f"exit {r.returncode}"}
    return json.loads(r.stdout.strip().splitlines()[-1])


def attribute(args) -> None:
    for kg in args.kgs:
        for bb in args.backbones:
            enc, pairs = (run_cell(args, kg, bb, s, ["training=full"]) for s in ("encoder", "pairs"))
            print(f"{kg} {bb}: {enc['nodes']:,} nodes, {enc['edges']:,} edges, {enc['train_pairs']:,} training pairs "
                  f"({enc['step_pairs']:,} a step); setup peak {enc['setup_peak_gb']:.2f} GB, then held "
                  f"{enc['held_gb']:.2f} GB; encoder forward + backward +{enc['extra_gb']:.2f} GB; decoder over "
                  f"{pairs['pairs_run']:,} pairs +{pairs['extra_gb']:.2f} GB "
                  f"({pairs['extra_gb'] * 2**20 / pairs['pairs_run']:.1f} KB a pair)", flush=True)


def table(args) -> None:
    """Full batch against mini-batch: seconds per epoch and peak RSS, each cell in its own process."""
    print(f"{'KG':<18} {'backbone':<10} {'training pairs':>14} {'full s/epoch':>12} {'full GB':>8} "
          f"{'mini s/epoch':>12} {'mini GB':>8} {'GB ratio':>8}")
    for kg in args.kgs:
        for bb in args.backbones:
            full = run_cell(args, kg, bb, "fit", ["training=full"])
            mini = run_cell(args, kg, bb, "fit", ["training=minibatch"])
            pairs = mini.get("train_pairs", full.get("train_pairs", 0))

            def cell(r: dict) -> str:
                if "error" in r:
                    return f"{'failed':>12} {f'>{args.max_gb:.0f}*':>8}"
                return f"{r['epoch_seconds']:>12.1f} {r['peak_gb']:>8.2f}"

            ratio = f"{full['peak_gb'] / mini['peak_gb']:>8.1f}" if "error" not in full and "error" not in mini else f"{'-':>8}"
            print(f"{kg:<18} {bb:<10} {pairs:>14,} {cell(full)} {cell(mini)} {ratio}", flush=True)
            for r in (full, mini):
                if "error" in r:
                    print(f"  * {r['error']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kgs", nargs="+", default=list(KGS), choices=list(KGS))
    ap.add_argument("--backbones", nargs="+", default=["rgcn", "rgcn_plus"])
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--set", action="append", default=[], help="backbone override key=value (repeatable)")
    ap.add_argument("--attribute", action="store_true", help="where the memory goes: setup, encoder, decoder")
    ap.add_argument("--names", action="store_true", help="plus backbones with their name embeddings (slow to embed)")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--kg", help=argparse.SUPPRESS)
    ap.add_argument("--backbone", help=argparse.SUPPRESS)
    ap.add_argument("--stage", default="fit", help=argparse.SUPPRESS)
    ap.add_argument("--pairs", type=int, default=250_000, help=argparse.SUPPRESS)
    ap.add_argument("--max-gb", type=float, default=16.0, help="address-space cap of each measuring process")
    args = ap.parse_args()
    if args.one:
        return one(args)
    torch.set_num_threads(1)
    return attribute(args) if args.attribute else table(args)


if __name__ == "__main__":
    main()

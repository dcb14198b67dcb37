"""Evidence preparation speed of the related systems' modes (hykge, aria, graph2idea) beside
template mode, without the LLM: what each mode costs per hypothesis outside its LLM calls (the
cells log the same as ``evidence_seconds``).

Prints, per mode, the one-off first call (encoder load, entity-name embeddings, per-graph
statistics) and median / p95 / max ms per hypothesis over val/test pairs of one relation on the
synthetic MatKG. The LLM pre-stages are answered by a fixed stand-in reply (a short hypothesis
output for HyKGE, "1: ... / 2: ..." for Graph2Idea's context picking), so only retrieval,
embedding and rendering are timed.

    .venv/bin/python bench/bench_strategies.py [--relation chm_apl] [--n 100] [--scale 1]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import polars as pl
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from hygrail.data import data_config
from hygrail.data.split import temporal_split
from hygrail.data.synthetic import generate
from hygrail.evidence.mode import Hypothesis, load_mode
from hygrail.kg import Schema

CONF = Path(__file__).resolve().parents[1] / "conf"
MODES = ("template", "hykge", "aria", "graph2idea")


class StandIn:
    """Fixed pre-stage replies, so the timing is the mode's own work."""

    def chat_many(self, conversations, max_tokens=None):
        return ["1: the shared property links both.\n2: a related material is used for it.\n"
                "Mechanism: high ionic conductivity, stable cycling and a layered oxide structure "
                "with good capacity make the material suitable for the application."] * len(conversations)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--relation", default="chm_apl")
    ap.add_argument("--n", type=int, default=100, help="val/test hypotheses timed per mode")
    ap.add_argument("--scale", type=float, default=1.0, help="synthetic scale (23.334: full MatKG size)")
    args = ap.parse_args()
    cfg = data_config(scale=args.scale)
    kg = generate(Schema.from_config(cfg["schema"]), cfg)
    relation = kg.schema.relation(args.relation)
    split = temporal_split(kg, relation)
    graph = split.train_graph
    held = split.pairs.filter(pl.col("split") != "train")
    pick = np.random.default_rng(0).choice(held.height, min(args.n + 1, held.height), replace=False)
    hyps = [Hypothesis(int(held["src"][int(i)]), int(held["dst"][int(i)]), 0.5) for i in pick]
    templates = OmegaConf.to_container(OmegaConf.load(CONF / f"relation/{args.relation}.yaml"))["templates"]
    print(f"{graph!r}, relation {args.relation}, {len(hyps) - 1} hypotheses per mode")
    for name in MODES:
        with initialize_config_dir(config_dir=str(CONF), version_base=None):
            ecfg = OmegaConf.to_container(compose(config_name=None, overrides=[f"+evidence={name}"]).evidence)
        mode = load_mode(ecfg, templates)
        client = StandIn() if mode.uses_llm else None
        t0 = time.perf_counter()
        mode.prepare(graph, relation, hyps[:1], client)
        first = time.perf_counter() - t0
        ms = []
        for h in hyps[1:]:
            t0 = time.perf_counter()
            mode.prepare(graph, relation, [h], client)
            ms.append((time.perf_counter() - t0) * 1e3)
        ms = np.array(ms)
        print(f"  {name:11s} first call {first:6.1f} s   per hypothesis median {np.median(ms):7.1f} ms  "
              f"p95 {np.percentile(ms, 95):7.1f} ms  max {ms.max():7.1f} ms")


if __name__ == "__main__":
    main()

"""Explain hypotheses: print the graph evidence and its text a reviewer would get, for the pairs a
person wants to read (a task of its own: it composes data, split, an evidence mode and, for modes
with LLM pre-stages, the reviewer's client).

    python -m hygrail.explain --relation chm_apl --sample 3                  # random val/test pairs
    python -m hygrail.explain --relation chm_apl --left LiFePO4 --right battery --json
    python -m hygrail.explain --data matkg --evidence llm data.path=/data/matkg evidence.k=8
    python -m hygrail.explain --data csv data.path=/data/mykg +split.neg_ratio=5
    python -m hygrail.explain --evidence llm --llm embedded                   # run the LLM pre-stage

Config groups compose from conf/ as in the sweep (``--data``, ``--relation``, ``--evidence``,
``--llm``; extra ``key=value`` Hydra overrides after them). Evidence is always retrieved from the
split's training graph, as the pipeline does. A mode with LLM pre-stages (llm, hykge, ...) runs
them through the reviewer's cached client when ``--llm`` names a model; without it the
pre-stages are skipped and the text is the mode's template fallback (said on the output).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import polars as pl
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf

from hygrail.data import load_kg
from hygrail.data.split import temporal_split
from hygrail.evidence.mode import Hypothesis, load_mode
from hygrail.kg import DataError
from hygrail.stages import llm_config

CONF = Path(__file__).resolve().parents[1] / "conf"


def load_config(data: str, relation: str, evidence: str, llm: str | None, overrides: list[str]) -> DictConfig:
    groups = [f"+data={data}", f"+relation={relation}", f"+evidence={evidence}"] + ([f"+llm={llm}"] if llm else [])
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        return compose(config_name=None, overrides=[*groups, *overrides])


class SkipPreStages:
    """Stands in for the chat client when no --llm is given: every pre-stage call "fails", so a
    mode shows its documented template fallback."""

    def chat_many(self, conversations, max_tokens=None):
        return [None] * len(conversations)


def pick(split, kg, args) -> list[tuple[int, int, int | None]]:
    """(src, dst, label or None) for the named pair, or a seeded half-positive test sample."""
    rel = split.relation
    if args.left is not None or args.right is not None:
        if args.left is None or args.right is None:
            raise DataError("give both --left and --right (entity names), or neither for a random sample")
        u, v = kg.node_id(rel.src, args.left), kg.node_id(rel.dst, args.right)
        return [(u, v, None)]
    test = split.part("test")
    rng = np.random.default_rng(args.seed)
    out = []
    for label, n in ((1, (args.sample + 1) // 2), (0, args.sample // 2)):
        rows = test.filter(pl.col("label") == label)
        for i in rng.choice(rows.height, min(n, rows.height), replace=False):
            out.append((int(rows["src"][int(i)]), int(rows["dst"][int(i)]), label))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m hygrail.explain", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="matkg_synthetic", help="conf/data option")
    ap.add_argument("--relation", default="chm_apl", help="conf/relation option")
    ap.add_argument("--evidence", default="template", help="conf/evidence option (none, template, llm, ...)")
    ap.add_argument("--llm", help="conf/llm option that runs the mode's LLM pre-stages (e.g. embedded)")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("HYGRAIL_OUTPUTS", "outputs")) / "cache" / "llm", help="reply cache for --llm (the sweep's)")
    ap.add_argument("--left", help="name of the left (relation source) entity")
    ap.add_argument("--right", help="name of the right (relation target) entity")
    ap.add_argument("--sample", type=int, default=3, help="random test hypotheses when no names are given")
    ap.add_argument("--seed", type=int, default=0, help="seeds the random sample of hypotheses")
    ap.add_argument("--split-seed", type=int, default=42, help="the sweep's split seed, so the training graph is the same")
    ap.add_argument("--score", type=float, help="GNN score to show in the text")
    ap.add_argument("--gnn-threshold", type=float,
                    help="the cell's validation GNN threshold: enables the GNN-score contradiction sentence")
    ap.add_argument("--json", action="store_true", help="also print the structured evidence")
    ap.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. evidence.k=8 data.path=/data/matkg")
    args = ap.parse_intermixed_args(argv)
    try:
        cfg = load_config(args.data, args.relation, args.evidence, args.llm, args.overrides)
        kg = load_kg(cfg.data)
        relation = kg.schema.relation(cfg.relation.name)
        # The sweep's split settings when given (``+split.neg_ratio=5``), else the paper's.
        split_cfg = OmegaConf.to_container(cfg.split) if "split" in cfg else {}
        split = temporal_split(kg, relation, **{"seed": args.split_seed, **split_cfg})
        hypotheses = pick(split, kg, args)
    except DataError as e:
        sys.exit(f"error: {e}")
    calibrated = None if args.gnn_threshold is None else {"gnn_threshold": args.gnn_threshold}
    mode = load_mode(OmegaConf.to_container(cfg.evidence), OmegaConf.to_container(cfg.relation.templates), calibrated)
    hyps = [Hypothesis(u, v, args.score) for u, v, _ in hypotheses]
    if not mode.uses_llm:
        prepared = mode.prepare(split.train_graph, relation, hyps, None)
    elif args.llm:
        from hygrail.review.client import ReviewClient

        with ReviewClient(llm_config(cfg), args.cache) as client:
            prepared = mode.prepare(split.train_graph, relation, hyps, client)
    else:
        print(f"(evidence={args.evidence} has LLM pre-stages; no --llm given, so this is its template fallback)\n")
        prepared = mode.prepare(split.train_graph, relation, hyps, SkipPreStages())
    for (u, v, label), p in zip(hypotheses, prepared):
        tag = "" if label is None else f"  [test {'positive' if label else 'negative'}]"
        print(f"=== {relation.label}: {kg.label(u)} -> {kg.label(v)}{tag}")
        if args.json:
            print(json.dumps({"structured": p.structured, "info": p.info}, indent=2))
        print(p.text if p.text is not None else p.statement)
        print()


if __name__ == "__main__":
    main()

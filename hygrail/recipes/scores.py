"""Per-precursor scores of a trained ranker of target-precursor pairs, for the sets' benchmark: the
stacked ranker of task=discover (hygrail/discovery/stack.py, ``with_gnn``: trees over the
heuristics, the neighbours' choices and the GNN's score), read through its public API.

Everything is built as ``task=discover`` builds it at the cutoff (``discovery/run.py``'s module
docstring): the KG cut at the cutoff (``KG.until``: dated edges at or before it, plus the static
compositions), the split of it, the GNN trained on the split (cached under ``paths.cache``, as any
discovery run's), the stack fit on the split's held-out transitions (cached too), and a target's row
scored over every precursor of the cut graph (``StackFit.pair_scorer``). A target first made after
the cutoff is a node of the cut graph by its composition alone, as in the per-entity cold-start
row. A material the recipe table tells apart by its variable's value (``RBaCo2O5+ δ (R=Pr)``)
reads the row of its KG target (``RBaCo2O5+ δ``). The KG names precursors as written; a precursor
identity (``data.recipes``: its composition) scores as the best of its spellings (``per_identity``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
from omegaconf import DictConfig
from scipy.special import expit

from hygrail.data import load_kg
from hygrail.discovery import stack
from hygrail.discovery.scoring import GNNBlocks
from hygrail.discovery.space import CandidateSpace
from hygrail.kg import DataError
from hygrail.stages import build_split, gnn_stage, plain

VARIANT = "with_gnn"


def stack_scores(cfg: DictConfig, cutoff: int, targets: Iterable[str]) -> tuple[dict[str, dict[str, float]], dict]:
    """(KG target name -> precursor name -> the stack's probability, timings in seconds) for each of
    ``targets`` the cut graph holds, ``cfg`` a task=discover config of the recipes
    (conf/experiment/retro_synthesis_recipes.yaml)."""
    from hygrail.triage.train import load_scorer

    seconds = {}
    t0 = time.perf_counter()
    kg = load_kg(plain(cfg.data), cutoff=cutoff)
    known = kg.until(cutoff)
    relation = known.schema.relation(cfg.relation.name)
    space = CandidateSpace(known, relation)
    _, split = build_split(cfg, known)
    seconds["prepare"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    triage, _, _ = gnn_stage(cfg, known, split)
    seed, cache = int(cfg.seed), Path(cfg.paths.cache)
    gnn = GNNBlocks(load_scorer(split, plain(cfg.backbone), seed, cache / "triage", int(cfg.discover.encode_edges),
                                graph=known), space)
    seconds["gnn"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    compatible = cfg.discover.get("compatible")
    if not (compatible or {}).get("via"):
        raise DataError("recipes: the stack's scores need discover.compatible (conf/experiment/retro_synthesis_recipes.yaml)")
    fitted, _ = stack.fit_cached(cache / "stack", split, triage.scores, [VARIANT], plain(compatible), gnn, seed,
                                 stack.names_for(known, relation, cfg.backbone))
    score = fitted.pair_scorer(VARIANT, space)
    seconds["stack_fit"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    names = {known.names[i]: int(i) for i in known.nodes_of_type(relation.src)}
    dst = space.dst
    pre = [known.names[i] for i in dst]
    out: dict[str, dict[str, float]] = {}
    rows = sorted(t for t in set(targets) if t in names)
    for lo in range(0, len(rows), stack.BLOCK_SOURCES):  # a block of sources scores as rows of the walk
        batch = rows[lo : lo + stack.BLOCK_SOURCES]
        src = np.repeat(np.array([names[t] for t in batch], dtype=np.int64), len(dst))
        prob = expit(np.asarray(score(src, np.tile(dst, len(batch))), dtype=np.float64))
        for t, p in zip(batch, prob.reshape(len(batch), -1)):
            out[t] = dict(zip(pre, p.tolist()))
    seconds["score"] = time.perf_counter() - t0
    return out, seconds


def missing(scores: Mapping[str, Mapping[str, float]], targets: Iterable[str]) -> int:
    """How many of ``targets`` got no row (not a node of the cut graph)."""
    return sum(1 for t in set(targets) if t not in scores)


def per_identity(row: Mapping[str, float], spellings: Mapping[str, Iterable[str]]) -> dict[str, float]:
    """A target's row (written precursor -> probability) per precursor identity: the best of the ways the
    recipes write it (``spellings``: identity -> written formulas), 0 when the graph has none of them."""
    return {p: max((row.get(w, 0.0) for w in ws), default=0.0) for p, ws in spellings.items()}

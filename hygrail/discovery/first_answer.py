"""A first answer before the GNN is trained (issue #48): ``discover.first_answer``.

Why: on whole HPO the GNN's first training takes 20-25 minutes on 2 cores, while the stack without
the GNN (trees over the heuristics, the neighbours' votes and the names' cosine, fit on the split's
held-out transitions: ``stack.py``) answers about as well per entity (hits@10 without / with the GNN,
experiments/discovery.md's honest margins: HPO 2015 known diseases 0.467 / 0.466, new within the
horizon 0.706 / 0.702; HPO 2018 0.398 / 0.403 and 0.651 / 0.653) and fits in about 2 minutes. So when the model is not cached yet, the named
entities' lists are ranked by the stack without the GNN and written to the page first; the page
says which ranker made them and that the GNN is training. The run then trains the GNN (resumable,
with its progress bar) and writes the page again with ``discover.entity_ranker``'s lists. With the
model cached the first answer is skipped: the full answer is as quick.

What the first page lacks: the GNN's columns (score, rank, band region) and new compositions'
sections (the GNN ranks those: its message passing reaches the new node); the page says so.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Mapping, Sequence

from hygrail.discovery import entities, stack
from hygrail.discovery.space import CandidateSpace

VARIANT = "without_gnn"


def model_cached(split, backbone: Mapping, seed: int, cache: Path) -> bool:
    """Whether the triage cache already holds the model of ``split`` / ``backbone`` / ``seed``."""
    from hygrail.cache import DiskCache
    from hygrail.triage.train import cache_key, plain_config

    return DiskCache(cache).get(cache_key(split, plain_config(backbone), seed)) is not None


def lists(d: Mapping, split, space: CandidateSpace, wanted: Sequence[entities.Entity], backbone: Mapping, seed: int,
          cache: Path) -> tuple[entities.EntityReport, dict[str, float]]:
    """The named entities' lists by the stack without the GNN (fit or read from ``cache / 'stack'``),
    and the fit's metrics (``first_answer_*``)."""
    from hygrail.triage.train import cache_key, plain_config

    t0 = time.perf_counter()
    compatible = d.get("compatible") if (d.get("compatible") or {}).get("via") else None
    names = stack.names_for(space.kg, space.relation, backbone)
    fitted, hit = stack.fit_cached(cache / "stack", split, None, [VARIANT], compatible, None, seed, names,
                                   split_key=cache_key(split, plain_config(backbone), seed))
    fit_s = time.perf_counter() - t0
    ranker = (stack.VARIANTS[VARIANT], fitted.pair_scorer(VARIANT, space))
    rel, schema = space.relation, space.kg.schema
    lists = [entities.rank_entity(space, None, None, e, int(d["entity_k"]), seed, None, ranker) for e in wanted]
    report = entities.EntityReport(lists, {rel.src: schema.display_name(rel.dst), rel.dst: schema.display_name(rel.src)},
                                   metrics={})
    return report, {"first_answer_stack_fit_seconds": fit_s, "first_answer_stack_cache_hit": float(hit),
                    "first_answer_seconds": time.perf_counter() - t0}

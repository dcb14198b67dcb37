"""Few-shot calibration examples for the reviewer: solved hypotheses of the *training* split, shown
in the prompt's fixed prefix so that a weak judge learns what this graph's evidence means for a
verdict (``llm.fewshot``; null: none, the paper's zero-shot prompts).

    pairs = choose(split, fewshot_cfg, seed)                 # [(Hypothesis, label)], training part only
    examples = build(pairs, mode, split.train_graph, relation, llm)   # [Example(request, verdict)]

Why: on `make run`'s band the embedded 1.5B judge, zero-shot, said "no" to everything, but
whether a band positive exists is mostly whether material and application belong to one research
area (on the synthetic MatKG 75-90% of band positives share a planted topic, 7-9% of negatives).
Worked examples of that graph, with the verdict, show the model what "fits" means here.

Leakage rules, each tested (tests/test_review_fewshot.py):
- examples come from ``split.part("train")`` only: training positives and the training split's
  sampled negatives, never a validation or test pair;
- the evidence is retrieved on the training graph *without the chosen positives' edges*, as for
  validation and test positives (their edges are held out), so no example states its answer;
- no GNN score is shown: training pairs' scores are in-sample (the GNN fitted them);
- the choice depends on the training split and the seed only, not on which hypotheses are
  reviewed, so one cell's reviews share one prefix (llama.cpp's prompt cache and vLLM's prefix
  cache pay for it once per server).

Selection (``fewshot.selection``):
- ``contrast`` (default): each positive (m, a) is paired with a training negative of the same
  material (m, a'), falling back to a random negative when m has none: the two differ in the
  application only, which is the judgement the band needs;
- ``random``: positives and negatives drawn uniformly.
``n`` examples of which ``positives`` are positives, in a seeded order.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from hygrail.data.split import Split
from hygrail.evidence.mode import EvidenceMode, Hypothesis
from hygrail.kg import KG, DataError, Relation
from hygrail.review.contract import NO, YES, Example, ReviewRequest

SELECTIONS = ("contrast", "random")
_SALT = 0x5E1EC7  # decouples this draw from the split's and the GNN's seeded draws


def settings(cfg: Mapping | None) -> dict | None:
    """``llm.fewshot`` checked: {n, positives, selection}, or None (no examples)."""
    if not cfg or not int(cfg.get("n") or 0):
        return None
    n, pos = int(cfg["n"]), int(cfg.get("positives", int(cfg["n"]) // 2))
    selection = str(cfg.get("selection", "contrast"))
    if not 0 <= pos <= n:
        raise DataError(f"llm.fewshot.positives={pos}: expected between 0 and llm.fewshot.n={n}")
    if selection not in SELECTIONS:
        raise DataError(f"llm.fewshot.selection={selection!r}: expected one of {SELECTIONS}")
    return {"n": n, "positives": pos, "selection": selection}


def choose(split: Split, cfg: Mapping | None, seed: int) -> list[tuple[Hypothesis, int]]:
    """(hypothesis, label) pairs of the split's *training* part for the examples, fixed by the split
    and ``seed``."""
    cfg = settings(cfg)
    if cfg is None:
        return []
    train = split.part("train")
    src, dst, label = (train[c].to_numpy() for c in ("src", "dst", "label"))
    pos, neg = np.flatnonzero(label == 1), np.flatnonzero(label == 0)
    n_pos, n_neg = cfg["positives"], cfg["n"] - cfg["positives"]
    if n_pos > len(pos) or n_neg > len(neg):
        raise DataError(f"llm.fewshot asks for {n_pos} positive and {n_neg} negative examples; the training split "
                        f"has {len(pos)} and {len(neg)}")
    rng = np.random.default_rng([int(seed), _SALT])
    chosen_pos = rng.choice(pos, n_pos, replace=False)
    if cfg["selection"] == "contrast":
        chosen_neg = _contrast(chosen_pos, neg, src, n_neg, rng)
    else:
        chosen_neg = rng.choice(neg, n_neg, replace=False)
    # Pairs stay adjacent (a contrast is read side by side); which comes first is a coin flip.
    order: list[int] = []
    for i in range(max(n_pos, n_neg)):
        pair = [x[i] for x in (chosen_pos, chosen_neg) if i < len(x)]
        order += pair[::-1] if rng.random() < 0.5 else pair
    return [(Hypothesis(int(src[i]), int(dst[i])), int(label[i])) for i in order]


def _contrast(chosen_pos: np.ndarray, neg: np.ndarray, src: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """A negative with the same source entity per chosen positive (random when it has none), then
    random negatives up to ``k``; all distinct."""
    taken: list[int] = []
    for p in chosen_pos[:k]:
        same = [i for i in neg[src[neg] == src[p]] if i not in taken]
        pool = same or [i for i in neg if i not in taken]
        taken.append(int(rng.choice(pool)))
    rest = np.setdiff1d(neg, taken)
    return np.concatenate([taken, rng.choice(rest, k - len(taken), replace=False)]).astype(int)


def build(pairs: Sequence[tuple[Hypothesis, int]], mode: EvidenceMode, graph: KG, relation: Relation,
          llm=None) -> list[Example]:
    """Each chosen pair's evidence, rendered by the cell's own evidence mode (so examples read like
    the reviews), on ``graph`` minus the chosen positives' edges: like validation and test
    positives, no example's evidence contains its own edge (or another example's)."""
    if not pairs:
        return []
    edges = np.array([graph.edge_id(h.src, h.dst) for h, label in pairs if label])
    g = graph.without_edges(edges[edges >= 0]) if len(edges) else graph
    prepared = mode.prepare(g, relation, [h for h, _ in pairs], llm if mode.uses_llm else None)
    return [Example(ReviewRequest(p.statement, p.text), YES if label else NO) for p, (_, label) in zip(prepared, pairs)]

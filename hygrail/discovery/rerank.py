"""Review the shortlist (issue #46 item 2b): the tuned reviewer (``hygrail/review/tuned.py``) re-orders
the head of discovery's lists, each entity's best ``discover.rerank_k`` by the stack and the stack's
whole-space best ``discover.rerank_top``, and with a cutoff each reviewed head is scored against the
stack's own order on the same answers, paired.

What it trains on: the stack's fit rows (``tuned.held_out``: the split's validation and test
hypotheses, positives dated after the feature graph, both populations), each read from the graph
before it; the split is of the graph known at the cutoff, so no answer after it is read. The
reviewed candidates' text is read from the cut graph, as every list's is.

How a head is re-ordered (``discover.rerank_rule``):

- ``sum`` (default): by the stack's log-odds plus the reviewer's. Both are log-odds of the same
  kind of row (a held-out pair of the relation; the split's 1:20 negatives, at most 1:50 a population,
  in the stack's rows, 1:5 in the reviewer's), so within one list, where every constant cancels, the sum is the product of the two
  experts' odds: nothing is fit, so no post-cutoff answer and no list's labels choose a weight;
- ``reviewer``: by the reviewer's log-odds alone (its own ranking of the stack's shortlist).

Both are measured (``reviewed_head.csv``), ``sum`` is the one the page's lists use. Ties keep the
stack's order. Per entity: P@10 (answers in the first 10 / 10) and hits@10 (any answer there) of
the reviewed head against the stack's own order, the paired difference's mean and standard error
over entities, for the rows ``entities.entity_report`` evaluates (known entities on their answers
after the cutoff; new entities on their answers within the horizon); over the whole space, P@K of
the reviewed top ``rerank_top`` against the stack's at the headline's answers (``retro.answers``).
A head of K = 20 is the smallest that can change a top 10.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import polars as pl

from hygrail.discovery.space import tiebreak
from hygrail.kg import DataError

RULES = ("sum", "reviewer")
VARIANT = "with_gnn"  # the stack variant whose lists are reviewed: the one the tables lead with


@dataclass
class Heads:
    """Each entity's best ``k`` (destinations, the stack's log-odds), best first, per row of the
    evaluation, and the whole space's best ``top`` (positions in walk order, log-odds)."""

    k: int
    top: int
    seed: int
    rows: dict = field(default_factory=dict)  # source -> (dst, score)
    space_top: tuple | None = None  # (src, dst, scores) of the whole space's best ``top``, best first

    def best(self, dst: np.ndarray, score: np.ndarray, src: int) -> None:
        """Keep ``src``'s best ``k`` of its candidates ``dst`` (scores ``score``), ties by ``tiebreak``."""
        n = min(self.k, len(dst))
        part = np.argpartition(-score, n - 1)[:n] if n < len(dst) else np.arange(len(dst))
        cut = score[part].min()
        near = np.flatnonzero(score >= cut)  # ties at the cut: all of them, then the tiebreak decides
        order = np.lexsort((tiebreak(np.full(len(near), src), dst[near], self.seed), -score[near]))[:n]
        self.rows[int(src)] = (dst[near[order]], score[near[order]].astype(np.float64))

    def from_vector(self, scores: np.ndarray, rowhits, src_all: np.ndarray, dst_all: np.ndarray) -> None:
        """The known entities' heads from a whole-space vector (walk order; ``entities.RowHits``'s rows),
        and the whole space's best ``top``."""
        for i, u in enumerate(rowhits.sources):
            lo, hi = rowhits.lo[i], rowhits.hi[i]
            self.best(dst_all[lo:hi], np.asarray(scores[lo:hi], dtype=np.float64), int(u))
        if self.top:
            n = min(self.top, len(scores))
            part = np.argpartition(-scores, n - 1)[:n]
            part = part[np.lexsort((tiebreak(src_all[part], dst_all[part], self.seed), -scores[part]))]
            self.space_top = (src_all[part].astype(np.int64), dst_all[part].astype(np.int64),
                              np.asarray(scores[part], dtype=np.float64))

    def capture(self, scorer: Callable, dst: np.ndarray) -> Callable:
        """``scorer`` (a block scorer) that also keeps the heads of the blocks' sources (the new entities,
        which ``entities.found_at`` scores block by block)."""

        def score(block):
            s = np.asarray(scorer(block))
            for i, u in enumerate(block.src):
                valid = block.valid[i]
                self.best(dst[valid], np.asarray(s[i][valid], dtype=np.float64), int(u))
            return s

        return score


def order(stack: np.ndarray, reviewer: np.ndarray, rule: str) -> np.ndarray:
    """The re-ordered head (indices into it): by ``rule``'s score, descending; ties keep the stack's order."""
    if rule not in RULES:
        raise DataError(f"discover.rerank_rule={rule!r}: expected one of {RULES}")
    key = stack + reviewer if rule == "sum" else reviewer
    return np.lexsort((np.arange(len(key)), -np.asarray(key, dtype=np.float64)))


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    x = np.asarray(x, dtype=np.float64)
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")


def paired(heads: Heads, logits: Mapping[tuple[int, int], float], answers: Mapping[int, set], rule: str,
           row: str, at: int = 10) -> dict:
    """One row of the per-entity table: the entities of ``answers`` with a head, P@``at`` and
    hits@``at`` of the stack's order and the reviewed one, and their paired differences (mean, SE)."""
    p_s, p_r = [], []
    for u, found in answers.items():
        if u not in heads.rows:
            continue
        dst, score = heads.rows[u]
        rev = np.array([logits[(u, int(v))] for v in dst])
        new = dst[order(score, rev, rule)]
        p_s.append(sum(int(v) in found for v in dst[:at]))
        p_r.append(sum(int(v) in found for v in new[:at]))
    p_s, p_r = np.array(p_s, dtype=np.float64), np.array(p_r, dtype=np.float64)
    out = {"row": row, "rule": rule, "entities": len(p_s)}
    if not len(p_s):
        return out
    for name, a, b in ((f"P@{at}", p_s / at, p_r / at), (f"hits@{at}", (p_s > 0) * 1.0, (p_r > 0) * 1.0)):
        out |= {f"{name} stack": float(a.mean()), f"{name} reviewed": float(b.mean())}
        out[f"{name} diff"], out[f"{name} diff se"] = _mean_se(b - a)
    return out


class Reranker:
    """The tuned reviewer of ``llm`` trained on the split's held-out rows (``tuned.held_out``), ready to
    score the heads a discovery collects (``Heads``) and to tell how they changed."""

    def __init__(self, llm: Mapping, mode, split, d: Mapping, cache: Path | None, progress: bool = True):
        from hygrail.review import tuned

        if not llm.get("tuned"):
            raise DataError(f"discover.rerank_k={d.get('rerank_k')} needs a tuned reviewer: llm={llm.get('name')} "
                            f"has no tuned block (use llm=tuned_minilm)")
        self.rule = str(d.get("rerank_rule", "sum"))
        order(np.zeros(1), np.zeros(1), self.rule)  # a bad rule fails before training
        self.name, self.mode, self.relation = str(llm.get("name")), mode, split.relation
        t0 = time.perf_counter()
        settings = tuned.settings_of(llm["tuned"])
        rows = tuned.sample_rows(tuned.held_out(split, int(d.get("seed", 0))), mode, split.relation, settings)
        self.model = tuned.train(rows, settings, cache, progress)
        self.seconds = {"train": time.perf_counter() - t0}
        self.heads = Heads(int(d["rerank_k"]), int(d.get("rerank_top") or 0), int(d.get("seed", 0)))
        self.reviews = 0

    def logits(self, graph, src: np.ndarray, dst: np.ndarray) -> dict[tuple[int, int], float]:
        """The reviewer's log-odds of each distinct pair, its text read from ``graph`` (the cut graph)."""
        from hygrail.review.tuned import texts

        pairs = sorted(set(zip(np.asarray(src).tolist(), np.asarray(dst).tolist())))
        if not pairs:
            return {}
        s, t = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
        first, second = texts(self.mode, graph, self.relation, s, t)
        t0 = time.perf_counter()
        out = self.model.logits(first, second)
        self.seconds["review"] = self.seconds.get("review", 0.0) + time.perf_counter() - t0
        self.reviews += len(pairs)
        return dict(zip(pairs, out.tolist()))

    def evaluate(self, graph, answers: Mapping[str, Mapping[int, set]], headline: set | None = None,
                 ks=(10, 50, 100, 500, 1000)) -> tuple[pl.DataFrame, dict]:
        """(one row per evaluated row of entities and rule, metrics): ``answers``: row (a short tag, e.g.
        known, new) -> source -> its answers; ``headline``: the (src, dst) answers of the whole-space headline (``retro.answers``)."""
        src = [u for u, (dst, _) in self.heads.rows.items() for _ in dst]
        dst = [int(v) for _, (d, _) in self.heads.rows.items() for v in d]
        top_src, top_dst, score = self.heads.space_top or (np.zeros(0, np.int64), np.zeros(0, np.int64), None)
        logits = self.logits(graph, np.r_[np.array(src, np.int64), top_src], np.r_[np.array(dst, np.int64), top_dst])
        rows = [paired(self.heads, logits, a, rule, row) for row, a in answers.items() for rule in RULES]
        if len(top_src) and headline is not None:
            rev = np.array([logits[(int(u), int(v))] for u, v in zip(top_src, top_dst)])
            y = np.array([(int(u), int(v)) in headline for u, v in zip(top_src, top_dst)], dtype=np.float64)
            for rule in RULES:
                new = order(score, rev, rule)
                rows.append({"row": f"whole space, top {len(y):,}", "rule": rule, "entities": None}
                            | {f"P@{k} stack": float(y[:k].mean()) for k in ks if k <= len(y)}
                            | {f"P@{k} reviewed": float(y[new][:k].mean()) for k in ks if k <= len(y)})
        table = pl.DataFrame(rows)
        metrics = {f"rerank_{k}_seconds": float(v) for k, v in self.seconds.items()}
        metrics |= {"rerank_reviews": float(self.reviews), "rerank_train_rows": float(self.model.info.get("rows", 0)),
                    "rerank_trained_seconds": float(self.model.info.get("train_seconds", 0.0)),
                    "rerank_cache_hit": float(self.model.cache_hit)}
        if self.reviews:
            metrics["rerank_seconds_per_review"] = self.seconds["review"] / self.reviews
        for r in rows:
            if r.get("entities"):
                tag = f"rerank_{r['row']}_{r['rule']}_"
                metrics |= {tag + k.replace("@", "_at_").replace(" ", "_"): float(v) for k, v in r.items()
                            if isinstance(v, float)}
        return table, metrics

    def note(self, table: pl.DataFrame) -> str:
        """What the page says of the reviewed heads: the reviewer, what it learnt from, the result."""
        info = self.model.info
        lead = (f"Reviewed head (issue #46): {self.name}, fine-tuned on {info.get('what', 'the stack fit rows')}, "
                f"re-orders each entity's best {self.heads.k} by the stack (rule '{self.rule}').")
        rows = table.filter((pl.col("rule") == self.rule) & pl.col("entities").is_not_null()) \
            if "entities" in table.columns else table.head(0)
        parts = [f"{r['row']}: P@10 {r['P@10 stack']:.3f} -> {r['P@10 reviewed']:.3f} ({r['P@10 diff']:+.3f} ± "
                 f"{r['P@10 diff se']:.3f}), hits@10 {r['hits@10 diff']:+.3f} ± {r['hits@10 diff se']:.3f}"
                 for r in rows.iter_rows(named=True) if r.get("P@10 stack") is not None]
        return lead + (" Paired against the stack's own order, per entity: " + "; ".join(parts) + "." if parts else "")

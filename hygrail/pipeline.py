"""One cell of the sweep = (data, relation, backbone, llm, evidence, method), composed from the
stages of DESIGN.md in one direction:

    KG -> split -> scores (cached) -> route -> evidence -> text -> review (cached) -> gamma -> metrics

Each stage is a plain function in its own module; this file only wires them and records what the
cell did (figures for MLflow, per-hypothesis predictions, a sample of evidence texts with replies).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import numpy as np
import polars as pl
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from hygrail.data import load_kg
from hygrail.data.split import Split, temporal_split
from hygrail.kg import KG, DataError
from hygrail.metrics import prf

log = logging.getLogger("hygrail")


@dataclass
class CellResult:
    metrics: dict[str, float]
    predictions: pl.DataFrame  # one row per val/test hypothesis
    samples: list[dict] = field(default_factory=list)  # evidence texts with LLM replies
    band: tuple[float, float] | None = None
    gnn_threshold: float | None = None


def _plain(node) -> dict:
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else dict(node)


def build_split(cfg: DictConfig) -> tuple[KG, Split]:
    kg = load_kg(_plain(cfg.data))
    relation = kg.schema.relation(cfg.relation.name)
    s = cfg.split
    return kg, temporal_split(kg, relation, tuple(s.ratios), int(s.neg_ratio), int(s.seed))


def review_order(scores: np.ndarray, candidates: np.ndarray, centre: float, budget: int | None) -> np.ndarray:
    """Indices of the candidates to review: all of them, or the ``budget`` most ambiguous (closest to
    the GNN decision threshold) when a review budget is set. Deterministic (stable sort)."""
    idx = np.flatnonzero(candidates)
    if budget is None or budget >= len(idx):
        return idx
    order = np.argsort(np.abs(scores[idx] - centre), kind="stable")
    return np.sort(idx[order[: int(budget)]])


def run_cell(cfg: DictConfig) -> CellResult:
    from hygrail.triage.routing import f1_threshold, purity_interval, route
    from hygrail.triage.train import triage_scores

    method = cfg.method.name
    kg, split = build_split(cfg)
    val, test = split.part("val"), split.part("test")
    y_val, y_test = val["label"].to_numpy(), test["label"].to_numpy()
    cache = Path(cfg.paths.cache)

    scores = triage_scores(split, _plain(cfg.backbone), int(cfg.seed), cache / "triage")
    threshold = f1_threshold(scores.val, y_val)
    gnn_val, gnn_test = (scores.val >= threshold).astype(int), (scores.test >= threshold).astype(int)
    metrics = {
        "gnn_threshold": threshold,
        "gnn_fit_seconds": scores.fit_seconds,
        "gnn_cache_hit": float(scores.cache_hit),
        **prf(y_test, gnn_test, "gnn_test_"),
        **prf(y_val, gnn_val, "gnn_val_"),
    }
    predictions = _predictions(kg, split, scores.val, scores.test, gnn_val, gnn_test)
    if method == "gnn_only":
        metrics |= prf(y_test, gnn_test, "test_") | {"test_call_rate": 0.0, "val_call_rate": 0.0}
        return CellResult(metrics, predictions.with_columns(pl.col("gnn_pred").alias("pred")), gnn_threshold=threshold)
    if method != "hygrail":
        raise DataError(f"method={method!r}; expected one of gnn_only, hygrail")

    band = purity_interval(scores.val, y_val, float(cfg.routing.m), float(cfg.routing.n))
    r_val, r_test = route(scores.val, band), route(scores.test, band)
    budget = cfg.method.get("review_budget") or {}
    pick_val = review_order(scores.val, r_val == -1, threshold, budget.get("val"))
    pick_test = review_order(scores.test, r_test == -1, threshold, budget.get("test"))
    metrics |= {
        "band_a": band.a,
        "band_b": band.b,
        "val_call_rate": float(np.mean(r_val == -1)),
        "test_call_rate": float(np.mean(r_test == -1)),
        "val_reviewed": len(pick_val),
        "test_reviewed": len(pick_test),
        # routed but over the review budget: decided by the GNN-only threshold instead
        "test_routed_unreviewed": int(np.sum(r_test == -1)) - len(pick_test),
    }

    reviewer = Reviewer(cfg, split, kg)
    t0 = time.perf_counter()
    res_val, samples_val = reviewer.review(val, pick_val, scores.val, "val")
    res_test, samples_test = reviewer.review(test, pick_test, scores.test, "test")
    from hygrail.review.calibrate import choose_gamma, decide

    gamma = choose_gamma(res_val, y_val[pick_val])
    on_failure = cfg.method.get("on_failure", "gnn")
    final_val = _combine(r_val, gnn_val, pick_val, decide(res_val, gamma, gnn_val[pick_val], on_failure))
    final_test = _combine(r_test, gnn_test, pick_test, decide(res_test, gamma, gnn_test[pick_test], on_failure))
    usage = reviewer.client.usage()
    metrics |= {"gamma": gamma, "llm_wall_seconds": time.perf_counter() - t0}
    metrics |= {f"llm_{k}": float(v) for k, v in usage.items()}
    metrics |= prf(y_test, final_test, "test_") | prf(y_val, final_val, "val_")
    predictions = predictions.with_columns(
        pl.Series("route", np.concatenate([r_val, r_test]).astype(np.int8)),
        pl.Series("pred", np.concatenate([final_val, final_test]).astype(np.int8)),
        pl.Series("review", _column(len(val), pick_val, res_val, "review") + _column(len(test), pick_test, res_test, "review")),
        pl.Series(
            "confidence",
            _column(len(val), pick_val, res_val, "confidence") + _column(len(test), pick_test, res_test, "confidence"),
            dtype=pl.Float64,
        ),
    )
    n_samples = int(cfg.get("log_samples", 20))
    return CellResult(metrics, predictions, (samples_val + samples_test)[:n_samples], (band.a, band.b), threshold)


class Reviewer:
    """Evidence -> text -> LLM review for chosen hypotheses of one split (paper §3.2-3.4)."""

    def __init__(self, cfg: DictConfig, split: Split, kg: KG):
        from hygrail.review.client import ReviewClient

        self.cfg, self.split, self.kg = cfg, split, kg
        self.mode = cfg.evidence.mode
        self.templates = _plain(cfg.relation)["templates"]
        self.evidence_cfg = _plain(cfg.evidence)
        self.client = ReviewClient(_plain(cfg.llm), Path(cfg.paths.cache) / "llm.sqlite")

    def review(self, part: pl.DataFrame, idx: np.ndarray, scores: np.ndarray, name: str):
        from hygrail.evidence.naturalize import render
        from hygrail.evidence.retrieve import retrieve
        from hygrail.review.client import ReviewRequest

        src, dst, labels = part["src"].to_numpy(), part["dst"].to_numpy(), part["label"].to_numpy()
        requests, samples = [], []
        for i in tqdm(idx, desc=f"evidence ({name})", unit="hyp", disable=len(idx) < 50):
            ev = retrieve(self.split.train_graph, int(src[i]), int(dst[i]), self.split.relation, self.evidence_cfg)
            statement = render(ev, "none", self.templates)
            text = None
            if self.mode != "none":
                text = render(ev, self.mode, self.templates, float(scores[i]), self.evidence_cfg, chat=self.client.chat)
            requests.append(ReviewRequest(hypothesis=statement, evidence=text))
            samples.append({"split": name, "left": ev.left.name, "right": ev.right.name, "score": float(scores[i]),
                            "label": int(labels[i]), "hypothesis": statement, "evidence": text, "structured": ev.to_dict()})
        results = self.client.review_many(requests)
        for s, r in zip(samples, results):
            s |= {"review": r.review, "confidence": r.confidence, "reasoning": r.reasoning, "failure": r.failure}
        return results, samples


def _combine(routed: np.ndarray, gnn: np.ndarray, picked: np.ndarray, llm: np.ndarray) -> np.ndarray:
    """Three-way decision: 0 below a*, 1 above b*, the LLM's decision for reviewed routed hypotheses,
    and the GNN-only decision for routed ones left over a review budget."""
    out = np.where(routed == -1, gnn, routed).astype(int)
    out[picked] = llm
    return out


def _column(n: int, idx: np.ndarray, results, attr: str) -> list:
    col = [None] * n
    for i, r in zip(idx, results):
        col[int(i)] = getattr(r, attr)
    return col


def _predictions(kg: KG, split: Split, s_val, s_test, g_val, g_test) -> pl.DataFrame:
    parts = pl.concat([split.part("val"), split.part("test")])
    names = kg.names
    return parts.with_columns(
        pl.Series("left", [names[i] for i in parts["src"].to_list()]),
        pl.Series("right", [names[i] for i in parts["dst"].to_list()]),
        pl.Series("score", np.concatenate([s_val, s_test])),
        pl.Series("gnn_pred", np.concatenate([g_val, g_test]).astype(np.int8)),
    )

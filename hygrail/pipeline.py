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


def review_order(scores: np.ndarray, candidates: np.ndarray, centre: float, budget: int | None, seed: int) -> np.ndarray:
    """Indices of the candidates to review: all of them, or the ``budget`` most ambiguous (closest to
    the GNN decision threshold) when a review budget is set. Ties are broken by a seeded shuffle, not
    by row order (rows come positives first)."""
    idx = np.flatnonzero(candidates)
    if budget is None or budget >= len(idx):
        return idx
    order = np.lexsort((np.random.default_rng(seed).permutation(len(idx)), np.abs(scores[idx] - centre)))
    return np.sort(idx[order[: int(budget)]])


def run_cell(cfg: DictConfig, logger=None) -> CellResult:
    """One cell; ``logger``: a Lightning logger receiving the triage training curves (if it trains)."""
    method = cfg.method.name
    if method not in METHODS:
        raise DataError(f"method={method!r}; expected one of {sorted(METHODS)}")
    kg, split = build_split(cfg)
    return METHODS[method](cfg, kg, split, logger)


def _labels(split: Split) -> tuple[np.ndarray, np.ndarray]:
    return split.part("val")["label"].to_numpy(), split.part("test")["label"].to_numpy()


def _thresholded(kg, split, s_val, s_test, threshold, prefix: str) -> tuple[dict, pl.DataFrame]:
    """Metrics and predictions of a score model with a fixed val max-F1 threshold."""
    y_val, y_test = _labels(split)
    p_val, p_test = (s_val >= threshold).astype(int), (s_test >= threshold).astype(int)
    metrics = {f"{prefix}threshold": threshold, **prf(y_test, p_test, f"{prefix}test_"), **prf(y_val, p_val, f"{prefix}val_")}
    return metrics, _predictions(kg, split, s_val, s_test, p_val, p_test)


def _method_metrics(metrics: dict, prefix: str) -> dict:
    """A thresholded score model's own test metrics, under the method's names (test_f1, ...)."""
    return {k.removeprefix(prefix): v for k, v in metrics.items() if k.startswith(f"{prefix}test_")}


@dataclass
class Triage:
    """Paper §3.1 on one split: scores, the GNN-only threshold, the band and the three-way routes."""

    scores: object  # hygrail.triage.train.Scores
    threshold: float
    band: tuple[float, float]  # clipped to [0, 1]: an infeasible side's infinite cut routes the same
    route_val: np.ndarray  # 0 below a*, 1 above b*, -1 routed
    route_test: np.ndarray


def gnn_stage(cfg: DictConfig, kg: KG, split: Split, logger=None) -> tuple[Triage, dict, pl.DataFrame]:
    """Backbone scores (trained once per relation/backbone/seed, then cached), the GNN-only decision
    at the validation max-F1 threshold, and the purity band [a*, b*] with its call rates."""
    from hygrail.triage.routing import calibrate_band, f1_threshold, route
    from hygrail.triage.train import triage_scores

    y_val = _labels(split)[0]
    scores = triage_scores(split, _plain(cfg.backbone), int(cfg.seed), Path(cfg.paths.cache) / "triage", progress=True,
                           logger=logger)
    if logger is not None:  # the run links the trained model it used, trained now or cached
        logger.log_hyperparams({"triage_key": scores.key, "triage_checkpoint": scores.checkpoint})
    threshold = f1_threshold(scores.val, y_val)
    metrics, predictions = _thresholded(kg, split, scores.val, scores.test, threshold, "gnn_")
    band = calibrate_band(scores.val, y_val, _plain(cfg.routing))
    t = Triage(scores, threshold, (float(np.clip(band.a, 0, 1)), float(np.clip(band.b, 0, 1))),
               route(scores.val, band), route(scores.test, band))
    metrics |= {
        "gnn_fit_seconds": scores.fit_seconds,
        "gnn_cache_hit": float(scores.cache_hit),
        "band_a": t.band[0],
        "band_b": t.band[1],
        "band_val_call_rate": float(np.mean(t.route_val == -1)),
        "band_test_call_rate": float(np.mean(t.route_test == -1)),
    }
    return t, metrics, predictions.with_columns(pl.Series("route", np.concatenate([t.route_val, t.route_test]).astype(np.int8)))


def run_gnn_only(cfg: DictConfig, kg: KG, split: Split, logger=None) -> CellResult:
    t, metrics, predictions = gnn_stage(cfg, kg, split, logger)
    metrics |= _method_metrics(metrics, "gnn_")
    metrics |= {"test_call_rate": 0.0, "val_call_rate": 0.0}  # no LLM; band_*_call_rate says what HyGRAIL would route
    return CellResult(metrics, predictions.with_columns(pl.col("gnn_pred").alias("pred")), band=t.band, gnn_threshold=t.threshold)


def run_hygrail(cfg: DictConfig, kg: KG, split: Split, logger=None) -> CellResult:
    """Paper §3: triage band -> evidence -> text -> review -> gamma; the GNN decides outside the band."""
    t, metrics, predictions = gnn_stage(cfg, kg, split, logger)
    scores, threshold, r_val, r_test = t.scores, t.threshold, t.route_val, t.route_test
    y_val, y_test = _labels(split)
    gnn_val = predictions.filter(pl.col("split") == "val")["gnn_pred"].to_numpy()
    gnn_test = predictions.filter(pl.col("split") == "test")["gnn_pred"].to_numpy()
    budget = cfg.method.get("review_budget") or {}
    pick_val = review_order(scores.val, r_val == -1, threshold, budget.get("val"), int(cfg.seed))
    pick_test = review_order(scores.test, r_test == -1, threshold, budget.get("test"), int(cfg.seed) + 1)
    metrics |= {
        # What the LLM was asked, as a share of the split; band_*_call_rate is what was routed
        # (the two differ only under a review budget).
        "val_call_rate": len(pick_val) / len(y_val),
        "test_call_rate": len(pick_test) / len(y_test),
        "val_reviewed": len(pick_val),
        "test_reviewed": len(pick_test),
        # routed but over the review budget: decided by the GNN-only threshold instead
        "test_routed_unreviewed": int(np.sum(r_test == -1)) - len(pick_test),
    }
    reviewer = Reviewer(cfg, split, kg, cfg.evidence.mode)
    review = reviewer.run(pick_val, pick_test, scores.val, scores.test, gnn_val[pick_val], gnn_test[pick_test],
                          base_val=np.where(r_val == -1, gnn_val, r_val))
    final_val = _combine(r_val, gnn_val, pick_val, review.val_decision)
    final_test = _combine(r_test, gnn_test, pick_test, review.test_decision)
    metrics |= review.metrics | prf(y_test, final_test, "test_") | prf(y_val, final_val, "val_")
    predictions = predictions.with_columns(
        pl.Series("pred", np.concatenate([final_val, final_test]).astype(np.int8)),
        *review.columns(split),
    )
    return CellResult(metrics, predictions, review.samples[: int(cfg.log_samples)], t.band, threshold)


def stratified_cap(labels: np.ndarray, cap: int | None, seed: int) -> np.ndarray:
    """Indices of at most ``cap`` hypotheses keeping the positive rate (seeded); all when no cap."""
    idx = np.arange(len(labels))
    if cap is None or cap >= len(labels):
        return idx
    if cap < 1:
        raise DataError(f"method.cap={cap}: expected a positive number of reviews per split, or null for all")
    rng = np.random.default_rng(seed)
    pos, neg = idx[labels == 1], idx[labels == 0]
    # Proportional, not at least one: forcing a positive into a small sample inflates precision.
    n_pos = min(len(pos), round(cap * len(pos) / len(labels)))
    return np.sort(np.concatenate([rng.choice(pos, n_pos, replace=False), rng.choice(neg, cap - n_pos, replace=False)]))


def run_kgfm(cfg: DictConfig, kg: KG, split: Split, logger=None) -> CellResult:
    """KG-FM baseline (after Bai et al. 2025): the LLM reviews every candidate with KG-retrieved
    context (structured triples, no GNN score, no triage); gamma by the same rule on validation.
    With ``method.cap`` a stratified sample is reviewed and metrics are computed on that sample."""
    y_val, y_test = _labels(split)
    cap = cfg.method.get("cap") or {}
    pick_val = stratified_cap(y_val, cap.get("val"), int(cfg.seed))
    pick_test = stratified_cap(y_test, cap.get("test"), int(cfg.seed) + 1)
    zeros_val, zeros_test = np.zeros(len(y_val)), np.zeros(len(y_test))
    reviewer = Reviewer(cfg, split, kg, "kgfm")
    # A failed review has no GNN to fall back on: it counts as a rejection (and as a failure).
    review = reviewer.run(pick_val, pick_test, zeros_val, zeros_test,
                          np.zeros(len(pick_val), int), np.zeros(len(pick_test), int))
    metrics = review.metrics | prf(y_test[pick_test], review.test_decision, "test_") | prf(y_val[pick_val], review.val_decision, "val_")
    metrics |= {"test_call_rate": 1.0, "val_call_rate": 1.0, "test_sampled": float(len(pick_test) < len(y_test)),
                "test_evaluated": float(len(pick_test))}
    pred = np.full(len(y_val) + len(y_test), -1, dtype=np.int8)  # -1: outside the evaluated sample
    pred[pick_val] = review.val_decision
    pred[len(y_val) + pick_test] = review.test_decision
    predictions = _predictions(kg, split, zeros_val, zeros_test, zeros_val, zeros_test).drop("score", "gnn_pred")
    predictions = predictions.with_columns(pl.Series("pred", pred), *review.columns(split))
    return CellResult(metrics, predictions, review.samples[: int(cfg.log_samples)])


def run_tsh(cfg: DictConfig, kg: KG, split: Split, logger=None) -> CellResult:
    """TSH baseline (after Marwitz et al. 2026): topological + name-embedding features, weights and
    threshold from validation."""
    from hygrail.baselines.tsh import tsh_scores

    res = tsh_scores(split, _plain(cfg.method))
    metrics, predictions = _thresholded(kg, split, res.val, res.test, res.threshold, "tsh_")
    metrics |= _method_metrics(metrics, "tsh_") | {"test_call_rate": 0.0, "val_call_rate": 0.0}
    metrics |= {f"tsh_weight_{k}": float(v) for k, v in res.weights.items()} | {"tsh_fit_seconds": res.seconds}
    return CellResult(metrics, predictions.rename({"gnn_pred": "pred"}), gnn_threshold=res.threshold)


METHODS = {"gnn_only": run_gnn_only, "hygrail": run_hygrail, "kgfm": run_kgfm, "tsh": run_tsh}


@dataclass
class Review:
    """Reviews of the chosen val/test hypotheses, their decisions at the calibrated gamma, and cost."""

    val_idx: np.ndarray
    test_idx: np.ndarray
    val_results: list
    test_results: list
    val_decision: np.ndarray
    test_decision: np.ndarray
    metrics: dict
    samples: list[dict]

    def columns(self, split: Split) -> list[pl.Series]:
        n_val, n_test = split.part("val").height, split.part("test").height
        review = _column(n_val, self.val_idx, self.val_results, "review") + _column(n_test, self.test_idx, self.test_results, "review")
        conf = _column(n_val, self.val_idx, self.val_results, "confidence") + _column(n_test, self.test_idx, self.test_results, "confidence")
        return [pl.Series("review", review, dtype=pl.String), pl.Series("confidence", conf, dtype=pl.Float64)]


class Reviewer:
    """Evidence -> text -> LLM review -> gamma for chosen hypotheses (paper §3.2-3.4)."""

    def __init__(self, cfg: DictConfig, split: Split, kg: KG, mode: str):
        from hygrail.review.client import ReviewClient

        self.cfg, self.split, self.kg, self.mode = cfg, split, kg, mode
        self.templates = _plain(cfg.relation)["templates"]
        self.evidence_cfg = _plain(cfg.evidence)
        # The cell's seed is the LLM's sampling seed: seeds re-sample the reviewer too (and key the cache).
        self.client = ReviewClient(_plain(cfg.llm) | {"seed": int(cfg.seed)}, Path(cfg.paths.cache) / "llm.sqlite")
        self.naturalize_failures = 0  # LLM-naturalization calls that failed (template text used instead)

    def run(self, pick_val, pick_test, s_val, s_test, fb_val, fb_test, base_val=None) -> Review:
        """Review the picked hypotheses; gamma maximises validation F1 of the final decision, whose
        other (unreviewed) val decisions are ``base_val`` (0/1 per val row, or None)."""
        from hygrail.review.calibrate import choose_gamma, decide

        split = self.split
        y_val = split.part("val")["label"].to_numpy()
        t0 = time.perf_counter()
        try:
            res_val, samples_val = self.review(split.part("val"), pick_val, s_val, "val")
            res_test, samples_test = self.review(split.part("test"), pick_test, s_test, "test")
        finally:
            self.client.close()  # stops an embedded llama.cpp server, closes the reply cache
        self.check_failures(res_val + res_test)
        on_failure = self.cfg.method.get("on_failure", "fallback")
        base = (0, 0, 0)
        if base_val is not None:
            rest = np.ones(len(y_val), bool)
            rest[pick_val] = False
            c = prf(y_val[rest], base_val[rest])
            base = (int(c["tp"]), int(c["fp"]), int(c["fn"]))
        gamma = choose_gamma(res_val, y_val[pick_val], fb_val, on_failure, base_counts=base)
        metrics = {"gamma": gamma, "llm_wall_seconds": time.perf_counter() - t0,
                   "llm_naturalize_failures": float(self.naturalize_failures)}
        metrics |= {f"llm_{k}": float(v) for k, v in self.client.usage().items()}
        return Review(pick_val, pick_test, res_val, res_test, decide(res_val, gamma, fb_val, on_failure),
                      decide(res_test, gamma, fb_test, on_failure), metrics, samples_val + samples_test)

    def check_failures(self, results: list) -> None:
        """A reviewer that mostly gives no usable verdict would leave the fallback's numbers under
        the method's name: stop the cell instead."""
        from hygrail.review.contract import LLMCallError, commonest_failure

        failed = [r.failure for r in results if not r.ok]
        rate = float(self.cfg.method.get("max_review_failure_rate", 1.0))
        if failed and len(failed) > rate * len(results):
            kind, n, _ = commonest_failure(failed)
            raise LLMCallError(
                f"llm {self.cfg.llm.name}: {len(failed)} of {len(results)} reviews gave no usable verdict ({n} {kind}), "
                f"over method.max_review_failure_rate={rate}; see the raw replies in the reply cache "
                f"({self.client.cache.path if self.client.cache else 'none'}); raise llm.max_tokens or check the prompt")

    def text(self, ev, score: float, summary: str | None = None) -> tuple[str, str | None]:
        from hygrail.evidence.naturalize import render, structured_lines, wrap_summary

        statement = render(ev, "none", self.templates)
        if self.mode == "kgfm":
            context = "\n".join(structured_lines(ev, self.templates))
            return statement, f"Hypothesis: {statement}\nKnowledge graph context:\n{context}"
        if self.mode == "llm" and summary is not None:
            # The naturalizer's summary was fetched in one concurrent batch (see review()).
            return statement, wrap_summary(ev, self.templates, summary, score, self.evidence_cfg)
        return statement, render(ev, "template", self.templates, score, self.evidence_cfg)

    def review(self, part: pl.DataFrame, idx: np.ndarray, scores: np.ndarray, name: str):
        from hygrail.evidence.naturalize import naturalize_messages
        from hygrail.evidence.retrieve import retrieve
        from hygrail.review.client import ReviewRequest

        src, dst, labels = part["src"].to_numpy(), part["dst"].to_numpy(), part["label"].to_numpy()
        if self.mode == "none":  # HyGRAIL-NE: the statement only, nothing to retrieve
            statements = [self.templates["hypothesis"].format(left=self.kg.label(int(src[i])), right=self.kg.label(int(dst[i])))
                          for i in idx]
            results = self.client.review_many([ReviewRequest(hypothesis=s) for s in statements])
            samples = [{"split": name, "score": float(scores[i]), "label": int(labels[i]), "hypothesis": s, "evidence": None,
                        "review": r.review, "confidence": r.confidence, "reasoning": r.reasoning, "failure": r.failure}
                       for i, s, r in zip(idx, statements, results)]
            return results, samples
        evidence = [retrieve(self.split.train_graph, int(src[i]), int(dst[i]), self.split.relation, self.evidence_cfg)
                    for i in tqdm(idx, desc=f"evidence ({name})", unit="hyp", disable=len(idx) < 50)]
        summaries = [None] * len(evidence)
        if self.mode == "llm":
            summaries = self.client.chat_many([naturalize_messages(ev, self.templates) for ev in evidence],
                                              max_tokens=int(self.evidence_cfg["naturalize_max_tokens"]))
            failed = sum(s is None for s in summaries)
            self.naturalize_failures += failed
            if failed:
                log.warning("%d of %d LLM naturalizations failed; those hypotheses got template evidence", failed, len(evidence))
        requests, samples = [], []
        for i, ev, summary in zip(idx, evidence, summaries):
            statement, text = self.text(ev, float(scores[i]), summary)
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

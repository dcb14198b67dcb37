"""One cell of the sweep = (data, relation, backbone, llm, evidence, method), composed from the
stages of DESIGN.md in one direction:

    KG -> split -> scores (cached) -> route -> evidence -> text -> review (cached) -> gamma -> metrics

Each stage is a plain function in its own module (the ones ``task=discover`` shares are in
``hygrail.stages``); this file only wires one cell and records what it did (figures for MLflow,
per-hypothesis predictions, a sample of evidence texts with replies).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import polars as pl
from omegaconf import DictConfig

from hygrail.data.split import Split
from hygrail.evidence.mode import load_mode
from hygrail.kg import KG, DataError
from hygrail.metrics import attribution, prf
from hygrail.review.calibrate import fit_metrics
from hygrail.review.stage import check_failures, choose_gamma, decide, fallback_note
from hygrail.stages import (build_split, flip_values, gnn_stage, hypotheses, labels, plain, prediction_table,
                            review_order, reviewer_for, thresholded, val_gamma)


@dataclass
class CellResult:
    metrics: dict[str, float]
    predictions: pl.DataFrame  # one row per val/test hypothesis
    samples: list[dict] = field(default_factory=list)  # evidence texts with LLM replies
    band: tuple[float, float] | None = None
    gnn_threshold: float | None = None
    tags: dict[str, str] = field(default_factory=dict)  # e.g. split=temporal|partial|random


def run_cell(cfg: DictConfig, logger=None) -> CellResult:
    """One cell; ``logger``: a Lightning logger receiving the triage training curves (if it trains)."""
    method = cfg.method.name
    if method not in METHODS:
        raise DataError(f"method={method!r}; expected one of {sorted(METHODS)}")
    kg, split = build_split(cfg)
    result = METHODS[method](cfg, kg, split, logger)
    # A split without edge years is random, which makes link prediction easier: say so on the run.
    result.tags |= {"split": split.kind, "split_ties": split.ties, "split_graph_cut": split.graph_cut}
    if split.dated is not None:
        result.metrics["split_dated_positives"] = float(split.dated)
    return result


def _method_metrics(metrics: dict, prefix: str) -> dict:
    """A thresholded score model's own test and validation metrics, under the method's names
    (test_f1, test_auc, val_ap, ...)."""
    return {k.removeprefix(prefix): v for k, v in metrics.items() if k.startswith((f"{prefix}test_", f"{prefix}val_"))}


def run_gnn_only(cfg: DictConfig, kg: KG, split: Split, logger=None) -> CellResult:
    t, metrics, predictions = gnn_stage(cfg, kg, split, logger)
    metrics |= _method_metrics(metrics, "gnn_")
    metrics |= {"test_call_rate": 0.0, "val_call_rate": 0.0}  # no LLM; band_*_call_rate says what HyGRAIL would route
    return CellResult(metrics, predictions.with_columns(pl.col("gnn_pred").alias("pred")), band=t.band, gnn_threshold=t.threshold)


def run_hygrail(cfg: DictConfig, kg: KG, split: Split, logger=None) -> CellResult:
    """Paper §3: triage band -> evidence -> text -> review -> gamma; the GNN decides outside the band.

    Cost, in the paper's sense: ``test_call_rate`` is the share of test hypotheses routed to the LLM
    (the band). Under a review budget only part of the band is reviewed: ``test_review_rate`` (its
    share of test) and ``test_band_reviewed_share`` (its share of the band) say how much; the rest
    keeps the GNN-only decision. ``test_attr_*`` says which region changed which decisions."""
    t, metrics, predictions = gnn_stage(cfg, kg, split, logger)
    r_val, r_test = t.route_val, t.route_test
    y_val, y_test = labels(split)
    gnn_val = predictions.filter(pl.col("split") == "val")["gnn_pred"].to_numpy()
    gnn_test = predictions.filter(pl.col("split") == "test")["gnn_pred"].to_numpy()
    mode = load_mode(plain(cfg.evidence), plain(cfg.relation)["templates"], t.calibrated())
    with reviewer_for(cfg, mode, split) as reviewer:
        scores = {"val": t.scores.val, "test": t.scores.test}
        d = review_and_decide(cfg, t, y_val, gnn_val, gnn_test,
                              lambda part, idx: reviewer.review(hypotheses(split.part(part), idx, scores[part])))
        metrics |= reviewer.metrics()
        cache, examples = reviewer.cache_path(), reviewer.shown_examples  # logging must not build it
    pick_val, pick_test, rev_val, rev_test, final_val, final_test = (d.pick_val, d.pick_test, d.rev_val, d.rev_test,
                                                                     d.final_val, d.final_test)
    fell_back = check_failures([r.result for r in rev_val + rev_test], float(cfg.method["max_review_failure_rate"]),
                               cfg.llm.name, cache)
    routed_test = int(np.sum(r_test == -1))
    metrics |= {
        "val_call_rate": float(np.mean(r_val == -1)),
        "test_call_rate": float(np.mean(r_test == -1)),
        "val_reviewed": len(pick_val),
        "test_reviewed": len(pick_test),
        "test_review_rate": len(pick_test) / len(y_test),
        "test_band_reviewed_share": len(pick_test) / routed_test if routed_test else 1.0,
        "test_routed_unreviewed": routed_test - len(pick_test),
    }
    region_test = regions(r_test, pick_test)
    metrics |= fit_metrics(d.fit) | prf(y_test, final_test, "test_") | prf(y_val, final_val, "val_")
    metrics |= attribution(y_test, gnn_test, final_test, region_test, "test_")
    metrics |= breakdown(mode, rev_test, y_test[pick_test], final_test[pick_test], "test_")
    predictions = predictions.with_columns(
        pl.Series("region", np.concatenate([regions(r_val, pick_val), region_test])),
        pl.Series("pred", np.concatenate([final_val, final_test]).astype(np.int8)),
        *_review_columns(split, [(pick_val, rev_val), (pick_test, rev_test)]),
    )
    samples = _fewshot_samples(examples) + _samples(kg, split, rev_val, rev_test)[: int(cfg.log_samples)]
    return CellResult(metrics | {"review_fallback_share": fell_back}, predictions, samples, t.band, t.threshold,
                      _fallback_tags(fell_back))


@dataclass
class Decided:
    """What a cell's review stage picked, reviewed, fit and decided (``review_and_decide``)."""

    pick_val: np.ndarray  # validation rows reviewed
    pick_test: np.ndarray
    rev_val: list  # their Reviewed, row for row
    rev_test: list
    fit: object  # the rule as fit on validation: gamma, or a calibrate.Combined (llm.decision=calibrated)
    final_val: np.ndarray  # HyGRAIL's decision of every validation / test hypothesis
    final_test: np.ndarray


def review_and_decide(cfg: DictConfig, t, y_val: np.ndarray, gnn_val: np.ndarray, gnn_test: np.ndarray,
                      review: Callable[[str, np.ndarray], list]) -> Decided:
    """Paper §3.4 on one cell's triage ``t``: which routed hypotheses are reviewed (``method.review_budget``,
    ``method.review_order``), the rule fit on the validation reviews (``llm.decision``, gamma or the
    combined model; ``method.calibration``, ``method.combined_cut``), then every decision.
    ``review(part, rows)`` returns the Reviewed of those rows of split part ``part``: the LLM's here,
    a simulated reviewer's in bench/bench_review.py, which so measures the cell's own choices.
    Validation is reviewed first: ``expected_value`` ranks the test band by the rule fit on it."""
    budget, order = cfg.method.get("review_budget") or {}, cfg.method.get("review_order", "ambiguous")
    on_failure, rule = cfg.method.get("on_failure", "fallback"), cfg.llm.get("decision", "paper")
    options = {"calibration": cfg.method.get("calibration", "platt"), "cut": cfg.method.get("combined_cut", "max_f1")}
    r_val, r_test = t.route_val, t.route_test
    pick_val = review_order(t.scores.val, r_val == -1, t.threshold, budget.get("val"), int(cfg.seed), order)
    rev_val = review("val", pick_val)
    fit = val_gamma(r_val, gnn_val, y_val, pick_val, rev_val, on_failure, rule, **options)
    value = None
    if order == "expected_value":
        routed = r_val == -1
        value = np.full(len(r_test), np.nan)
        value[r_test == -1] = flip_values(fit, rule, rev_val, y_val[pick_val], t.scores.val[routed], y_val[routed],
                                          t.scores.test[r_test == -1], gnn_test[r_test == -1])
    pick_test = review_order(t.scores.test, r_test == -1, t.threshold, budget.get("test"), int(cfg.seed) + 1, order,
                             value)
    rev_test = review("test", pick_test)
    final_val = _combine(r_val, gnn_val, pick_val, decide(rev_val, fit, gnn_val[pick_val], on_failure, rule))
    final_test = _combine(r_test, gnn_test, pick_test, decide(rev_test, fit, gnn_test[pick_test], on_failure, rule))
    return Decided(pick_val, pick_test, rev_val, rev_test, fit, final_val, final_test)


def _fallback_tags(share: float) -> dict[str, str]:
    """The MLflow tag that names a cell whose reviews partly fell back (``stage.fallback_note``)."""
    return {"review_fallback": note} if (note := fallback_note(share)) else {}


def regions(route: np.ndarray, picked: np.ndarray) -> np.ndarray:
    """Which part of HyGRAIL decided each hypothesis (``REGIONS``): below a*, above b*, the LLM, or
    routed but over the review budget (the GNN-only decision)."""
    out = np.where(route == 0, "auto_reject", np.where(route == 1, "auto_accept", "over_budget")).astype(object)
    out[picked] = "reviewed"
    return out.astype(str)


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
    """KG-FM baseline (after Bai et al. 2025): the LLM reviews every candidate with raw KG triples as
    context (``method.context``, hygrail/baselines/kgfm.py), no GNN score, no triage; gamma by the
    same rule on validation. With ``method.cap`` a stratified sample is reviewed and metrics are
    computed on that sample."""
    y_val, y_test = labels(split)
    cap = cfg.method.get("cap") or {}
    pick_val = stratified_cap(y_val, cap.get("val"), int(cfg.seed))
    pick_test = stratified_cap(y_test, cap.get("test"), int(cfg.seed) + 1)
    mode = load_mode(plain(cfg.method.context), plain(cfg.relation)["templates"])
    with reviewer_for(cfg, mode, split) as reviewer:
        rev_val = reviewer.review(hypotheses(split.part("val"), pick_val, None))
        rev_test = reviewer.review(hypotheses(split.part("test"), pick_test, None))
        metrics = reviewer.metrics()
        cache = reviewer.cache_path()
    fell_back = check_failures([r.result for r in rev_val + rev_test], float(cfg.method["max_review_failure_rate"]),
                               cfg.llm.name, cache)
    # A failed review has no GNN to fall back on: on_failure (reject by default) decides it.
    on_failure = cfg.method.get("on_failure", "reject")
    none_val, none_test = np.zeros(len(pick_val), int), np.zeros(len(pick_test), int)
    rule = cfg.llm.get("decision", "paper")
    gamma = choose_gamma(rev_val, y_val[pick_val], none_val, on_failure, rule=rule)
    dec_val, dec_test = (decide(rev_val, gamma, none_val, on_failure, rule),
                         decide(rev_test, gamma, none_test, on_failure, rule))
    metrics |= {"gamma": gamma} | prf(y_test[pick_test], dec_test, "test_") | prf(y_val[pick_val], dec_val, "val_")
    # Every candidate goes to the LLM (call rate 1); a cap only evaluates a sample of them.
    metrics |= {"test_call_rate": 1.0, "val_call_rate": 1.0, "test_review_rate": 1.0,
                "test_sampled": float(len(pick_test) < len(y_test)), "test_evaluated": float(len(pick_test))}
    pred = np.full(len(y_val) + len(y_test), -1, dtype=np.int8)  # -1: outside the evaluated sample
    pred[pick_val] = dec_val
    pred[len(y_val) + pick_test] = dec_test
    zeros_val, zeros_test = np.zeros(len(y_val)), np.zeros(len(y_test))
    predictions = prediction_table(kg, split, zeros_val, zeros_test, zeros_val, zeros_test).drop("score", "gnn_pred")
    predictions = predictions.with_columns(
        pl.Series("pred", pred), *_review_columns(split, [(pick_val, rev_val), (pick_test, rev_test)]))
    return CellResult(metrics | {"review_fallback_share": fell_back}, predictions,
                      _samples(kg, split, rev_val, rev_test)[: int(cfg.log_samples)], tags=_fallback_tags(fell_back))


def run_tsh(cfg: DictConfig, kg: KG, split: Split, logger=None) -> CellResult:
    """TSH baseline (after Marwitz et al. 2026): topological + name-embedding features, weights and
    threshold from validation (``routing.threshold``'s rule, as for the GNN, so that a sweep compares
    the two under one rule)."""
    from hygrail.baselines.tsh import tsh_scores

    res = tsh_scores(split, plain(cfg.method), cfg.routing.threshold)
    metrics, predictions = thresholded(kg, split, res.val, res.test, res.threshold, "tsh_")
    metrics |= _method_metrics(metrics, "tsh_") | {"test_call_rate": 0.0, "val_call_rate": 0.0}
    metrics |= {f"tsh_weight_{k}": float(v) for k, v in res.weights.items()} | {"tsh_fit_seconds": res.seconds}
    return CellResult(metrics, predictions.rename({"gnn_pred": "pred"}), gnn_threshold=res.threshold)


def run_gbdt(cfg: DictConfig, kg: KG, split: Split, logger=None) -> CellResult:
    """Science4Cast-style trees on the training graph's own earlier transitions
    (hygrail/baselines/transitions.py), mapped to [0, 1] and thresholded on validation as
    ``run_structural``'s heuristics are."""
    from hygrail.baselines.transitions import gbdt_scores

    res = gbdt_scores(split, plain(cfg.method), cfg.routing.threshold, int(cfg.seed))
    metrics, predictions = thresholded(kg, split, res.val, res.test, res.threshold, "gbdt_")
    metrics |= _method_metrics(metrics, "gbdt_") | {"test_call_rate": 0.0, "val_call_rate": 0.0}
    metrics |= {f"gbdt_{k}": v for k, v in res.info.items()} | {"gbdt_fit_seconds": res.seconds}
    return CellResult(metrics, predictions.rename({"gnn_pred": "pred"}), gnn_threshold=res.threshold)


def run_structural(cfg: DictConfig, kg: KG, split: Split, logger=None) -> CellResult:
    """Structural baselines (hygrail/baselines/structural.py: PA, CN, AA, 3-paths, L3, degree prior):
    a heuristic on the training graph, mapped to [0, 1] and thresholded on validation by
    ``routing.threshold``'s rule, as TSH is."""
    from hygrail.baselines.structural import structural_scores

    res = structural_scores(split, plain(cfg.method), cfg.routing.threshold)
    metrics, predictions = thresholded(kg, split, res.val, res.test, res.threshold, "structural_")
    metrics |= _method_metrics(metrics, "structural_") | {"test_call_rate": 0.0, "val_call_rate": 0.0}
    metrics |= {f"structural_weight_{k}": v for k, v in res.weights.items()} | {"structural_fit_seconds": res.seconds}
    return CellResult(metrics, predictions.rename({"gnn_pred": "pred"}), gnn_threshold=res.threshold)


def run_kge(cfg: DictConfig, kg: KG, split: Split, logger=None) -> CellResult:
    """KG-embedding baseline (hygrail/baselines/kge.py: PyKEEN RotatE by default): trained on the
    split's training graph (under ``split.graph_cut=time`` another on the test graph for the test
    pairs), its scores mapped to [0, 1] and thresholded on validation as ``run_structural``'s."""
    from hygrail.baselines.kge import kge_scores

    res = kge_scores(split, plain(cfg.method), cfg.routing.threshold)
    metrics, predictions = thresholded(kg, split, res.val, res.test, res.threshold, "kge_")
    metrics |= _method_metrics(metrics, "kge_") | {"test_call_rate": 0.0, "val_call_rate": 0.0}
    metrics |= {f"kge_weight_{k}": v for k, v in res.weights.items()} | {"kge_fit_seconds": res.seconds}
    return CellResult(metrics, predictions.rename({"gnn_pred": "pred"}), gnn_threshold=res.threshold)


METHODS = {"gnn_only": run_gnn_only, "hygrail": run_hygrail, "kgfm": run_kgfm, "tsh": run_tsh,
           "structural": run_structural, "kge": run_kge, "gbdt": run_gbdt}


def _combine(routed: np.ndarray, gnn: np.ndarray, picked: np.ndarray, llm: np.ndarray) -> np.ndarray:
    """Three-way decision: 0 below a*, 1 above b*, the LLM's decision for reviewed routed hypotheses,
    and the GNN-only decision for routed ones left over a review budget."""
    out = np.where(routed == -1, gnn, routed).astype(int)
    out[picked] = llm
    return out


def breakdown(mode, reviewed: list, labels: np.ndarray, final: np.ndarray, prefix: str) -> dict[str, float]:
    """Precision/recall/F1 of the final decisions on the reviewed hypotheses per value of each info
    key the evidence mode lists in ``breakdown`` (e.g. ARIA's tiers)."""
    out = {}
    for key in mode.breakdown:
        values = np.array([str(r.prepared.info.get(key)) for r in reviewed], dtype=object)
        for v in sorted(set(values)):
            sel = values == v
            m = prf(labels[sel], final[sel])
            out |= {f"{prefix}by_{key}_{v}_{k}": m[k] for k in ("n", "precision", "recall", "f1")}
    return out


def _review_columns(split: Split, parts: list[tuple[np.ndarray, list]]) -> list[pl.Series]:
    """review, confidence and the evidence mode's info fields per val/test row (null where not reviewed)."""
    n = [split.part("val").height, split.part("test").height]
    cols: dict[str, list] = {c: [None] * sum(n) for c in ("review", "confidence", "skip")}
    for offset, (idx, reviewed) in zip((0, n[0]), parts):
        for i, r in zip(idx, reviewed):
            res = r.result
            row = {"review": res.review if res else None, "confidence": res.confidence if res else None,
                   "skip": r.prepared.skip} | r.prepared.info
            for k, v in row.items():
                cols.setdefault(k, [None] * sum(n))[offset + int(i)] = v
    dtypes = {"review": pl.String, "confidence": pl.Float64, "skip": pl.String}
    return [pl.Series(k, v, dtype=dtypes.get(k)) for k, v in cols.items()]


def _fewshot_samples(examples: list) -> list[dict]:
    """The cell's few-shot block (split "fewshot"), logged with the evidence samples."""
    return [{"split": "fewshot", "hypothesis": e.request.hypothesis, "evidence": e.request.evidence,
             "label": int(e.verdict == "yes"), "review": e.verdict} for e in examples]


def _samples(kg: KG, split: Split, rev_val: list, rev_test: list) -> list[dict]:
    """Evidence texts with the replies, for the cell's evidence_samples.json artifact."""
    out = []
    for name, reviewed in (("val", rev_val), ("test", rev_test)):
        labels = dict(zip(zip(split.part(name)["src"].to_list(), split.part(name)["dst"].to_list()),
                          split.part(name)["label"].to_list()))
        for r in reviewed:
            h, p, res = r.hypothesis, r.prepared, r.result
            out.append({"split": name, "left": kg.label(h.src), "right": kg.label(h.dst), "score": h.score,
                        "label": labels[(h.src, h.dst)], "hypothesis": p.statement, "evidence": p.text,
                        "structured": p.structured, "info": p.info, "skip": p.skip}
                       | ({"review": res.review, "confidence": res.confidence, "reasoning": res.reasoning,
                           "failure": res.failure} if res else {}))
    return out

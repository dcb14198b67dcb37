"""The reviewing stage of ``task=discover``: the LLM reviews the candidates ``discover.order`` picks
(the best routed ones under ``paper``, the head of the GNN's list under ``reviewed``), and the review
rule (gamma, or the combined model) is fit on validation hypotheses drawn where those candidates lie
(``like_reviewed``) and checked on test hypotheses drawn the same way (``review``). The tuned
reviewer's re-ordered heads are scored here too (``reviewed_heads``, ``rerank``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from omegaconf import DictConfig

from hygrail.discovery import entities, rerank
from hygrail.discovery.retro import answers
from hygrail.discovery.scoring import GNNBlocks
from hygrail.discovery.trust import region_precision, reviewer_figures
from hygrail.evidence.mode import Hypothesis, load_mode
from hygrail.kg import KG
from hygrail.review.stage import check_failures, decide
from hygrail.stages import hypotheses, plain, reviewer_for, val_gamma

if TYPE_CHECKING:
    from hygrail.discovery.report import Discovery


def review(cfg: DictConfig, d: dict, split, triage, routed, gnn: GNNBlocks, graph):
    """LLM review of ``routed`` (the best routed candidates under ``discover.order=paper``, the head
    of the GNN's list under ``reviewed``), the rule (``llm.decision``: gamma, or the combined model
    of ``calibrated``) fit on validation hypotheses drawn where the reviewed candidates lie
    (``like_reviewed``), and test hypotheses drawn the same way for the reviewed region's held-out
    precision (``trust``): (reviewed, decisions, the rule's fit, metrics, the reviewer's slow-review note
    or None). The candidates' evidence
    is read from ``graph`` (the cut graph), the validation and test hypotheses' from the training
    graph, where they are not edges. The draw is from the
    routed hypotheses under ``paper`` (the candidates are routed ones) and from every validation
    (test) hypothesis under ``reviewed`` (the candidates may lie above b*, or below a*)."""
    mode = load_mode(plain(cfg.evidence), plain(cfg.relation)["templates"], triage.calibrated())
    y_val, y_test = split.part("val")["label"].to_numpy(), split.part("test")["label"].to_numpy()
    r_val = triage.route_val
    gnn_val = (triage.scores.val >= triage.threshold).astype(int)
    gnn_test = (triage.scores.test >= triage.threshold).astype(int)
    probs = gnn.probability(routed.score)
    budget = d["review_budget"]
    anywhere = d.get("order", "paper") == "reviewed"
    pool_val = np.ones(len(r_val), bool) if anywhere else r_val == -1
    pool_test = np.ones(len(triage.route_test), bool) if anywhere else triage.route_test == -1
    pick_val = like_reviewed(triage.scores.val, pool_val, probs, budget.get("val"), int(cfg.seed))
    pick_test = like_reviewed(triage.scores.test, pool_test, probs, budget.get("test"), int(cfg.seed) + 1)
    hyps = [Hypothesis(int(s), int(t), float(p)) for s, t, p in zip(routed.src, routed.dst, probs)]
    with reviewer_for(cfg, mode, split) as reviewer:
        rev_val = reviewer.review(hypotheses(split.part("val"), pick_val, triage.scores.val))
        rev_test = reviewer.review(hypotheses(split.part("test"), pick_test, triage.scores.test))
        reviewer.graph = graph  # one server, one cache: only where the evidence is read changes
        reviewed = reviewer.review(hyps)
        metrics = reviewer.metrics()
        slow = reviewer.client.slow_note  # why the embedded judge was slow, for the page (embedded.slow_note)
        cache = reviewer.cache_path()
    fell_back = check_failures([r.result for r in rev_val + rev_test + reviewed],
                               float(cfg.method["max_review_failure_rate"]), cfg.llm.name, cache)
    on_failure, rule = cfg.method.get("on_failure", "fallback"), cfg.llm.get("decision", "paper")
    gamma = val_gamma(r_val, gnn_val, y_val, pick_val, rev_val, on_failure, rule,
                      calibration=cfg.method.get("calibration", "platt"), cut=cfg.method.get("combined_cut", "max_f1"))
    decisions = decide(reviewed, gamma, (probs >= triage.threshold).astype(int), on_failure, rule)
    dec_test = decide(rev_test, gamma, gnn_test[pick_test], on_failure, rule)
    metrics |= {"discover_val_reviewed": float(len(pick_val)), "discover_test_reviewed": float(len(pick_test)),
                "discover_reviewed": float(len(reviewed)), "review_fallback_share": fell_back,
                "discover_llm_accepted": float(decisions.sum())}
    metrics |= region_precision(split, triage, pick_test, dec_test)
    metrics |= reviewer_figures("val", y_val[pick_val], decide(rev_val, gamma, gnn_val[pick_val], on_failure, rule))
    metrics |= reviewer_figures("test", y_test[pick_test], dec_test)
    return reviewed, decisions, gamma, metrics, slow


def like_reviewed(scores: np.ndarray, routed: np.ndarray, reviewed: np.ndarray, budget: int | None,
                  seed: int) -> np.ndarray:
    """Indices of the validation hypotheses gamma is chosen on, among the pool ``routed`` (a mask):
    those whose GNN score lies nearest the score range of the reviewed candidates (inside it first,
    ties by a seeded shuffle), ``budget`` of them (the whole pool when None).

    Discovery reviews the best-scored band candidates, near b* (``discover.order=paper``; the pool
    is the routed hypotheses), or the head of the GNN's list (``reviewed``; the pool is every
    validation hypothesis); the GNN score need not rank anything there, so a gamma set on another
    slice (e.g. the hypotheses nearest the GNN threshold, ``task=run``'s ``ambiguous`` order) does
    not transfer to them (``review_order``)."""
    idx = np.flatnonzero(routed)
    if budget is None or budget >= len(idx) or len(reviewed) == 0:
        return idx
    lo, hi = float(np.min(reviewed)), float(np.max(reviewed))
    s = scores[idx]
    gap = np.maximum(np.maximum(lo - s, s - hi), 0.0)
    shuffle = np.random.default_rng(seed).permutation(len(idx))
    return np.sort(idx[np.lexsort((shuffle, gap))[: int(budget)]])


def reviewed_heads(reviewer: "rerank.Reranker", d: dict, graph: KG, future, result: Discovery) -> dict:
    """The tuned reviewer's re-ordered heads against the stack's own order (``rerank``): known entities
    on their answers within the horizon, new ones on theirs within it, the whole-space top on
    the headline's answers; the table into ``reviewed_head.csv``, the page's note names the reviewer."""
    cutoff, horizon = int(d["cutoff"]), int(entities.baseline_options(d)["horizon"])

    def grouped(src, dst) -> dict:
        out: dict[int, set] = {}
        for u, v in zip(np.asarray(src).tolist(), np.asarray(dst).tolist()):
            out.setdefault(u, set()).add(v)
        return out

    within = future.new_within(cutoff, horizon) if len(future.new_src) else np.zeros(0, bool)
    h, _, min_count = result.retro.headline
    hit = answers(future.year, future.count, cutoff, h, min_count) == 1
    on_horizon = future.year <= cutoff + horizon  # entity_retro.KNOWN_ROW: the answers within the horizon (issue #54)
    table, metrics = reviewer.evaluate(graph, {"known": grouped(future.src[on_horizon], future.dst[on_horizon]),
                                               "new": grouped(future.new_src[within], future.new_dst[within])},
                                       set(zip(future.src[hit].tolist(), future.dst[hit].tolist())))
    result.out.mkdir(parents=True, exist_ok=True)
    table.write_csv(result.out / "reviewed_head.csv")
    if result.entities is not None:
        result.entities.note += " " + reviewer.note(table)
    return metrics

"""The stages ``task=run`` (``pipeline``) and ``task=discover`` (``discovery``) share, in data-flow
order (DESIGN.md): the split, the triage (scores, threshold, band, routes), which routed
hypotheses a review budget keeps, the reviewer, and gamma on validation. Each is a plain function
of its inputs; a task composes them and adds only what is its own (a cell's metrics and
predictions; discovery's walk over the candidate space). A third task would compose them too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import polars as pl
from omegaconf import DictConfig, OmegaConf

from hygrail.data import load_kg
from hygrail.data.split import Split, split_from_config
from hygrail.evidence.mode import Hypothesis
from hygrail.kg import KG, DataError
from hygrail.metrics import prf, ranking
from hygrail.review.stage import choose_gamma


def plain(node) -> dict:
    """A config node as a plain dict (resolved), or a mapping copied."""
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else dict(node)


def build_split(cfg: DictConfig, kg: KG | None = None) -> tuple[KG, Split]:
    """The KG ``cfg.data`` names (or ``kg``, e.g. discovery's graph before a cutoff) and its split."""
    kg = load_kg(plain(cfg.data)) if kg is None else kg
    return kg, split_from_config(kg, kg.schema.relation(cfg.relation.name), plain(cfg.split))


REVIEW_ORDERS = ("ambiguous", "random", "expected_value")


def review_order(scores: np.ndarray, candidates: np.ndarray, centre: float, budget: int | None, seed: int,
                 order: str = "ambiguous", value: np.ndarray | None = None) -> np.ndarray:
    """Indices of the candidates to review: all of them, or ``budget`` of them when a review budget
    is set (``method.review_order``): the most ambiguous (closest to the GNN decision threshold), a
    seeded random sample of the band, or (``expected_value``) those with the highest ``value``, the
    probability that their review flips their decision (``flip_values``). Ties are broken by a seeded
    shuffle, not by row order (rows come positives first).

    ``random`` exists because inside the band the GNN score need not rank anything: on `make run`'s
    synthetic CHM-APL the GNN threshold (0.088) lies above the band [0.026, 0.080] and the GNN's AUC
    inside the validation band is 0.48, so "closest to the threshold" is just the top slice
    of the band; a random sample is representative of the band, so gamma chosen on it transfers.
    ``expected_value`` needs the rule as fit on validation reviews, so on validation itself (no
    ``value``) it draws the random sample the rule is then fit on."""
    if order not in REVIEW_ORDERS:
        raise DataError(f"method.review_order={order!r}: expected one of {REVIEW_ORDERS}")
    idx = np.flatnonzero(candidates)
    if budget is None or budget >= len(idx):
        return idx
    shuffle = np.random.default_rng(seed).permutation(len(idx))
    if order == "random" or (order == "expected_value" and value is None):
        return np.sort(idx[shuffle[: int(budget)]])
    key = -np.asarray(value, dtype=float)[idx] if order == "expected_value" else np.abs(scores[idx] - centre)
    return np.sort(idx[np.lexsort((shuffle, key))[: int(budget)]])


def flip_values(fit, rule: str, rev_val: list, y_picked: np.ndarray, s_routed: np.ndarray, y_routed: np.ndarray,
                scores: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Per hypothesis (``scores``, ``current`` decisions), the probability that its review flips its
    decision (``calibrate.flip_probability``) under the rule as fit (``fit``) on the validation reviews
    ``rev_val`` (labels ``y_picked``); its prior P(positive | score) is fit on the validation routed
    hypotheses (``s_routed``, ``y_routed``: labels only, no review needed). Reviews the evidence mode
    skipped say nothing of the reviewer and are left out."""
    from hygrail.review.calibrate import flip_probability, gnn_prior

    kept = [i for i, r in enumerate(rev_val) if r.result is not None]
    prior = gnn_prior(s_routed, y_routed)(scores)
    return flip_probability(fit, rule, [rev_val[i].result for i in kept], np.asarray(y_picked)[kept], scores, current,
                            prior)


def labels(split: Split) -> tuple[np.ndarray, np.ndarray]:
    return split.part("val")["label"].to_numpy(), split.part("test")["label"].to_numpy()


@dataclass
class Triage:
    """Paper §3.1 on one split: scores, the GNN-only threshold, the band and the three-way routes."""

    scores: object  # hygrail.triage.train.Scores
    threshold: float
    band: tuple[float, float]  # clipped to [0, 1]: an infeasible side's infinite cut routes the same
    route_val: np.ndarray  # 0 below a*, 1 above b*, -1 routed
    route_test: np.ndarray

    def calibrated(self) -> dict[str, float]:
        """The validation-calibrated quantities evidence rules may name (conf/evidence contradiction cuts)."""
        return {"gnn_threshold": self.threshold, "band_low": self.band[0], "band_high": self.band[1]}


def gnn_stage(cfg: DictConfig, kg: KG, split: Split, logger=None) -> tuple[Triage, dict, pl.DataFrame]:
    """Backbone scores (trained once per relation/backbone/seed, then cached), the GNN-only decision
    at the validation threshold of ``routing.threshold`` (the paper's max-F1 unless set), and the
    purity band [a*, b*] with its call rates."""
    from hygrail.triage.routing import calibrate_band, route
    from hygrail.thresholds import decision_threshold
    from hygrail.triage.train import triage_scores

    y_val = labels(split)[0]
    scores = triage_scores(split, plain(cfg.backbone), int(cfg.seed), Path(cfg.paths.cache) / "triage", progress=True,
                           logger=logger)
    if logger is not None:  # the run links the trained model it used, trained now or cached
        logger.log_hyperparams({"triage_key": scores.key, "triage_checkpoint": scores.checkpoint})
    threshold = decision_threshold(scores.val, y_val, cfg.routing.threshold)
    metrics, table = thresholded(kg, split, scores.val, scores.test, threshold, "gnn_")
    band = calibrate_band(scores.val, y_val, plain(cfg.routing))
    t = Triage(scores, threshold, (float(np.clip(band.a, 0, 1)), float(np.clip(band.b, 0, 1))),
               route(scores.val, band), route(scores.test, band))
    metrics |= {
        "gnn_fit_seconds": scores.fit_seconds,
        "gnn_cache_hit": float(scores.cache_hit),
        # every numeric field of the band (the routing rule's m, n, cap, ...), cuts clipped to [0, 1]
        **{f"band_{k}": float(v) for k, v in asdict(band).items() if isinstance(v, (int, float)) and k not in ("a", "b")},
        "band_a": t.band[0],
        "band_b": t.band[1],
        "band_val_call_rate": float(np.mean(t.route_val == -1)),
        "band_test_call_rate": float(np.mean(t.route_test == -1)),
    }
    return t, metrics, table.with_columns(pl.Series("route", np.concatenate([t.route_val, t.route_test]).astype(np.int8)))


def thresholded(kg, split, s_val, s_test, threshold, prefix: str) -> tuple[dict, pl.DataFrame]:
    """Metrics and predictions of a score model with a threshold fixed on validation, and the
    ranking quality of its scores (test_auc, test_ap, val_auc, val_ap under ``prefix``)."""
    y_val, y_test = labels(split)
    p_val, p_test = (s_val >= threshold).astype(int), (s_test >= threshold).astype(int)
    metrics = {f"{prefix}threshold": threshold, **prf(y_test, p_test, f"{prefix}test_"), **prf(y_val, p_val, f"{prefix}val_"),
               **ranking(y_test, s_test, f"{prefix}test_"), **ranking(y_val, s_val, f"{prefix}val_")}
    return metrics, prediction_table(kg, split, s_val, s_test, p_val, p_test)


def val_gamma(r_val: np.ndarray, gnn_val: np.ndarray, y_val: np.ndarray, pick_val: np.ndarray, rev_val: list,
              on_failure: str, rule: str = "paper", calibration: str = "platt", cut: str = "max_f1"):
    """The review rule (``llm.decision``) fit on validation: gamma maximising validation F1 of the
    whole decision, or for ``calibrated`` the combined model and its cut (``calibrate.fit_combined``):
    the reviewed hypotheses (``pick_val``) by the rule, every other one at its fixed decision (0 / 1
    outside the band, the GNN-only decision for routed ones over the budget)."""
    base_val = np.where(r_val == -1, gnn_val, r_val)
    rest = np.ones(len(y_val), bool)
    rest[pick_val] = False  # counted by hand: every validation hypothesis may be reviewed (rest empty)
    y, p = y_val[rest] == 1, base_val[rest] == 1
    return choose_gamma(rev_val, y_val[pick_val], gnn_val[pick_val], on_failure,
                        base_counts=(int((y & p).sum()), int((~y & p).sum()), int((y & ~p).sum())), rule=rule,
                        calibration=calibration, cut=cut)


def llm_config(cfg: DictConfig) -> dict:
    """``cfg.llm`` as a plain dict, its ``domain`` (the reviewer's field in the prompts) taken from the
    KG's schema unless the llm config sets one."""
    llm = plain(cfg.llm)
    if llm.get("domain") is None and cfg.data.schema.get("domain") is not None:
        llm["domain"] = plain(cfg.data.schema.domain)
    return llm


def reviewer_for(cfg: DictConfig, mode, split: Split):
    """The reviewing stage of ``cfg.llm`` over ``mode``'s evidence from the split's training graph
    (its ``graph`` may be switched, as discovery does for its candidates)."""
    from hygrail.review.fewshot import choose
    from hygrail.review.stage import Reviewer

    # Few-shot examples: training pairs only, fixed per (relation, seed) whatever is reviewed.
    fewshot = choose(split, plain(cfg.llm.fewshot) if cfg.llm.get("fewshot") else None, int(cfg.seed))
    # A tuned reviewer learns from before validation: gamma is chosen on validation, test is the evaluation.
    history = tuned_history(cfg, split) if cfg.llm.get("tuned") else ()
    return Reviewer(llm_config(cfg), mode, split.train_graph, split.relation, Path(cfg.paths.cache) / "llm", int(cfg.seed),
                    fewshot, history)


def tuned_history(cfg: DictConfig, split: Split) -> list:
    """A tuned reviewer's rows in ``task=run`` (``llm.tuned.history``, hygrail/review/tuned.py): the split's
    training part, or (a sampled cell) the whole KG's relation edges before the first validation year."""
    from hygrail.review import tuned

    settings = tuned.settings_of(plain(cfg.llm.tuned))
    if settings["history"] == "training_part":
        return tuned.training_part(split)
    if not cfg.data.get("subgraph_nodes"):
        raise DataError("llm.tuned.history=before_validation reads the whole KG beside a sampled cell; this cell is "
                        "the whole KG (data.subgraph_nodes is null): use training_part")
    whole = load_kg(plain(cfg.data) | {"subgraph_nodes": None})
    cap = settings["max_rows"] * settings["neg_per_pos"] // (1 + settings["neg_per_pos"])
    return tuned.before_validation(whole, split, cap, int(settings["seed"]))


def hypotheses(part: pl.DataFrame, idx: np.ndarray, scores: np.ndarray | None) -> list[Hypothesis]:
    src, dst = part["src"].to_numpy(), part["dst"].to_numpy()
    return [Hypothesis(int(src[i]), int(dst[i]), None if scores is None else float(scores[i])) for i in idx]


def check_config(cfg: DictConfig) -> None:
    """Options that would otherwise fail only after a cell's GNN training (or not at all), and the
    LLM server itself: each endpoint is asked for its model list once, before any training; replicas
    that do not answer are left out of this cell (with a warning), none answering fails it."""
    from hygrail.evidence.mode import load_mode
    from hygrail.review.client import endpoints, llm_settings, probe

    if cfg.method.name in ("hygrail", "kgfm"):
        context = cfg.method.context if cfg.method.name == "kgfm" else cfg.evidence
        load_mode(plain(context), plain(cfg.relation.templates))
        if cfg.llm.get("tuned"):  # trained in the cell, no server to probe
            from hygrail.review.tuned import settings_of

            settings_of(plain(cfg.llm.tuned))
            return
        try:
            llm_settings(cfg.llm)
        except ValueError as e:
            raise DataError(str(e)) from None
        if cfg.llm.get("decision") == "calibrated" and cfg.method.name == "kgfm":
            raise DataError("llm.decision=calibrated combines each review with its GNN score: method=kgfm has none")
        live = probe(cfg.llm)
        if live and live != endpoints(llm_settings(cfg.llm)):
            cfg.llm.base_url = live  # how the cell runs, not what it is: not part of its identity


def prediction_table(kg: KG, split: Split, s_val, s_test, g_val, g_test) -> pl.DataFrame:
    """One row per val/test hypothesis: its names, score and thresholded decision (``gnn_pred``)."""
    parts = pl.concat([split.part("val"), split.part("test")])
    names = kg.names
    return parts.with_columns(
        pl.Series("left", [names[i] for i in parts["src"].to_list()]),
        pl.Series("right", [names[i] for i in parts["dst"].to_list()]),
        pl.Series("score", np.concatenate([s_val, s_test])),
        pl.Series("gnn_pred", np.concatenate([g_val, g_test]).astype(np.int8)),
    )

"""Confidence threshold γ and the review decision rule (paper §3.4).

Three rules (``llm.decision``), each fit on the validation routed (reviewed) hypotheses:

- ``paper`` (default, the paper's): accept iff the review says "yes" and its confidence is >= γ;
  γ among the confidences of the "yes" reviews.
- ``probability``: accept iff the confidence is >= γ, whatever the verdict; γ among the confidences
  of all reviews. For judges whose confidence is P(yes) from the verdict token's logprobs, where
  the verdict is only that probability rounded at 0.5: the embedded 1.5B model answered "no" to
  every one of 40 band hypotheses in `make run` (P(yes) 0.20-0.29), so the paper's rule could only
  reject, although the ranking by P(yes) carried information (AUC 0.68 on 140 band hypotheses).
  The verdict's threshold, 0.5, is then one candidate among many, picked or not by validation.
- ``calibrated`` (``fit_combined``, a ``Combined``): the review's P(yes) (or stated confidence)
  calibrated on the validation reviews (``method.calibration``: Platt or isotonic), then combined
  with the GNN score by a two-feature logistic regression over (GNN score logit, calibrated P(yes))
  fit on the same reviewed validation hypotheses; accept iff the combined probability >= a cut
  chosen on validation (``method.combined_cut``). Why: in `make run` the band holds 2.4% positives
  and the 1.5B judge's band AUC is 0.61 (GNN 0.49, experiments/judge.md), so no γ on P(yes) alone
  accepts anything profitably (γ = +inf); a weak reviewer can still move the hypotheses whose GNN
  score already sits near the cut, which only a rule that reads both signals can use.

Whose F1 the rule maximises the paper does not say: the pipeline passes the GNN's fixed validation
decisions outside the reviewed set (`base_counts`), so γ (or the cut) maximises F1 of the whole
validation decision, the quantity the tables report; with `base_counts=(0, 0, 0)` it is F1 on the
reviewed hypotheses alone. A failed review (no verdict) is decided explicitly by `on_failure`: the
GNN-only decision passed as `fallback` (default), "reject" or "accept" — never silently "no".

``flip_probability`` is what ``method.review_order=expected_value`` ranks by: the chance that a
review would change a hypothesis' current decision, under the rule as fit on validation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from hygrail.kg import DataError
from hygrail.review.contract import YES, ReviewResult
from hygrail.thresholds import THRESHOLD_RULES

ON_FAILURE = ("fallback", "reject", "accept")
DECISIONS = ("paper", "probability", "calibrated")
CALIBRATIONS = ("platt", "isotonic")
# Probabilities are clipped this far from 0 and 1 before a logit: a stated confidence of 0 or 1 stays finite.
EPS = 1e-4


def _verdicts(results: Sequence[ReviewResult]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ok = np.array([r.ok for r in results], dtype=bool)
    yes = np.array([r.ok and r.review == YES for r in results], dtype=bool)
    conf = np.array([r.confidence if r.ok else np.nan for r in results], dtype=float)
    return ok, yes, conf


def _failure_decisions(ok: np.ndarray, fallback: np.ndarray | None, on_failure: str) -> np.ndarray | None:
    """0/1 decision per item for failed reviews (values at ok items are meaningless); None when
    the failures cannot be decided because no fallback was given."""
    if on_failure not in ON_FAILURE:
        raise ValueError(f"on_failure={on_failure!r}: expected one of {ON_FAILURE}")
    if on_failure == "reject":
        return np.zeros(len(ok), dtype=np.int8)
    if on_failure == "accept":
        return np.ones(len(ok), dtype=np.int8)
    if fallback is None:
        return None
    fallback = np.asarray(fallback).astype(np.int8)
    if fallback.shape != ok.shape:
        raise ValueError(f"fallback has shape {fallback.shape}, expected ({len(ok)},): one GNN decision per review")
    return fallback


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=float), EPS, 1 - EPS)
    return np.log(p) - np.log1p(-p)


@dataclass(frozen=True)
class Combined:
    """``llm.decision=calibrated`` as fit on the validation reviews (``fit_combined``).

    ``calibrator``: P(yes) -> calibrated P(yes) (sklearn, fit on the reviews' confidences);
    ``model``: StandardScaler + LogisticRegression over (logit of the GNN score, calibrated P(yes)),
    or None when the reviewed validation hypotheses hold one class (every combined probability is
    then their positive share, ``base_rate``); accept iff the combined probability >= ``cut``."""

    calibration: str
    calibrator: object
    model: object | None
    base_rate: float
    cut: float

    def calibrated(self, confidence: np.ndarray) -> np.ndarray:
        return _calibrated(self.calibration, self.calibrator, np.asarray(confidence, dtype=float))

    def probability(self, confidence: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """The combined P(positive) of reviews with these confidences of hypotheses with these GNN scores."""
        confidence, scores = np.broadcast_arrays(np.asarray(confidence, float), np.asarray(scores, float))
        if self.model is None:
            return np.full(confidence.shape, self.base_rate)
        x = np.column_stack([logit(scores.ravel()), self.calibrated(confidence.ravel())])
        return self.model.predict_proba(x)[:, 1].reshape(confidence.shape)

    def metrics(self) -> dict[str, float]:
        """What the cell logs of the fit: the cut and the weights (per standard deviation of each feature)."""
        out = {"combined_cut": self.cut, "combined_base_rate": self.base_rate}
        if self.model is not None:
            lr = self.model[-1]
            out |= {"combined_w_gnn": float(lr.coef_[0, 0]), "combined_w_review": float(lr.coef_[0, 1]),
                    "combined_intercept": float(lr.intercept_[0])}
        if self.calibration == "platt" and self.calibrator is not None:  # per standard deviation of logit P(yes)
            out |= {"platt_slope": float(self.calibrator[-1].coef_[0, 0]),
                    "platt_intercept": float(self.calibrator[-1].intercept_[0])}
        return out


def _calibrated(calibration: str, calibrator, confidence: np.ndarray) -> np.ndarray:
    if calibration == "platt":
        return calibrator.predict_proba(logit(confidence)[:, None])[:, 1]
    return calibrator.predict(confidence)


def _accepts(ok: np.ndarray, yes: np.ndarray, conf: np.ndarray, fit, rule: str, scores: np.ndarray | None) -> np.ndarray:
    """Whether the rule, as fit (γ, or a ``Combined``), accepts each review with a verdict."""
    if rule not in DECISIONS:
        raise ValueError(f"decision rule {rule!r}: expected one of {DECISIONS}")
    c = np.nan_to_num(conf, nan=-1.0)
    if rule == "paper":
        return yes & (c >= fit)
    if rule == "probability":
        return ok & (c >= fit)
    if scores is None:
        raise DataError("llm.decision=calibrated combines each review with its GNN score: none was given")
    return ok & (fit.probability(np.where(ok, conf, 0.5), scores) >= fit.cut)


def decide(
    results: Sequence[ReviewResult],
    gamma,
    fallback: np.ndarray | None = None,
    on_failure: str = "fallback",
    rule: str = "paper",
    scores: np.ndarray | None = None,
) -> np.ndarray:
    """0/1 decision per routed hypothesis by ``rule`` as fit (γ, or for ``calibrated`` the
    ``Combined`` with the hypotheses' GNN ``scores``); failures per `on_failure`."""
    ok, yes, conf = _verdicts(results)
    failed = _failure_decisions(ok, fallback, on_failure)
    if failed is None and not ok.all():
        raise ValueError(f"{int((~ok).sum())} failed reviews and on_failure='fallback' but no fallback decisions given")
    accepted = _accepts(ok, yes, conf, gamma, rule, scores).astype(np.int8)
    return np.where(ok, accepted, failed if failed is not None else 0).astype(np.int8)


def reason(result: ReviewResult, fit, rule: str = "paper", score: float | None = None) -> str:
    """Why ``rule`` as fit (γ, or a ``Combined`` with the hypothesis' GNN ``score``) accepts or rejects
    one review with a verdict, with the numbers it compared (what a report shows beside the verdict),
    e.g. "LLM + GNN rejected: review no, P(yes) 0.10; combined P 0.08 < cut 0.21"."""
    ok, yes, conf = _verdicts([result])
    if not ok[0]:
        raise ValueError("a failed review has no reason of the rule's: it is decided by method.on_failure")
    scores = None if score is None else np.array([float(score)])
    accepted = bool(_accepts(ok, yes, conf, fit, rule, scores)[0])
    verdict = "accepted" if accepted else "rejected"
    head = f"LLM {verdict}: review {result.review}"
    cmp = ">=" if accepted else "<"
    if rule == "calibrated":  # the review and the GNN score decide together
        p = float(fit.probability(conf, scores)[0])
        return f"LLM + GNN {verdict}: review {result.review}, P(yes) {conf[0]:.2f}; combined P {p:.2f} {cmp} cut {fit.cut:.2f}"
    if rule == "probability":
        return f"{head}, P(yes) {conf[0]:.2f} {cmp} γ {float(fit):.2f}"
    if not yes[0]:
        return f"{head} (confidence {conf[0]:.2f})"
    return f"{head}, confidence {conf[0]:.2f} {cmp} γ {float(fit):.2f}"


def priority(results: Sequence[ReviewResult], fit, rule: str = "paper", scores: np.ndarray | None = None) -> np.ndarray:
    """What orders accepted reviews by how sure the rule is: the combined probability under
    ``calibrated`` (a ``Combined`` and the hypotheses' GNN ``scores``), else the review's confidence;
    NaN for a review without a verdict."""
    ok, _, conf = _verdicts(results)
    if rule != "calibrated" or not ok.any():
        return conf
    out = np.full(len(conf), np.nan)
    out[ok] = fit.probability(conf[ok], np.asarray(scores, dtype=float)[ok])
    return out


def _fixed_counts(labels: np.ndarray, ok: np.ndarray, failed: np.ndarray | None,
                  base_counts: tuple[int, int, int]) -> tuple[int, int, int]:
    """(TP, FP, FN) of the decisions fixed before the rule: ``base_counts`` plus the failed reviews'
    (left out with on_failure="fallback" and no fallback)."""
    tp, fp, fn = base_counts
    if failed is not None:
        fixed = ~ok & failed.astype(bool)
        tp += int((fixed & labels).sum())
        fp += int((fixed & ~labels).sum())
        fn += int((~ok & ~failed.astype(bool) & labels).sum())
    return tp, fp, fn


def _best_cut(values: np.ndarray, eligible: np.ndarray, labels: np.ndarray, ok: np.ndarray,
              fixed: tuple[int, int, int]) -> tuple[float, float]:
    """(best F1, its cut) over "accept the eligible items with value >= cut" with the ``fixed``
    counts added; candidates are the eligible values plus +inf (accept none), and among equal F1
    the larger cut (visited first: fewer acceptances) stays."""
    tp0, fp0, fn0 = fixed
    best_f1, best = -1.0, math.inf
    v = np.nan_to_num(values, nan=-1.0)
    for cut in [math.inf, *sorted(set(v[eligible].tolist()), reverse=True)]:
        pred = eligible & (v >= cut)
        tp = tp0 + int((pred & labels).sum())
        fp = fp0 + int((pred & ~labels).sum())
        fn = fn0 + int((ok & ~pred & labels).sum())
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        if f1 > best_f1:
            best_f1, best = f1, cut
    return best_f1, float(best)


def choose_gamma(
    results: Sequence[ReviewResult],
    labels: np.ndarray,
    fallback: np.ndarray | None = None,
    on_failure: str = "fallback",
    base_counts: tuple[int, int, int] = (0, 0, 0),
    rule: str = "paper",
    scores: np.ndarray | None = None,
    calibration: str = "platt",
    cut: str = "max_f1",
):
    """The rule's fit on the validation routed hypotheses: γ maximising F1 of the decision, or for
    ``calibrated`` the ``Combined`` (``fit_combined``, with the hypotheses' GNN ``scores``).

    γ's candidates are the confidences of the reviews the rule may accept ("yes" reviews for the
    paper's rule, all for `probability`) plus +inf (accept none); ties go to the larger γ (fewer LLM
    acceptances). Failed reviews count with the decision `decide` would give
    them; with on_failure="fallback" and no `fallback`, they are left out. `base_counts` (TP, FP,
    FN of the GNN's fixed decisions outside the band) makes the maximised F1 that of the whole
    HyGRAIL decision on val instead of the routed subset alone."""
    labels = np.asarray(labels).astype(bool)
    if labels.shape != (len(results),):
        raise ValueError(f"labels has shape {labels.shape}, expected ({len(results)},)")
    ok, yes, conf = _verdicts(results)
    fixed = _fixed_counts(labels, ok, _failure_decisions(ok, fallback, on_failure), base_counts)
    if rule == "calibrated":
        return fit_combined(conf, ok, labels, scores, fixed, calibration, cut)
    if rule not in DECISIONS:
        raise ValueError(f"decision rule {rule!r}: expected one of {DECISIONS}")
    return _best_cut(conf, yes if rule == "paper" else ok, labels, ok, fixed)[1]


def fit_combined(conf: np.ndarray, ok: np.ndarray, labels: np.ndarray, scores: np.ndarray | None,
                 fixed: tuple[int, int, int], calibration: str = "platt", cut: str = "max_f1") -> Combined:
    """``llm.decision=calibrated`` fit on the reviews with a verdict (``ok``) of the validation routed
    hypotheses, nothing else:

    1. calibration of the confidence: ``platt``, a logistic regression of the label on the logit of
       P(yes), standardised (sklearn, C = 1: the 1.5B judge's P(yes) spans 0.20-0.29, a logit range of
       0.5, where an unscaled penalty would flatten the slope); ``isotonic``, a non-decreasing step function (sklearn's
       IsotonicRegression, clipped outside the seen range): it assumes nothing of the shape, but on a
       band with ~10 validation positives each step is one or two of them.
    2. a logistic regression of the label on (logit GNN score, calibrated P(yes)), both standardised,
       C = 1 (sklearn's default L2: with ~10 positives the unpenalised fit can separate them).
    3. the cut on the combined probability, from the whole validation decision's F1 (``fixed``: the
       TP/FP/FN decided without this rule): ``max_f1``, the cut where it peaks; ``half_max_f1``, half
       that peak F1*, the F1-optimal cut for calibrated probabilities (Lipton, Elkan &
       Narayanaswamy 2014), which reads the curve's height rather than where on ~300 validation
       reviews its peak falls (``hygrail.thresholds.decision_threshold``'s rule, made whole-decision).

    The cut is chosen on the same hypotheses the regressions were fit on (in-sample: the choice is
    optimistic on validation, which test then measures)."""
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if calibration not in CALIBRATIONS:
        raise DataError(f"method.calibration={calibration!r}: expected one of {CALIBRATIONS}")
    if cut not in THRESHOLD_RULES:
        raise DataError(f"method.combined_cut={cut!r}: expected one of {THRESHOLD_RULES}")
    if scores is None:
        raise DataError("llm.decision=calibrated combines each review with its GNN score: none was given")
    scores = np.asarray(scores, dtype=float)
    c, s, y = conf[ok], scores[ok], labels[ok].astype(int)
    base_rate = float(y.mean()) if len(y) else 0.0
    calibrator, model = None, None
    if 0 < y.sum() < len(y):  # else every combined probability is the one class's share
        calibrator = (make_pipeline(StandardScaler(), LogisticRegression(C=1.0)).fit(logit(c)[:, None], y)
                      if calibration == "platt"
                      else IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(c, y))
        model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0))
        model.fit(np.column_stack([logit(s), _calibrated(calibration, calibrator, c)]), y)
    fit = Combined(calibration, calibrator, model, base_rate, math.inf)
    combined = np.full(len(conf), np.nan)
    combined[ok] = fit.probability(c, s)
    best_f1, best = _best_cut(combined, ok, labels, ok, fixed)
    if cut == "half_max_f1":
        best = best_f1 / 2 if best_f1 > 0 else math.inf
    return replace(fit, cut=float(best))


def fit_metrics(fit) -> dict[str, float]:
    """What a cell logs of its rule's fit: ``gamma`` (the paper's name) for a threshold on the
    confidence, the ``combined_*`` figures for a ``Combined`` (its cut is on another scale)."""
    return fit.metrics() if isinstance(fit, Combined) else {"gamma": float(fit)}


def gnn_prior(scores: np.ndarray, labels: np.ndarray):
    """P(positive | GNN score) on the validation routed hypotheses: a logistic regression of the
    label on the score's logit, standardised (C = 1); the positive share when they hold one class. Returns a
    function of scores."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    y = np.asarray(labels, dtype=int)
    if not 0 < y.sum() < len(y):
        rate = float(y.mean()) if len(y) else 0.0
        return lambda s: np.full(len(np.asarray(s)), rate)
    lr = make_pipeline(StandardScaler(), LogisticRegression(C=1.0)).fit(logit(scores)[:, None], y)
    return lambda s: lr.predict_proba(logit(s)[:, None])[:, 1]


def flip_probability(fit, rule: str, results: Sequence[ReviewResult], labels: np.ndarray, scores: np.ndarray,
                     current: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """P(a review would change the current decision) of each hypothesis, under ``rule`` as fit (γ or a
    ``Combined``) on the validation ``results`` with their ``labels``.

    For a hypothesis with GNN score s, current decision g (what it gets unreviewed: the GNN-only
    decision) and prior p = P(positive | s) (``gnn_prior``), its review is modelled as a draw from the
    validation reviews of its class: with A1(s) the share of the positives' validation reviews the
    rule would accept for a hypothesis scored s, and A0(s) the negatives' share,

        P(accept | s) = p A1(s) + (1 - p) A0(s),   flip = P(accept | s) if g = 0, else 1 - P(accept | s).

    Under ``paper``/``probability`` A1, A0 do not depend on s (the rule reads the review alone), so
    the order follows p and g; under ``calibrated`` they do: hypotheses whose combined probability
    lies near the cut are the ones a review can move. Approximation: the review is taken as
    independent of s given the class (the binormal simulated reviewers of bench/bench_review.py are),
    and a class without validation reviews contributes A = 0."""
    ok, yes, conf = _verdicts(results)
    labels = np.asarray(labels).astype(bool)
    scores, current, prior = (np.asarray(a, dtype=float) for a in (scores, current, prior))
    accept = np.zeros(len(scores))
    for cls, weight in ((True, prior), (False, 1 - prior)):
        sel = ok & (labels == cls)
        if not sel.any():
            continue
        m = int(sel.sum())
        got = _accepts(np.ones((len(scores), m), bool), np.broadcast_to(yes[sel], (len(scores), m)),
                       np.broadcast_to(conf[sel], (len(scores), m)), fit, rule, scores[:, None] + np.zeros((1, m)))
        accept += weight * got.mean(axis=1)
    return np.where(current == 1, 1 - accept, accept)

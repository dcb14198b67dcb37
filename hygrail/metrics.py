"""Paper §4 "Metrics": precision, recall and F1 of the positive class on test, from confusion
counts; the threshold-free ranking quality of a score (``ranking``: ROC-AUC and average precision,
the figures real-data link-prediction studies report, e.g. Science4Cast's AUC); and which part of
HyGRAIL changed which decision (``attribution``). The LLM call rate (share of test hypotheses
routed to the LLM) is a count of routes, computed where routing happens (``hygrail.pipeline``)."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import average_precision_score, confusion_matrix, precision_recall_fscore_support, roc_auc_score

# Where a HyGRAIL decision came from: below a*, above b*, the LLM, or routed past the review budget.
REGIONS = ("auto_reject", "auto_accept", "reviewed", "over_budget")


def prf(labels: np.ndarray, pred: np.ndarray, prefix: str = "") -> dict[str, float]:
    """Precision, recall, F1 of the positive class, plus the confusion counts that let a report
    pool several relations (micro average) without the predictions."""
    y, p = np.asarray(labels, dtype=int), np.asarray(pred, dtype=int)
    pr, rc, f1, _ = precision_recall_fscore_support(y, p, average="binary", zero_division=0)
    tn, fp, fn, tp = confusion_matrix(y, p, labels=[0, 1]).ravel()
    return {
        f"{prefix}precision": float(pr),
        f"{prefix}recall": float(rc),
        f"{prefix}f1": float(f1),
        f"{prefix}tp": float(tp),
        f"{prefix}fp": float(fp),
        f"{prefix}fn": float(fn),
        f"{prefix}n": float(len(y)),
    }


def ranking(labels: np.ndarray, scores: np.ndarray, prefix: str = "") -> dict[str, float]:
    """ROC-AUC (``auc``) and average precision (``ap``, sklearn's step-wise area under the
    precision-recall curve) of ``scores``; none when the labels hold one class (both undefined)."""
    y, s = np.asarray(labels, dtype=int), np.asarray(scores, dtype=np.float64)
    if len(np.unique(y)) < 2:
        return {}
    return {f"{prefix}auc": float(roc_auc_score(y, s)), f"{prefix}ap": float(average_precision_score(y, s))}


def attribution(labels: np.ndarray, gnn: np.ndarray, final: np.ndarray, region: np.ndarray, prefix: str = "") -> dict[str, float]:
    """Per region: hypotheses (``n``), decisions that differ from GNN-only (``changed``), and their
    effect on true and false positives against GNN-only (``tp``, ``fp``: + for a gain, - for a loss).
    Summed over regions, tp / fp are the difference of the final and GNN-only TP / FP counts."""
    y, g, f, r = (np.asarray(a) for a in (labels, gnn, final, region))
    up, down = (g == 0) & (f == 1), (g == 1) & (f == 0)
    out = {}
    for name in REGIONS:
        sel = r == name
        out |= {
            f"{prefix}attr_{name}_n": float(sel.sum()),
            f"{prefix}attr_{name}_changed": float((sel & (g != f)).sum()),
            f"{prefix}attr_{name}_tp": float((sel & up & (y == 1)).sum() - (sel & down & (y == 1)).sum()),
            f"{prefix}attr_{name}_fp": float((sel & up & (y == 0)).sum() - (sel & down & (y == 0)).sum()),
        }
    return out

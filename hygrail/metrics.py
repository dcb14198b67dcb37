"""Paper §4 "Metrics": precision, recall and F1 of the positive class on test, from confusion
counts; and which part of HyGRAIL changed which decision (``attribution``). The LLM call rate
(share of test hypotheses routed to the LLM) is a count of routes, computed where routing happens
(``hygrail.pipeline``)."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

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

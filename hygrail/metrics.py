"""Paper §4 "Metrics": precision, recall and F1 on test; LLM call rate."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import confusion_matrix, precision_recall_fscore_support


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

"""scikit-learn's gradient-boosted trees kept as data: a fitted ``HistGradientBoostingClassifier``
written as an ``.npz`` of arrays and a ``.json`` of settings, and read back into an estimator that
predicts bit-identically, with nothing in either file that runs code when read (issue #54).

Why: the stacked ranker (discovery/stack.py) and the set ranker (recipes/ranker.py) are these trees,
cached under ``paths.cache``, and a pickle of them ran whatever code a writer of that folder put in.
scikit-learn has no data-only format of its own (its model persistence page offers pickle, joblib,
skops and ONNX; skops is another dependency, and ONNX runs the trees in another runtime, in float32),
and LightGBM's or XGBoost's text models would mean other trees. So the fitted trees are stored as
what they are: each ``TreePredictor``'s ``nodes`` record array and its two categorical bitsets (all
trees concatenated, with offsets), the baseline log-odds, ``classes_``, the scores per iteration and
the bin mapper's thresholds, in one npz read with ``allow_pickle=False``; the constructor's
parameters and the remaining scalars in JSON. Prediction reads nothing else: ``decision_function``,
``predict_proba`` and ``predict`` sum the same leaves from the same baseline, so the rebuilt
estimator's outputs equal the fitted one's to the bit (tests/test_treeio.py, on early-stopped and
monotone trees), and ``baselines.transitions.Predictor`` reads the same ``nodes``.

What is refused when writing, since it holds objects rather than arrays: categorical features (their
encoder is a ``ColumnTransformer``), non-JSON parameters (a ``RandomState``) and object-dtype classes.
What is refused when reading: another scikit-learn version than the writer's (the caches' keys name
the version too, so this happens only to a file copied by hand) and any other format.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import sklearn
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.ensemble._hist_gradient_boosting.binning import _BinMapper
from sklearn.ensemble._hist_gradient_boosting.predictor import TreePredictor

from hygrail.cache import load

FORMAT = "hgb-npz-1"  # in the caches' keys: bump when the files' layout changes


def save(model: HistGradientBoostingClassifier, folder: Path, name: str) -> None:
    """``model`` as ``folder/name.npz`` (arrays) and ``folder/name.json`` (settings)."""
    if not isinstance(model, HistGradientBoostingClassifier):
        raise TypeError(f"treeio.save: a fitted HistGradientBoostingClassifier, not {type(model).__name__}")
    if model.is_categorical_ is not None:
        raise ValueError("treeio.save: categorical features are not stored (their encoder is an object, not arrays)")
    classes = np.asarray(model.classes_)
    if classes.dtype.kind == "O":
        raise ValueError("treeio.save: classes_ of object dtype; numeric, boolean or string classes are stored")
    trees = [t for iteration in model._predictors for t in iteration]
    bins = model._bin_mapper
    arrays = {
        "nodes": np.concatenate([t.nodes for t in trees]),
        "binned_bitsets": np.concatenate([t.binned_left_cat_bitsets for t in trees]),
        "raw_bitsets": np.concatenate([t.raw_left_cat_bitsets for t in trees]),
        # row offsets of each tree's part of the three arrays above, trees in iteration order
        "offsets": np.array([[0, 0, 0], *np.cumsum([[len(t.nodes), len(t.binned_left_cat_bitsets),
                                                      len(t.raw_left_cat_bitsets)] for t in trees], axis=0)],
                            dtype=np.int64),
        "baseline": model._baseline_prediction,
        "classes": classes,
        "train_score": model.train_score_,
        "validation_score": model.validation_score_,
        "bin_thresholds": np.concatenate(bins.bin_thresholds_) if bins.bin_thresholds_ else np.zeros(0),
        "bin_offsets": np.cumsum([0, *(len(t) for t in bins.bin_thresholds_)]).astype(np.int64),
        "bin_is_categorical": bins.is_categorical_,
        "n_bins_non_missing": bins.n_bins_non_missing_,
    }
    settings = {
        "format": FORMAT,
        "sklearn": sklearn.__version__,
        "params": model.get_params(),
        "n_trees_per_iteration": int(model.n_trees_per_iteration_),
        "n_features_in": int(model.n_features_in_),
        "feature_names_in": list(map(str, model.feature_names_in_)) if hasattr(model, "feature_names_in_") else None,
        "do_early_stopping": bool(model.do_early_stopping_),
        "use_validation_data": bool(model._use_validation_data),
        "bin_mapper": {"n_bins": int(bins.n_bins), "subsample": bins.subsample, "random_state": bins.random_state,
                       "missing_values_bin_idx": int(bins.missing_values_bin_idx_)},
    }
    try:
        text = json.dumps(settings, indent=1, default=_scalar)
    except TypeError as e:
        raise ValueError(f"treeio.save: a parameter JSON cannot hold ({e})") from None
    folder = Path(folder)
    np.savez(folder / f"{name}.npz", **arrays)
    (folder / f"{name}.json").write_text(text)


def read(folder: Path, name: str) -> HistGradientBoostingClassifier:
    """The estimator ``save`` wrote as ``folder/name.*``; a file that does not load raises
    ``cache.DamagedFile`` naming it."""
    folder = Path(folder)
    settings = load(folder / f"{name}.json", _settings)
    arrays = load(folder / f"{name}.npz", _arrays)
    model = HistGradientBoostingClassifier(**settings["params"])
    nodes, binned, raw, at = arrays["nodes"], arrays["binned_bitsets"], arrays["raw_bitsets"], arrays["offsets"]
    trees = [TreePredictor(nodes[a[0]:b[0]], binned[a[1]:b[1]], raw[a[2]:b[2]]) for a, b in zip(at[:-1], at[1:])]
    k = settings["n_trees_per_iteration"]
    if len(trees) % k:
        raise ValueError(f"treeio: {len(trees)} trees is no multiple of {k} per iteration")
    model._predictors = [trees[i : i + k] for i in range(0, len(trees), k)]
    model._baseline_prediction = arrays["baseline"]
    model.classes_ = arrays["classes"]
    model.n_trees_per_iteration_ = k
    model.n_features_in_ = model._n_features = settings["n_features_in"]
    if settings["feature_names_in"] is not None:
        model.feature_names_in_ = np.array(settings["feature_names_in"], dtype=object)
    model.train_score_, model.validation_score_ = arrays["train_score"], arrays["validation_score"]
    model.do_early_stopping_, model._use_validation_data = settings["do_early_stopping"], settings["use_validation_data"]
    model.is_categorical_, model._preprocessor, model._is_categorical_remapped = None, None, None
    b = settings["bin_mapper"]
    bins = _BinMapper(n_bins=b["n_bins"], subsample=b["subsample"], random_state=b["random_state"])
    off = arrays["bin_offsets"]
    bins.bin_thresholds_ = [arrays["bin_thresholds"][lo:hi] for lo, hi in zip(off[:-1], off[1:])]
    bins.is_categorical_ = arrays["bin_is_categorical"]
    bins.n_bins_non_missing_ = arrays["n_bins_non_missing"]
    bins.missing_values_bin_idx_ = b["missing_values_bin_idx"]
    model._bin_mapper = bins
    model._loss = model._get_loss(sample_weight=None)  # predict_proba's link
    return model


def _scalar(value: object) -> object:
    if isinstance(value, np.generic):  # the bin mapper's seed is a numpy integer
        return value.item()
    raise TypeError(f"{type(value).__name__} is no JSON value")


def _settings(file: Path) -> dict:
    settings = json.loads(file.read_text())
    if settings.get("format") != FORMAT:
        raise ValueError(f"format {settings.get('format')!r}, expected {FORMAT!r}")
    if settings.get("sklearn") != sklearn.__version__:
        raise ValueError(f"written by scikit-learn {settings.get('sklearn')}, this is {sklearn.__version__}")
    return settings


def _arrays(file: Path) -> dict[str, np.ndarray]:
    with np.load(file, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}

"""scikit-learn's boosted trees kept as arrays and JSON (hygrail/treeio.py): read back, they predict
to the bit what the fitted trees predict (log-odds, probabilities, classes and the stack's coded
``Predictor``), early-stopped, monotone and multiclass alike; what the format cannot hold is refused
when written, and a damaged or foreign file names itself when read."""

import json

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier

from hygrail import treeio
from hygrail.baselines.transitions import PARAMS, Predictor
from hygrail.cache import DamagedFile


def _rows(n: int, seed: int, missing: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 6)).astype(np.float32)
    y = x[:, 0] - 0.5 * x[:, 3] + rng.normal(size=n) > 0
    x[rng.random(x.shape) < missing] = np.nan  # missing values take each node's learnt side
    return x, y


def _same(model, again, x: np.ndarray) -> None:
    for method in ("decision_function", "predict_proba", "predict"):
        np.testing.assert_array_equal(getattr(again, method)(x), getattr(model, method)(x), err_msg=method)
    assert again.n_iter_ == model.n_iter_
    np.testing.assert_array_equal(again.classes_, model.classes_)


def test_early_stopped_and_monotone_trees_predict_bit_identically_after_the_round_trip(tmp_path):
    x, y = _rows(6000, 0)
    stopped = HistGradientBoostingClassifier(**PARAMS, random_state=0).fit(x, y)  # the stack's trees
    monotone = HistGradientBoostingClassifier(**PARAMS, monotonic_cst=[1, 0, 0, -1, 0, 0], random_state=1).fit(x, y)
    assert stopped.n_iter_ < PARAMS["max_iter"]  # early stopping ended it: the kept trees are fewer than asked
    test, _ = _rows(20_000, 1)
    clean = np.nan_to_num(test)  # Predictor codes finite float32 features, as the stack's planes are
    for name, model in (("stopped", stopped), ("monotone", monotone)):
        treeio.save(model, tmp_path, name)
        again = treeio.read(tmp_path, name)
        _same(model, again, test)
        np.testing.assert_array_equal(Predictor(again, 6)(clean), Predictor(model, 6)(clean))
        np.testing.assert_array_equal(again.validation_score_, model.validation_score_)


def test_multiclass_trees_round_trip_too(tmp_path):
    x, _ = _rows(3000, 2, missing=0.0)
    model = HistGradientBoostingClassifier(max_iter=15, random_state=0).fit(x, np.digitize(x[:, 1], [-0.5, 0.5]))
    treeio.save(model, tmp_path, "three")
    _same(model, treeio.read(tmp_path, "three"), _rows(2000, 3)[0])


def test_the_files_hold_arrays_and_json_only(tmp_path):
    x, y = _rows(2000, 4)
    treeio.save(HistGradientBoostingClassifier(max_iter=5).fit(x, y), tmp_path, "t")
    with np.load(tmp_path / "t.npz", allow_pickle=False) as z:
        assert all(z[k].dtype.kind != "O" for k in z.files)
    assert json.loads((tmp_path / "t.json").read_text())["format"] == treeio.FORMAT


def test_what_the_format_cannot_hold_is_refused_when_written(tmp_path):
    x, y = _rows(2000, 5, missing=0.0)
    cats = np.column_stack([x[:, :5], np.floor(np.abs(x[:, 5]) * 3)])
    with pytest.raises(ValueError, match="categorical features are not stored"):
        treeio.save(HistGradientBoostingClassifier(max_iter=3, categorical_features=[5]).fit(cats, y), tmp_path, "c")
    with pytest.raises(ValueError, match="a parameter JSON cannot hold"):
        treeio.save(HistGradientBoostingClassifier(max_iter=3, random_state=np.random.RandomState(0)).fit(x, y),
                    tmp_path, "r")
    with pytest.raises(ValueError, match="classes_ of object dtype"):
        treeio.save(HistGradientBoostingClassifier(max_iter=3).fit(x, np.where(y, "yes", "no").astype(object)),
                    tmp_path, "o")


def test_a_damaged_or_foreign_file_names_itself(tmp_path):
    x, y = _rows(2000, 6)
    treeio.save(HistGradientBoostingClassifier(max_iter=5).fit(x, y), tmp_path, "t")
    npz = tmp_path / "t.npz"
    npz.write_bytes(npz.read_bytes()[:500])
    with pytest.raises(DamagedFile, match=str(npz)):
        treeio.read(tmp_path, "t")
    meta = tmp_path / "t.json"
    meta.write_text(json.dumps(json.loads(meta.read_text()) | {"sklearn": "0.24.2"}))
    with pytest.raises(DamagedFile, match=r"t\.json \(ValueError: written by scikit-learn 0\.24\.2, this is "):
        treeio.read(tmp_path, "t")

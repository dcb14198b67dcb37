"""A ranker trained per entity (issue #55): one estimator, ``fit(rows, labels, groups)`` and
``predict(rows)``, with LightGBM's own learning-to-rank objective grouped by entity (``LGBMRanker``,
lambdarank on NDCG@10), not a hand-written loss.

Why: the stack (``stack.py``) is fit to rank pairs across the whole space, where popularity decides most
comparisons; a scientist reads one entity's list, where it decides few. On the known entities the stack
lost to the GNN alone or to TSH in 3 of 5 cells (issue #45's tables), worst on well-annotated diseases
that gain many features. HPOLabeler (Bioinformatics 2020) ranks HPO terms per protein from a pool of base
models' candidates with a ranking loss grouped by protein, fit on a newer snapshot than the base models
saw; RelEns (EMNLP 2023) weights base models per query type. Here the rows, the pools and their features
come from ``pools.py``; this module only fits and scores.

``PARAMS`` and where each number comes from: LightGBM 4.7's defaults (100 rounds at learning rate 0.1,
num_leaves 31, min_child_samples 20, no row or column sampling, ``lambdarank_truncation_level`` 30), no
early stopping: a first version stopped on 10% of the groups' NDCG@10 after 20 rounds without gain, and on
a 4,000-node recipes sample it kept 2 rounds (the check's cold entities: hits@10 0.889 against the GNN's
0.931), a noisy stop on ~15 groups. None was tuned on any cell. ``deterministic`` and ``force_col_wise``:
the same rows give the same model at any thread count.

A fitted ranker is kept as LightGBM's own model text plus JSON (``to_files`` / ``from_files``): data only,
nothing in it runs code when read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np

from hygrail.kg import DataError

VERSION = "entity-ranker-3"  # bump when a change alters the fitted model: cached fits then miss
PARAMS = dict(objective="lambdarank", deterministic=True, force_col_wise=True, verbose=-1)  # LightGBM's defaults else
MIN_GROUPS = 10  # entities with an answer in their pool a fit needs


def group_sizes(groups: np.ndarray) -> np.ndarray:
    """Run lengths of ``groups`` (one id per row), whose rows must be contiguous."""
    groups = np.asarray(groups)
    if not len(groups):
        return np.zeros(0, dtype=np.int64)
    starts = np.r_[0, np.flatnonzero(groups[1:] != groups[:-1]) + 1]
    if len(np.unique(groups[starts])) != len(starts):
        raise ValueError("EntityRanker: a group's rows must be contiguous (sort the rows by entity)")
    return np.diff(np.r_[starts, len(groups)])


class EntityRanker:
    """LightGBM lambdarank over rows grouped by entity (module docstring); ``names``: the columns."""

    def __init__(self, names: Sequence[str], seed: int = 0, threads: int = 1, params: dict | None = None):
        self.names, self.seed, self.threads = list(names), int(seed), int(threads)
        self.params = dict(PARAMS if params is None else params)
        self.booster = None
        self.rounds = 0

    def fit(self, x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> "EntityRanker":
        import lightgbm as lgb

        x, y = np.asarray(x, dtype=np.float32), np.asarray(y, dtype=np.int32)
        if x.shape[1] != len(self.names):
            raise ValueError(f"EntityRanker: {x.shape[1]} columns for {len(self.names)} names")
        sizes = group_sizes(groups)
        ends = np.cumsum(sizes)
        has_pos = np.add.reduceat(y, ends - sizes) > 0 if len(sizes) else np.zeros(0, bool)
        if has_pos.sum() < MIN_GROUPS:
            raise DataError(f"the per-entity ranker learns from entities with an answer among their pooled "
                            f"candidates; the fit window holds {int(has_pos.sum())}")
        model = lgb.LGBMRanker(**self.params, random_state=self.seed, n_jobs=self.threads)
        model.fit(x, y, group=sizes)
        self.booster, self.rounds = model.booster_, int(model.booster_.current_iteration())
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        """One score per row (higher first); comparable within an entity."""
        if self.booster is None:
            raise ValueError("EntityRanker.predict before fit")
        if not len(x):
            return np.zeros(0)
        return self.booster.predict(np.asarray(x, dtype=np.float32), num_iteration=self.rounds,
                                    num_threads=self.threads)

    def importance(self) -> dict[str, float]:
        """Each column's share of the total gain of the kept rounds' splits."""
        gain = self.booster.feature_importance("gain", iteration=self.rounds)
        total = float(gain.sum()) or 1.0
        return {n: float(g) / total for n, g in zip(self.names, gain)}

    def to_files(self, folder: Path) -> None:
        folder = Path(folder)
        self.booster.save_model(str(folder / "ranker.txt"), num_iteration=self.rounds)
        (folder / "ranker.json").write_text(json.dumps({"version": VERSION, "names": self.names, "seed": self.seed,
                                                        "rounds": self.rounds, "params": self.params}))

    @classmethod
    def from_files(cls, folder: Path, threads: int = 1) -> "EntityRanker":
        import lightgbm as lgb

        meta = json.loads((Path(folder) / "ranker.json").read_text())
        if meta.get("version") != VERSION:
            raise ValueError(f"{folder}: a ranker of version {meta.get('version')!r}; expected {VERSION!r}")
        out = cls(meta["names"], meta["seed"], threads, meta["params"])
        out.booster = lgb.Booster(model_file=str(Path(folder) / "ranker.txt"))
        out.rounds = int(meta["rounds"])
        if out.booster.num_feature() != len(out.names):
            raise ValueError(f"{folder}: the model reads {out.booster.num_feature()} columns, its names {len(out.names)}")
        return out

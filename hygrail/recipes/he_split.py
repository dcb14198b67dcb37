"""He et al.'s own train/test split, replayed on this table: the split behind their "82% of 2,654 test
targets" (issue #47), beside the issue's temporal split (``benchmark``).

Their rule (CederGroupHub/SynthesisSimilarity: ``core/utils.py`` ``split_reactions`` with
``by_year=True``, called by ``scripts_utils/data_set_utils.py`` with ``val_frac=0.05``,
``test_frac=0.10``), read, not copied:

- reactions sorted by (year, DOI, index); a reaction is a *key* reaction when none of its keys (its DOI,
  its index, its target's composition, its target's prototype) occurred in an earlier one;
- the distinct years of key reactions, in order, are cut into the first 85% (train), the next 5%
  (validation) and the last 10% (test);
- the training part is every reaction linked to a training key reaction through shared keys, followed
  transitively and whatever its year; validation then takes what links to its key reactions; the test part
  is what is left. So a reaction lands where its linked group's earliest reaction is dated.

Replayed here with the keys this table holds: the DOI and the target's identity (``composition``, He et
al.'s formula of the target's composition; the material as written where no numeric composition exists,
since their reactions are expanded over x and always have one). The index is each recipe's own and links
nothing. Not replayed: the *prototype* (their base material with dopants removed, from their own material
hierarchy), so a doped variant of an earlier material stays a test target here where they move it to
training.

Two consequences the benchmark reports: their test targets are all new, each in papers that report no
earlier material; and their training part, which their recommender reads as its knowledge base, holds
recipes dated in the validation and test years (a later paper on an earlier material). The issue's
protocol reads nothing dated after the cutoff; so ``run`` proposes from both libraries: theirs
(``"He et al.'s training part"``) and the recipes dated up to the last validation year only
(``"dated <= cutoff"``), with the ranker fit on the years before that cutoff either way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import polars as pl
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from hygrail.kg import NO_YEAR, DataError
from hygrail.recipes.benchmark import Cell, past, proposers, scored
from hygrail.recipes.library import Library, Target
from hygrail.recipes.ranker import SetRanker

VAL, TEST = 0.05, 0.10  # data_set_utils.py's fractions of the key reactions' distinct years


@dataclass
class Split:
    """He et al.'s parts of a recipe table (module docstring)."""

    val_years: tuple[int, ...]
    test_years: tuple[int, ...]
    parts: pl.DataFrame  # the dated recipes with a column ``part``: train, val or test
    targets: list[Target]  # one per test target identity, answers = its sets in the test part

    @property
    def cutoff(self) -> int:
        """The last year before the test years."""
        return min(self.test_years) - 1

    @property
    def train(self) -> pl.DataFrame:
        return self.parts.filter(pl.col("part") == "train").drop("part")

    @property
    def later_train(self) -> int:
        """Recipes of the training part dated after ``cutoff``."""
        return self.train.filter(pl.col("year") > self.cutoff).height


def split(table: pl.DataFrame, val: float = VAL, test: float = TEST) -> Split:
    """He et al.'s split of ``table``'s dated recipes (module docstring); undated ones take no part (the
    rule sorts by year)."""
    rows = table.filter(pl.col("year") != NO_YEAR).sort("year", "doi", "recipe")
    if rows.is_empty():
        raise DataError("recipes: no dated recipe; He et al.'s split sorts recipes by year")
    ident = rows.select(pl.coalesce("composition", pl.lit("written:") + pl.col("material")).alias("ident"))["ident"]
    keys = [f"doi:{d}" for d in rows["doi"]] + [f"target:{k}" for k in ident]
    key_id = {k: j for j, k in enumerate(dict.fromkeys(keys))}
    n = rows.height
    # rows and keys as one graph: a row joins its two keys; linked groups are its components
    cols = np.array([key_id[k] for k in keys]) + n
    edges = sp.coo_matrix((np.ones(2 * n), (np.tile(np.arange(n), 2), cols)), shape=(n + len(key_id),) * 2)
    _, group = connected_components(edges, directed=False)
    group = group[:n]
    years = rows["year"].to_numpy()
    seen, key_years = set(), set()
    for i in range(n):  # key reactions: none of their keys seen in an earlier row
        mine = (keys[i], keys[n + i])
        if not seen.intersection(mine):
            key_years.add(int(years[i]))
        seen.update(mine)
    ordered = sorted(key_years)
    m = len(ordered)
    train_end, val_end = int(m * (1 - val - test)), int(m * (1 - test))
    part_of = {y: ("train" if j < train_end else "val" if j < val_end else "test") for j, y in enumerate(ordered)}
    earliest = pl.DataFrame({"group": group, "year": years}).group_by("group").agg(pl.col("year").min())
    first = dict(earliest.iter_rows())
    parts = rows.with_columns(pl.Series("part", [part_of[first[g]] for g in group]), pl.Series("ident", ident))
    test_rows = parts.filter(pl.col("part") == "test")
    targets = []
    for (key,), g in test_rows.group_by(["ident"], maintain_order=True):
        targets.append(Target(g["material"][0], frozenset(e for els in g["elements"] for e in els),
                              frozenset(tuple(p) for p in g["precursors"]), False, int(g["year"].min()),
                              not key.startswith("written:"), None if key.startswith("written:") else key))
    return Split(tuple(y for y in ordered if part_of[y] == "val"), tuple(y for y in ordered if part_of[y] == "test"),
                 parts.drop("ident"), sorted(targets, key=lambda t: t.material))


def run(table: pl.DataFrame, volatile, free, ranker: SetRanker) -> tuple[Split, dict[str, Cell]]:
    """The benchmark's rows on He et al.'s test targets, proposing from each library (module docstring);
    the ranker fit once, on the recipes dated up to ``cutoff``."""
    parts = split(table)
    before = past(table, parts.cutoff)
    t0 = time.perf_counter()
    ranker.fit(before, parts.cutoff, volatile, free)
    fit_seconds = time.perf_counter() - t0
    cells = {}
    for label, lib in (("He et al.'s training part", Library.build(parts.train, None, volatile, free)),
                       (f"dated <= {parts.cutoff}", Library.build(before, parts.cutoff, volatile, free))):
        cells[label] = scored(parts.cutoff, lib, parts.targets, proposers(ranker))
        cells[label].facts["ranker fit seconds"] = fit_seconds
    return parts, cells

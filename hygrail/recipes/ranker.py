"""The set ranker: precursor sets for a material, from its similar materials' recorded sets and the
precursors' own scores, ordered by a model fit on the years before the cutoff.

Why: a chemist's answer is a set (one precursor per element, nothing foreign), and He et al. score
sets by exact match (Sci. Adv. 9, eadg8180, 2023). Their method reuses the most similar known
targets' recipes and completes what a reused recipe does not cover; the per-element default (each
element's most common precursor) is the other half of what a chemist tries first. This ranker
gathers both kinds of candidate and lets a model trained on earlier years decide how much each
kind of evidence weighs.

Candidates of a material with elements E (``candidates``):

- *reused*: every recorded set of its ``neighbours`` most similar library materials
  (``Library.similar``), adapted to E (``compose.adapt``: foreign precursors dropped, uncovered
  elements completed by the best precursor under the local probability below);
- *composed*: the ``composed`` best sets under the local probability and under per-element
  popularity (``compose.compose``).

Local probability of precursor p for element e (``local``): the neighbours' recorded use of p for e,
weighted by similarity and recipe count, smoothed toward per-element popularity with the weight of
one recipe of an identical material (``SMOOTHING``): P(p | e, near E) = (sum_n s_n c_n(p, e) +
P(p | e)) / (sum_n s_n c_n(e) + 1).

Features of a candidate set (``FEATURES``), each read from the library alone: ``popularity`` and
``local``, the sum over E's needed elements of log P(best precursor of the set for e); ``weakest``,
the least of those local terms; ``reused``, the summed similarity of the neighbours that recorded
exactly this set; ``adapted``, of those whose set became it once adapted; ``nearest``, the highest
similarity among the former; ``extra``, the precursors that bring no needed element (fluxes, fuels);
``cohesion``, how much more often the library's recipes use the set's precursors together than apart
(``Library.cohesion``); ``recorded``, log(1 + the library's recipes recording exactly this set, for any
material); ``oxide_for_no_o``, the precursors bringing O to a material without O (an oxide for an
intermetallic, a carbide or a sulfide: allowed by the rules, O being volatile, but rarely what such a
recipe uses). Each of ``RELATIVE`` also enters as its gap to the pool's best.

The model (``fit``): gradient-boosted trees (scikit-learn's ``HistGradientBoostingClassifier``,
``PARAMS``), monotone in every feature (``MONOTONE``), fit on the window before the library's date: a
library at cutoff - ``window`` years, its candidates for the materials recorded in the ``window``
years up to the cutoff (``library.after``), labelled by whether each candidate was recorded for its
material there. Every label and feature is dated at or before the cutoff: nothing after it is read.
The ranking is its log-odds, ties by the precursors' names.

Where the numbers come from: ``neighbours`` = 30, ``window`` = 3 (the benchmark's horizon) and
``SMOOTHING`` = 1 were set before any run, not tuned; ``composed`` = 50 (from 20), the monotone trees
(over a logistic regression and unconstrained trees) and ``oxide_for_no_o`` were chosen on the
development cutoff 2006 (answers 2007-2009), which neither reported cutoff's test window overlaps:
top-5 0.764 -> 0.777 with ``oxide_for_no_o`` (2,584 targets); pooling three fit windows, sharper
neighbour weights, recent-years popularity and the target's size moved it by at most 0.005 and were
left out; a rarity-weighted Jaccard similarity and a bigger pool (100 composed, 16 per element)
lowered it. Later, on the same cutoff: a network trained on the library's recipes to predict a
material's precursors (He et al.'s task) as features, as candidates or as the similarity, per-target
sample weights and other tree settings moved it by at most 0.004, and were left out.
experiments/recipes_sets.md reports how the ranker does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import polars as pl
from sklearn.ensemble import HistGradientBoostingClassifier
from tqdm import tqdm

from hygrail.baselines.transitions import PARAMS
from hygrail.kg import NO_YEAR, DataError
from hygrail.recipes.compose import Adapted, Composed, adapt, compose
from hygrail.recipes.library import Library, Recorded, after

FEATURES = ("popularity", "local", "weakest", "reused", "adapted", "nearest", "extra", "cohesion", "recorded",
            "oxide_for_no_o")
RELATIVE = ("popularity", "local", "weakest", "reused", "adapted", "cohesion")  # also as the gap to the pool's best
# more evidence never lowers a set's score; an extra precursor (one bringing no needed element), or an oxide for a
# material without O, never raises it
MONOTONE = {f: 1 for f in FEATURES} | {"extra": -1, "oxide_for_no_o": -1}
SMOOTHING = 1.0
FLOOR = 1e-4  # the probability a precursor never used for an element gets in the sums of logs


@dataclass
class Source:
    """A neighbour's recorded set behind a candidate."""

    material: str
    similarity: float
    recorded: Recorded
    change: Adapted | None  # None: reused as recorded


@dataclass
class Candidate:
    precursors: tuple[str, ...]
    sources: list[Source] = field(default_factory=list)
    composed: Composed | None = None  # the best composition that gave it, if any
    local: dict[str, dict[str, float]] | None = None  # the material's local probabilities (``local``)
    features: np.ndarray | None = None


@dataclass
class Proposal:
    """One proposed set, its rank and score, and the evidence behind it."""

    rank: int
    precursors: tuple[str, ...]
    score: float
    candidate: Candidate


def local(lib: Library, elements: frozenset[str], near: Sequence[tuple[int, float]]) -> dict[str, dict[str, float]]:
    """need(E) element -> precursor -> P(p | e, near E) (module docstring), over the compatible
    precursors the library records for e."""
    out = {}
    for e in sorted(lib.need(elements)):
        num: dict[str, float] = {}
        den = 0.0
        for i, s in near:
            if e not in lib.elements[i]:
                continue
            for rec in lib.sets[i]:
                den += s * rec.recipes
                for p in rec.precursors:
                    if e in lib.precursor_elements[p] and lib.compatible(p, elements):
                        num[p] = num.get(p, 0.0) + s * rec.recipes
        prior = {p: v for p, v in lib.popularity.get(e, ()) if lib.compatible(p, elements)}
        out[e] = {p: (num.get(p, 0.0) + SMOOTHING * prior.get(p, 0.0)) / (den + SMOOTHING)
                  for p in set(num) | set(prior)}
    return out


def candidates(lib: Library, elements: frozenset[str], near: Sequence[tuple[int, float]],
               probs: dict[str, dict[str, float]], n_composed: int,
               exclude: frozenset = frozenset()) -> dict[tuple[str, ...], Candidate]:
    """The reused and composed candidates of a material (module docstring), keyed by precursors,
    less the sets in ``exclude``."""
    out: dict[tuple[str, ...], Candidate] = {}

    def best(e: str, _elements: frozenset[str]) -> str | None:
        ranked = probs.get(e) or {}
        return min(ranked, key=lambda p: (-ranked[p], p), default=None)

    for i, s in near:
        for rec in lib.sets[i]:
            change = adapt(lib, rec.precursors, elements, best)
            if change is None or change.precursors in exclude:
                continue
            reused = change.precursors == rec.precursors
            out.setdefault(change.precursors, Candidate(change.precursors)).sources.append(
                Source(lib.names[i], s, rec, None if reused else change))
    for score in (lambda e, p: math.log(max(probs[e].get(p, 0.0), FLOOR)),
                  lambda e, p: math.log(max(lib.probability(e, p), FLOOR))):
        for c in compose(lib, elements, score, n_composed, exclude=exclude):
            cand = out.setdefault(c.precursors, Candidate(c.precursors))
            cand.composed = cand.composed or c
    return out


def features(lib: Library, elements: frozenset[str], cand: Candidate, probs: dict[str, dict[str, float]]) -> np.ndarray:
    """``FEATURES`` of one candidate (module docstring)."""
    need = lib.need(elements)
    glob, loc = [], []
    for e in sorted(need):  # a fixed order: the sums must not depend on the process's string hashing
        holders = [p for p in cand.precursors if e in lib.precursor_elements[p]]
        glob.append(math.log(max((lib.probability(e, p) for p in holders), default=0.0) or FLOOR))
        loc.append(math.log(max((probs[e].get(p, 0.0) for p in holders), default=0.0) or FLOOR))
    exact = [s.similarity for s in cand.sources if s.change is None]
    adapted = [s.similarity for s in cand.sources if s.change is not None]
    extra = sum(1 for p in cand.precursors if not (lib.precursor_elements[p] & need))
    oxides = 0 if "O" in elements else sum(1 for p in cand.precursors if "O" in lib.precursor_elements[p])
    return np.array([sum(glob), sum(loc), min(loc, default=0.0), sum(exact), sum(adapted), max(exact, default=0.0),
                     extra, lib.cohesion(cand.precursors), math.log1p(lib.set_recipes.get(cand.precursors, 0)), oxides],
                    dtype=np.float64)


@dataclass
class SetRanker:
    """The fit model and the candidate settings (module docstring)."""

    neighbours: int = 30
    composed: int = 50
    window: int = 3
    seed: int = 0
    model: object = None
    fit_rows: int = 0
    fit_positives: int = 0
    fit_targets: int = 0

    def pool(self, lib: Library, elements: frozenset[str], exclude: frozenset = frozenset()) -> list[Candidate]:
        """Every candidate of a material with its features, in precursor order; a library material is
        its own nearest neighbour (its recorded sets are candidates unless excluded)."""
        near = lib.similar(elements, self.neighbours)
        probs = local(lib, elements, near)
        pool = candidates(lib, elements, near, probs, self.composed, exclude)
        out = [pool[k] for k in sorted(pool)]
        for c in out:
            c.local = probs
        if out:
            x = np.vstack([features(lib, elements, c, probs) for c in out])
            cols = [FEATURES.index(f) for f in RELATIVE]
            x = np.hstack([x, x[:, cols] - x[:, cols].max(axis=0)])
            for c, row in zip(out, x):
                c.features = row
        return out

    def fit(self, table: pl.DataFrame, cutoff: int, volatile, free, progress: bool = False) -> "SetRanker":
        """The model fit on the window before ``cutoff`` (module docstring); ``progress``: a bar over
        the window's materials (one candidate pool each, so its rate is steady from the start)."""
        lib = Library.build(table, cutoff - self.window, volatile, free)
        targets = after(table.filter((pl.col("year") != NO_YEAR) & (pl.col("year") <= cutoff)),
                        cutoff - self.window, self.window)
        x, y = [], []
        for t in tqdm(targets, desc=f"fit the set ranker on {cutoff - self.window + 1}-{cutoff}", unit="material",
                      disable=not progress, mininterval=2.0):
            if not lib.need(t.elements):
                continue
            for c in self.pool(lib, t.elements, own_sets(lib, t.material)):
                x.append(c.features)
                y.append(c.precursors in t.answers)
        y = np.asarray(y, dtype=bool)
        if len(y) == 0 or y.all() or not y.any():
            raise DataError(f"recipes: the window {cutoff - self.window}-{cutoff} gives {int(y.sum())} recorded of "
                            f"{len(y)} candidate sets; the ranker learns from both (an earlier cutoff has too few recipes)")
        monotone = [MONOTONE[f] for f in FEATURES] + [MONOTONE[f] for f in RELATIVE]
        self.model = HistGradientBoostingClassifier(**PARAMS, monotonic_cst=monotone, random_state=self.seed).fit(
            np.vstack(x), y)
        self.fit_rows, self.fit_positives, self.fit_targets = len(y), int(y.sum()), len(targets)
        return self

    def ranked(self, lib: Library, elements: frozenset[str], exclude: frozenset = frozenset(),
               avoid: frozenset[str] = frozenset(), first: frozenset = frozenset()) -> list[Proposal]:
        """Every candidate set for a material of ``elements``, best first, less the sets in ``exclude``
        and those holding a precursor named in ``avoid`` (the page's target itself: no synthesis of it);
        the candidates in ``first`` (the sets recorded for the material's own composition, ``recorded_as``)
        ahead of the others, each part in the model's order."""
        pool = [c for c in self.pool(lib, elements, exclude) if not avoid & set(c.precursors)]
        if not pool:
            return []
        score = self.model.decision_function(np.vstack([c.features for c in pool]))
        order = sorted(range(len(pool)), key=lambda j: (pool[j].precursors not in first, -score[j], pool[j].precursors))
        return [Proposal(r + 1, pool[j].precursors, float(score[j]), pool[j]) for r, j in enumerate(order)]

    def propose(self, lib: Library, elements: frozenset[str], k: int, exclude: frozenset = frozenset(),
                avoid: frozenset[str] = frozenset(), first: frozenset = frozenset()) -> list[Proposal]:
        """The ``k`` best of ``ranked``."""
        return self.ranked(lib, elements, exclude, avoid, first)[:k]


def own_sets(lib: Library, material: str) -> frozenset[tuple[str, ...]]:
    """The sets the library records for ``material`` (none when it holds no such material)."""
    i = lib.index.get(material)
    return frozenset() if i is None else frozenset(r.precursors for r in lib.sets[i])


def recorded_as(lib: Library, composition: str | None) -> frozenset[tuple[str, ...]]:
    """The sets the library records for any material of ``composition`` (``Library.of_composition``)."""
    return frozenset().union(*(own_sets(lib, m) for m in lib.of_composition(composition))) if composition else frozenset()

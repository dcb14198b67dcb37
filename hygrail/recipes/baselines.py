"""The rows the set ranker is measured against (issue #47): He et al.'s method, per-element
popularity, and any per-precursor score composed into sets.

``he_et_al``: a re-implementation, from their paper (Sci. Adv. 9, eadg8180, 2023) and public code
(CederGroupHub/SynthesisSimilarity: ``PrecursorsRecommendation.recommend_precursors_by_similarity``,
read, not copied), of their recommendation for a target:

1. first (theirs), the set of each element's most common precursor (of those ``Library.refusal``
   allows), kept if it is valid;
2. then (theirs), the library's materials from the most similar down, each one's recorded sets from
   the most recorded down: the precursors that bring a foreign element dropped, each element left
   uncovered completed, the set kept if it covers the target and is new, until ``k`` sets.

Approximations: their similarity is the cosine of a composition encoder learned on the recipes
(PrecursorSelector), out of reach offline: here the Jaccard index of element sets
(``Library.similar``). Their completion is a learned masked-precursor model (MPC): here the
element's most common compatible precursor, their code's own ``naive_common`` strategy, metals
first. The volatile rule is this project's (``library``'s docstring) for every row, so the rows
differ in method only; theirs allows C, H, O, N (not S) and needs no source of O, H.

``popularity``: each element's most common precursor at the cutoff (the first set), then the next
combinations by the product of P(p | e) (``compose``; He et al.'s frequency baseline).

``composed``: a per-(material, precursor) probability (a model's, e.g. the stack's) composed the same
way: each element's best precursor by it, then the best combinations.
"""

from __future__ import annotations

import math
from typing import Callable

from hygrail.recipes.compose import by_popularity, adapt, compose
from hygrail.recipes.library import Library

NEIGHBOURS_PER_SET = 300  # He et al. look at most at 300 x k similar targets ("30 * top_n is sufficient")


def he_et_al(lib: Library, elements: frozenset[str], k: int, exclude: frozenset = frozenset()) -> list[tuple[str, ...]]:
    """He et al.'s ``k`` sets for a material of ``elements`` (module docstring), less ``exclude``."""
    out: list[tuple[str, ...]] = []
    firsts = (next((p for p, _ in lib.popularity.get(e, ()) if not lib.refusal(p, elements)), None)
              for e in lib.need(elements))
    common = sorted({p for p in firsts if p is not None})
    if common and lib.valid(common, elements) and tuple(common) not in exclude:
        out.append(tuple(common))
    best = by_popularity(lib)
    for i, _ in lib.similar(elements, NEIGHBOURS_PER_SET * k):
        for rec in lib.sets[i]:
            change = adapt(lib, rec.precursors, elements, best)
            if change is None or change.precursors in exclude or change.precursors in out:
                continue
            out.append(change.precursors)
            if len(out) >= k:
                return out
    return out


def popularity(lib: Library, elements: frozenset[str], k: int, exclude: frozenset = frozenset()) -> list[tuple[str, ...]]:
    """Per-element popularity's ``k`` sets (module docstring)."""
    return [c.precursors for c in compose(lib, elements, lambda e, p: math.log(max(lib.probability(e, p), 1e-12)), k,
                                          exclude=exclude)]


def composed(lib: Library, elements: frozenset[str], probability: Callable[[str], float], k: int,
             exclude: frozenset = frozenset()) -> list[tuple[str, ...]]:
    """A per-precursor ``probability(precursor)`` for this material composed into ``k`` sets (module docstring)."""
    return [c.precursors for c in compose(lib, elements, lambda e, p: math.log(max(probability(p), 1e-12)), k,
                                          exclude=exclude)]

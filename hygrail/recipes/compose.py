"""Precursor sets built from per-precursor scores: composed element by element, or a recorded set
adapted to another material.

``compose``: the best sets from one score per (element, precursor), best first by the sum of the
chosen precursors' scores, one precursor chosen per element that needs one (``Library.need``) among
the compatible precursors the library records for it; a precursor holding two such elements may be
chosen for both, and the set is the distinct choices. Exact best-first enumeration of the product
of the per-element lists (a heap over index tuples), each list cut to its ``per_element`` best:
the first set is each element's best precursor (the greedy choice), the next ones the best
combinations after it. With log P(p | e) as the score this is He et al.'s frequency baseline
(``recommend_w_freq`` in their ``_05_recommendation_benchmark.py``: the product of the precursors'
frequencies); with a model's per-pair scores, that model composed.

``adapt``: a recorded set made valid for another material, as He et al. reuse a similar target's
recipe: the precursors that bring a foreign element, or that are never proposed (``Library.refusal``:
no charge-balanced oxidation states, a gas, a bare element for a kind of material not made from them),
are dropped ("masked"), and each element left uncovered gets the best compatible precursor for it
by a per-element score (their "masked precursor completion", which they learn; here the score
given). Elements are completed metals and metalloids first, then the others (their ``naive_common``
order), each by the first precursor of its list; None when some element has no compatible precursor.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from hygrail.data.chemistry import NON_METALS  # metals and metalloids are completed first, as He et al. do
from hygrail.recipes.library import Library

PER_ELEMENT = 8  # precursors kept per element before enumerating (not tuned: 8^3 = 512 tuples for a ternary)
MAX_POPS = 20000  # tuples looked at per material at most (a decanary's product is 8^10)


@dataclass(frozen=True)
class Composed:
    precursors: tuple[str, ...]
    score: float
    choice: Mapping[str, str] = field(default_factory=dict)  # element -> the precursor chosen for it


def candidates(lib: Library, elements: frozenset[str], element: str) -> list[str]:
    """The library's precursors that hold ``element`` and are compatible with ``elements``,
    most popular for it first."""
    return [p for p, _ in lib.popularity.get(element, ()) if lib.compatible(p, elements)]


def compose(lib: Library, elements: frozenset[str], score: Callable[[str, str], float], k: int,
            per_element: int = PER_ELEMENT, exclude: frozenset = frozenset()) -> list[Composed]:
    """The ``k`` best sets by the summed ``score(element, precursor)`` (module docstring), leaving out
    the sets in ``exclude``; [] when some element has no compatible precursor."""
    need = sorted(lib.need(elements))
    lists = []
    for e in need:
        ranked = sorted(((score(e, p), p) for p in candidates(lib, elements, e)), key=lambda x: (-x[0], x[1]))
        if not ranked:
            return []
        lists.append(ranked[:per_element])
    if not lists:
        return []
    start = (0,) * len(lists)
    heap = [(-sum(lst[0][0] for lst in lists), start)]
    seen, out, emitted = {start}, [], set()
    pops = 0
    while heap and len(out) < k and pops < MAX_POPS:
        neg, idx = heapq.heappop(heap)
        pops += 1
        chosen = tuple(sorted({lists[j][i][1] for j, i in enumerate(idx)}))
        if chosen not in emitted and chosen not in exclude:
            emitted.add(chosen)
            out.append(Composed(chosen, -neg, {e: lists[j][i][1] for j, (e, i) in enumerate(zip(need, idx))}))
        for j in range(len(idx)):
            if idx[j] + 1 < len(lists[j]):
                nxt = idx[:j] + (idx[j] + 1,) + idx[j + 1:]
                if nxt not in seen:
                    seen.add(nxt)
                    heapq.heappush(heap, (neg + lists[j][idx[j]][0] - lists[j][idx[j] + 1][0], nxt))
    return out


@dataclass(frozen=True)
class Adapted:
    precursors: tuple[str, ...]
    dropped: tuple[str, ...]  # the recorded precursors that brought a foreign element or are refused
    added: tuple[tuple[str, str], ...]  # (element, the precursor completing it)


def adapt(lib: Library, recorded: Sequence[str], elements: frozenset[str],
          best: Callable[[str, frozenset[str]], str | None]) -> Adapted | None:
    """``recorded`` made valid for a material of ``elements`` (module docstring); ``best(element,
    elements)``: the precursor completing ``element``, or None."""
    kept = [p for p in recorded if lib.compatible(p, elements)]
    covered = set().union(*(lib.precursor_elements[p] for p in kept)) if kept else set()
    added = []
    for e in sorted(lib.need(elements) - covered, key=lambda x: (x in NON_METALS, x)):
        if e in covered:
            continue
        p = best(e, elements)
        if p is None:
            return None
        added.append((e, p))
        kept.append(p)
        covered |= lib.precursor_elements[p]
    return Adapted(tuple(sorted(set(kept))), tuple(p for p in recorded if p not in kept), tuple(added))


def by_popularity(lib: Library) -> Callable[[str, frozenset[str]], str | None]:
    """``adapt``'s completion by per-element popularity: the element's most common compatible precursor."""
    def best(element: str, elements: frozenset[str]) -> str | None:
        return next(iter(candidates(lib, elements, element)), None)

    return best

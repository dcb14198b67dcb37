"""HyGRAIL+ARIA (``evidence=aria``): ARIA's evidence gated by causal completeness
(papers/aria-excerpt.txt), adapted from processing-structure-property (PSP) queries to verifying a
typed hypothesis (u, v, r). Each hypothesis gets one tier, and the reviewer is told which:

- Tier 1, complete: a connecting path u … v of at most ``max_hops`` hops whose every edge weight
  is >= ``theta1`` (ARIA's PSP-completeness, §"PSP-complete", condition iv). The hypothesis's
  endpoint types stand for processing and property, the intermediates for the structure that
  mediates them; ARIA's path is (v_P, v_S, v_Prop), two hops, so ``max_hops`` = 2. ARIA's typing
  (v_S must be a structure) becomes the schema's (``typed``): the entity next to each endpoint must
  be of a type whose edges describe that endpoint's type (``R_evi``, paper Table 7), e.g. a
  property or a material between a material and an application. Generic hub entities (template
  mode's rule: degree penalty <= ``hub.penalty``) are not mechanisms and never complete a path
  (``exclude_hubs``). The reviewer gets all complete paths (ARIA "aggregates all consistent
  paths"; the ``max_paths`` strongest are written out, the count of the rest is stated) and is
  told the evidence is complete.
- Tier 2, analogy: no complete path, but an entity s of an endpoint x's type, most similar to x,
  is linked by a verified edge (weight >= ``theta1``) to the other endpoint y and has complete
  paths s … y of its own; those paths are transferred to x when feasible, and written as analogy,
  not as evidence about x. Similarity is ARIA's weighted combination with the parts this KG has:
  ``w_name`` x MiniLM cosine of the names (ARIA's semantic part, same encoder) + ``w_neighbours``
  x Jaccard overlap of the two neighbour sets without y (its categorical/structural part); ARIA's
  numerical part (material descriptors) has no counterpart, so its weights 0.5 / 0.3 are
  renormalised to 0.625 / 0.375. At most ``top_k`` analogues (ARIA's K = 5). Feasibility (ARIA's
  structural-class check): x itself has edges of the transferred path's first-hop edge type, i.e.
  the graph describes x in the dimension the mechanism runs through, and x is not on the path.
- Tier 3, speculative: neither. The text says the hypothesis lacks grounding in the graph and that
  the reviewer's answer will be speculative. ``tier3`` decides what happens to it: ``review`` (ARIA:
  the LLM answers from its own knowledge, flagged), ``reject`` (decided 0 without review) or
  ``gnn`` (the GNN-only decision, without review).

Thresholds, from rules over the training graph (never labels):
- Edge weight: ``GraphStats.edge_weight``, the mid-rank percentile of an edge's support count
  within its edge type, in (0, 1] (ARIA's confidence weights come from agreement across
  statements; the number of supporting papers is this KG's counterpart). ``theta1`` = 0.5: every
  link of a complete path is at least as well supported as the median link of its type.
- Analogy threshold: ARIA's τ = 0.75 is on its own mix of similarities and does not transfer to
  ours (on the synthetic MatKG the 99th percentile of name cosine between random entities of one
  type is 0.48-0.53, and random neighbour overlap is ~0). τ is instead the ``analogy.quantile``
  (0.99) quantile of the similarity over ``analogy.reference_pairs`` random pairs of entities of x's
  type in the training graph (seeded): an analogue is more similar to x than 99 of 100 random
  entities of its type are to each other.

What the gate does on the 3,000-node synthetic MatKG (CHM-APL, training graph; described, not
tuned, on 60 training positives, each with its own edge left out, and 60 unlinked training-period
pairs): 55% of the positives have a 2-hop path but only 8% a complete one (tier 1; 13% with
``max_hops`` = 3), none of the unlinked pairs does; no analogy fires (1 of 43 candidate analogues
passes τ, and it has no complete path of its own), so the rest is tier 3. Most of the 2-hop paths
fail the weight cut (22% pass) or the typing (51% pass: material - material - application and
material - property - application do; material - application - application does not). ARIA's gate
is strict by design; on this sparse graph it mostly tells the reviewer that evidence is missing.

``info["tier"]`` (1, 2, 3) is a column of predictions.parquet; the cell logs each tier's share
(``evidence_tier_<t>_share``) and the test F1 per tier (``breakdown``).
"""

from __future__ import annotations

import weakref
from dataclasses import asdict, dataclass, field
from typing import Mapping, Sequence

import numpy as np

from hygrail.evidence.mode import EvidenceMode, Hypothesis, Prepared
from hygrail.evidence.names import chain_text, edge_counts, layout, node_vectors
from hygrail.evidence.retrieve import GraphStats, graph_stats, ranked_paths
from hygrail.kg import KG, DataError, Relation

TIERS = (1, 2, 3)
TIER3 = ("review", "reject", "gnn")
_REFERENCE: "weakref.WeakKeyDictionary[KG, dict]" = weakref.WeakKeyDictionary()


@dataclass
class Complete:
    """A complete path: every edge weight >= theta1, typed, no hub intermediate."""

    nodes: list[int]
    counts: list[int]
    score: float  # HyGRAIL's path score, the order they are listed in


@dataclass
class Analogy:
    analogue: int  # s, similar to x and linked to y
    endpoint: int  # x, the endpoint s stands in for
    other: int  # y
    similarity: float
    name_similarity: float
    overlap: float  # Jaccard of neighbour sets without y
    link_count: int  # support of the edge s - y
    paths: list[list[int]] = field(default_factory=list)  # feasible complete paths s ... y


@dataclass
class Tiered:
    tier: int
    complete: list[Complete]  # tier 1: complete paths u ... v, strongest first
    analogies: list[Analogy]  # tier 2: credible analogues with feasible transferred paths


def describing_types(graph: KG, node_type: str) -> set[str]:
    """Node types whose edges describe ``node_type`` (the schema's evidence set R_evi)."""
    return {label.partition("-")[2] for label in graph.schema.evidence.get(node_type, ())}


def complete_paths(graph: KG, stats: GraphStats, x: int, y: int, cfg: Mapping) -> list[Complete]:
    """Paths x … y whose every edge weight is >= theta1, through non-hub intermediates whose types
    describe the endpoint next to them (module docstring, tier 1), strongest first."""
    search = {**cfg, "max_hops": int(cfg["max_hops"])}
    theta = float(cfg["theta1"])
    near_x, near_y = describing_types(graph, graph.type_of(x)), describing_types(graph, graph.type_of(y))
    hub_cut = stats.hub_cut(float(cfg["hub"]["penalty"]))
    out = []
    for nodes, eids, score in ranked_paths(graph, stats, x, y, int(cfg["candidate_paths"]), search)[0]:
        inner = nodes[1:-1]
        typed = not cfg["typed"] or (graph.type_of(inner[0]) in near_x and graph.type_of(inner[-1]) in near_y)
        hub = any(graph.degree[m] >= hub_cut[graph.node_types[m]] for m in inner)
        if min(stats.edge_weight[e] for e in eids) >= theta and typed and not (hub and cfg["exclude_hubs"]):
            out.append(Complete(nodes, [int(graph.counts[e]) for e in eids], score))
    return out


def overlap(graph: KG, a: int, b: int, skip: int = -1) -> float:
    """Jaccard overlap of the neighbour sets of a and b, leaving ``skip`` out of both."""
    na, nb = (np.setdiff1d(graph.neighbors(int(n))[0], [skip]) for n in (a, b))
    union = len(np.union1d(na, nb))
    return len(np.intersect1d(na, nb, assume_unique=True)) / union if union else 0.0


def similarity(graph: KG, pairs_left: np.ndarray, pairs_right: np.ndarray, cfg: Mapping, skip: int = -1):
    """ARIA-style similarity of each pair (module docstring): (combined, name cosine, neighbour overlap)."""
    a = cfg["analogy"]
    uniq, inv = np.unique(np.concatenate([pairs_left, pairs_right]), return_inverse=True)
    vecs = node_vectors(graph, uniq, cfg["embedding_model"])
    names = (vecs[inv[: len(pairs_left)]] * vecs[inv[len(pairs_left) :]]).sum(1)
    shared = np.array([overlap(graph, p, q, skip) for p, q in zip(pairs_left, pairs_right)])
    return float(a["w_name"]) * names + float(a["w_neighbours"]) * shared, names, shared


def analogy_threshold(graph: KG, node_type: str, cfg: Mapping) -> float:
    """τ for analogues of a ``node_type`` entity: the ``quantile`` of the similarity over random
    pairs of that type in this graph (seeded), computed once per graph and setting."""
    a = cfg["analogy"]
    key = (node_type, float(a["w_name"]), float(a["w_neighbours"]), float(a["quantile"]), int(a["reference_pairs"]),
           cfg["embedding_model"])
    memo = _REFERENCE.setdefault(graph, {})
    if key not in memo:
        ids = graph.nodes_of_type(node_type)
        if len(ids) < 2:
            memo[key] = np.inf
            return memo[key]
        rng = np.random.default_rng(0)
        left, right = rng.choice(ids, int(a["reference_pairs"])), rng.choice(ids, int(a["reference_pairs"]))
        keep = left != right
        memo[key] = float(np.quantile(similarity(graph, left[keep], right[keep], cfg)[0], float(a["quantile"])))
    return memo[key]


def analogies(graph: KG, stats: GraphStats, u: int, v: int, cfg: Mapping) -> list[Analogy]:
    """Credible analogues of u (linked to v) and of v (linked to u) with feasible transferred complete
    paths, most similar first, at most ``analogy.top_k`` (module docstring, tier 2)."""
    a = cfg["analogy"]
    theta = float(cfg["theta1"])
    found = []
    for x, y in {"both": ((u, v), (v, u)), "left": ((u, v),), "right": ((v, u),)}[a["sides"]]:
        nb, eids = graph.neighbors(y)
        same = (graph.node_types[nb] == graph.node_types[x]) & (nb != x) & (stats.edge_weight[eids] >= theta)
        cands, links = nb[same], eids[same]
        if len(cands) == 0:
            continue
        sim, names, shared = similarity(graph, np.full(len(cands), x), cands, cfg, skip=y)
        tau = analogy_threshold(graph, graph.type_of(x), cfg)
        x_types = set(graph.edge_type_ids[graph.neighbors(x)[1]].tolist())
        for i in np.flatnonzero(sim >= tau):
            s = int(cands[i])
            feasible = [p.nodes for p in complete_paths(graph, stats, s, y, cfg)
                        if x not in p.nodes and graph.edge_type_ids[graph.edge_id(s, p.nodes[1])] in x_types]
            if feasible:
                found.append(Analogy(s, x, y, float(sim[i]), float(names[i]), float(shared[i]),
                                     int(graph.counts[links[i]]), feasible))
    found.sort(key=lambda an: (-an.similarity, an.analogue))
    return found[: int(a["top_k"])]


def tier_of(graph: KG, u: int, v: int, cfg: Mapping) -> Tiered:
    stats = graph_stats(graph)
    complete = complete_paths(graph, stats, u, v, cfg)
    if complete:
        return Tiered(1, complete, [])
    found = analogies(graph, stats, u, v, cfg)
    return Tiered(2 if found else 3, [], found)


class ARIA(EvidenceMode):
    """ARIA's completeness tiers as evidence (module docstring)."""

    breakdown = ("tier",)

    def __init__(self, cfg: Mapping, templates: Mapping, calibrated: Mapping[str, float] | None = None):
        super().__init__(cfg, templates, calibrated)
        if self.cfg.get("tier3") not in TIER3:
            raise DataError(f"evidence.tier3={self.cfg.get('tier3')!r}; expected one of {', '.join(TIER3)}")
        if int(self.cfg["max_hops"]) not in (2, 3):
            raise DataError(f"evidence.max_hops={self.cfg['max_hops']}: expected 2 or 3 (the path search's range)")
        if self.cfg["analogy"].get("sides") not in ("both", "left", "right"):
            raise DataError(f"evidence.analogy.sides={self.cfg['analogy'].get('sides')!r}; expected both, left or right")

    def prepare(self, graph: KG, relation: Relation, hyps: Sequence[Hypothesis], llm=None) -> list[Prepared]:
        return [self.render(graph, h, tier_of(graph, h.src, h.dst, self.cfg)) for h in hyps]

    def render(self, graph: KG, h: Hypothesis, t: Tiered) -> Prepared:
        left, right = graph.label(h.src), graph.label(h.dst)
        shown = int(self.cfg["max_paths"])
        if t.tier == 1:
            lines = [f"Evidence completeness: COMPLETE. The knowledge graph holds {len(t.complete)} mechanistic chain(s) "
                     f"from {left} to {right} in which every link is at least as well supported as the typical "
                     f"link of its kind (papers per link: how many papers support each link):"]
            lines += [f"- {chain_text(graph, p.nodes, p.counts)}" for p in t.complete[:shown]]
            if len(t.complete) > shown:
                lines.append(f"- … and {len(t.complete) - shown} more such chains.")
        elif t.tier == 2:
            lines = [f"Evidence completeness: NO COMPLETE CHAIN links {left} and {right}. Analogical evidence follows: "
                     "it is about similar entities, not about the hypothesis itself, and holds only if the "
                     "mechanism transfers:"]
            for an in t.analogies:
                x, s, y = graph.label(an.endpoint), graph.label(an.analogue), graph.label(an.other)
                via = "; ".join(chain_text(graph, p, edge_counts(graph, p)) for p in an.paths[:shown])
                lines.append(f"- Analogy: {s} is similar to {x} (name similarity {an.name_similarity:.2f}, "
                             f"{an.overlap:.0%} shared neighbours) and is linked to {y} ({an.link_count} papers) "
                             f"through {via}. {x} has links of the same kind, so the mechanism could transfer.")
        else:
            lines = [f"Evidence completeness: NONE. The knowledge graph holds no complete mechanistic chain between "
                     f"{left} and {right} and no credible analogy: the hypothesis lacks grounding in the graph. "
                     "Judge it from your own knowledge, and treat the answer as speculative."]
        text = layout(self.templates, left, right, lines, h.score, bool(self.cfg["show_score"]))
        structured = {
            "tier": t.tier,
            "complete_paths": [asdict(p) | {"names": [graph.label(n) for n in p.nodes]} for p in t.complete],
            "analogies": [asdict(an) | {"names": [graph.label(n) for n in (an.analogue, an.endpoint, an.other)]}
                          for an in t.analogies],
        }
        info = {"tier": t.tier, "complete_paths": len(t.complete), "analogies": len(t.analogies)}
        skip = None if t.tier != 3 or self.cfg["tier3"] == "review" else self.cfg["tier3"]
        return Prepared(self.statement(graph, h), text, structured, info, skip=skip)

    def summary(self, prepared: Sequence[Prepared]) -> dict[str, float]:
        out = super().summary(prepared)
        tiers = [p.info.get("tier") for p in prepared]
        for t in TIERS:
            out[f"evidence_tier_{t}_share"] = tiers.count(t) / len(tiers) if tiers else 0.0
        return out

"""HyGRAIL+HyKGE (``evidence=hykge``): HyKGE's hypothesis-guided retrieval (papers/hykge-notes.txt),
adapted from medical question answering to verifying a typed hypothesis (u, v, r).

1. Hypothesis Output (HO, HyKGE §4.1.1): one LLM pre-stage call per hypothesis, batched through the
   reviewer's cached client, asks the reviewer model what mechanism or intermediate concepts would
   make the hypothesis true, briefly and step by step (``HO_PROMPT``; at most ``ho_max_words``).
2. Anchors (§4.1.2, §4.2.1): HyKGE's NER model (W2NER, trained on Chinese medical text) has no
   materials-science counterpart here, so every 1..``mention_words``-word run of content words in
   the HO (stop words removed, inside a clause) is a candidate mention; each is linked to its most
   similar KG entity by MiniLM cosine and kept when that similarity is >= ``delta`` (HyKGE's δ).
   Relations the LLM wrote are never used (HyKGE ignores them too): the graph supplies the links.
   The endpoints u, v are the query's own entities (matched exactly), so they are not anchors; the
   ``max_anchors`` most similar distinct entities are kept (HyKGE's case study matched 23).
3. Reasoning chains (§4.2.2) between the matched entities that involve an endpoint. HyKGE's three
   kinds are defined by arrow directions in a directed KG; MatKG's edges are undirected, so the
   kinds are told apart by where the anchor sits:
   - ``co_occurrence``: an anchor adjacent to both endpoints, u → a → v (the HO's concept occurs
     with both; HyKGE's shared-descendant chain);
   - ``co_ancestor``: an endpoint and an anchor sharing a neighbour m, u → m → a or a → m → v
     (HyKGE's shared-ancestor chain, "analogous factors");
   - ``path``: every other simple chain of <= ``chain_hops`` hops (HyKGE's k) between an endpoint
     and an anchor, or between u and v themselves: x → a directly, 3-hop chains, and u … v chains.
   Path search is ``retrieve.ranked_paths`` (exact 2-hop, 3-hop over each end's
   ``neighbour_cap`` best neighbours, never through the edge u-v), its top ``chains_per_pair`` per
   pair by path score; chains through the other endpoint are left to the u … v search.
4. Fragment rerank (§4.3): the hypothesis statement and the HO, stop words removed, are chunked
   into fragments of <= ``fragment_words`` words. HyKGE's reranker (bge-reranker-large, a
   cross-encoder) is not shipped offline, so relevance is MiniLM cosine between a fragment and a
   chain's own concepts (its nodes other than u and v, which every chain shares): a chain scores
   its best fragment (max over fragments of the mean cosine over its concepts), so each fragment
   can pull in its own chains and the kept set stays diverse, which is the point of fragment
   granularity. Ties go to the stronger chain (path score). The top ``top_k`` chains are kept
   (HyKGE's case study kept 10 of 125) and written as directed chains, oriented from u toward v,
   with the papers supporting each link (HyKGE adds entity descriptions; MatKG has none, so each
   entity carries its type). The reviewer sees the chains, not the HO, as HyKGE's reader does.

Thresholds: ``delta`` = 0.65 is ARIA's stated retrieval threshold for the same encoder
(all-MiniLM-L6-v2) doing the same job, matching query text to KG entities (papers/aria-excerpt.txt;
HyKGE gives no value for δ). On the synthetic MatKG the cosine of a name and its nearest other
name has median 0.77 and 10th percentile 0.57, so 0.65 links a mention to an entity about as close
as most names are to their nearest neighbour. ``chain_hops`` = 3: HyKGE requires k >= 2 and
reports that retrieved knowledge explodes by k = 5; 3 is what HyGRAIL's own path search covers.

Logged per hypothesis (``info``, columns of predictions.parquet): anchors found, chains retrieved
and kept; per cell (``summary``) their means. A failed HO call falls back to template evidence
(``fallback``, counted in ``evidence_fallbacks``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Mapping, Sequence

import numpy as np
from tqdm import tqdm

from hygrail.evidence.mode import Hypothesis, Prepared, expert_words
from hygrail.evidence.names import chain_text, edge_counts, encode, fragments, layout, name_matrix, ngrams
from hygrail.evidence.naturalize import Template
from hygrail.evidence.retrieve import GraphStats, graph_stats, ranked_paths, retrieve
from hygrail.kg import KG, DataError, Relation

KIND_TEXT = {"co_occurrence": "linked to both", "co_ancestor": "shared neighbour", "path": "path"}

# Short and step by step (HyKGE's P_HO); no verdict, since the reviewer judges later.
# The system line names the reviewer's field (mode.expert_words: the paper's "an expert materials
# scientist" on MatKG), as the reviewer's own prompt does.
HO_PROMPT = {
    "system": "You are {expert}.",
    "user": (
        "Hypothesis: {hypothesis}\n\n"
        "Think step by step, briefly: what mechanism, properties or intermediate concepts would make this "
        "hypothesis true? Name the specific materials, properties, structures, methods or applications "
        "involved. At most {max_words} words. Do not give a verdict."
    ),
}


@dataclass
class Anchor:
    node: int
    name: str
    similarity: float  # cosine of the entity's name and its best mention
    mention: str


@dataclass
class Chain:
    kind: str  # co_occurrence | co_ancestor | path
    nodes: list[int]  # oriented from u toward v
    score: float  # HyGRAIL's path score (geometric mean edge percentile x degree penalties)
    relevance: float = 0.0  # best fragment's mean cosine over the chain's concepts


def ho_messages(statement: str, cfg: Mapping, expert: str) -> list[dict]:
    user = HO_PROMPT["user"].format(hypothesis=statement, max_words=int(cfg["ho_max_words"]))
    return [{"role": "system", "content": HO_PROMPT["system"].format(expert=expert)}, {"role": "user", "content": user}]


def link_anchors(graph: KG, u: int, v: int, text: str, cfg: Mapping) -> list[Anchor]:
    """KG entities (not u, v) whose name is within ``delta`` cosine of some mention in ``text``."""
    mentions = ngrams(text, int(cfg["mention_words"]))
    if not mentions:
        return []
    sims = encode(mentions, cfg["embedding_model"]) @ name_matrix(graph, cfg["embedding_model"]).T
    best = sims.argmax(1)
    best_sim = sims[np.arange(len(mentions)), best]
    found: dict[int, Anchor] = {}
    for i in np.flatnonzero(best_sim >= float(cfg["delta"])):
        n, s = int(best[i]), float(best_sim[i])
        if n not in (u, v) and (n not in found or s > found[n].similarity):
            found[n] = Anchor(n, graph.label(n), s, mentions[i])
    # float32 cosines of two exact matches differ in the 7th digit (1.0000001 vs 1.0, by BLAS and
    # batch): rounded, they tie and the node id decides, the same on every machine
    return sorted(found.values(), key=lambda a: (-round(a.similarity, 5), a.node))[: int(cfg["max_anchors"])]


def chain_score(graph: KG, stats: GraphStats, nodes: Sequence[int]) -> float:
    """retrieve.py's path score for any chain: geometric mean of its edges' percentiles times the
    degree penalty of its intermediates."""
    eids = [graph.edge_id(int(a), int(b)) for a, b in zip(nodes, nodes[1:])]
    gm = math.prod(float(stats.edge_weight[e]) for e in eids) ** (1 / len(eids))
    return gm * math.prod(float(stats.node_penalty[m]) for m in nodes[1:-1])


def reasoning_chains(graph: KG, u: int, v: int, anchors: Sequence[int], cfg: Mapping) -> list[Chain]:
    """HyKGE's three chain kinds between the endpoints and the anchors (module docstring), unranked."""
    stats = graph_stats(graph)
    search = {**cfg, "max_hops": int(cfg["chain_hops"])}
    per_pair = int(cfg["chains_per_pair"])
    found: dict[tuple[int, ...], Chain] = {}

    def add(kind: str, nodes: list[int], score: float | None = None) -> None:
        key = tuple(nodes)
        if key not in found:
            found[key] = Chain(kind, nodes, chain_score(graph, stats, nodes) if score is None else score)

    both = [a for a in anchors if graph.edge_id(u, a) >= 0 and graph.edge_id(a, v) >= 0]
    for a in both:
        add("co_occurrence", [u, a, v])
    for nodes, _, score in ranked_paths(graph, stats, u, v, per_pair, search)[0]:
        add("path", nodes, score)  # an anchor between u and v is already a co-occurrence chain
    for x, other in ((u, v), (v, u)):
        for a in anchors:
            if a in both:
                continue  # its links to x are part of its co-occurrence chain
            chains = [([x, a], None)] if graph.edge_id(x, a) >= 0 else []
            chains += [(nodes, score) for nodes, _, score in ranked_paths(graph, stats, x, a, per_pair, search)[0]
                       if other not in nodes]
            for nodes, score in chains:
                oriented = nodes if x == u else nodes[::-1]  # read from u toward v
                add("co_ancestor" if len(nodes) == 3 else "path", oriented, score)
    return list(found.values())


def rerank(graph: KG, u: int, v: int, chains: list[Chain], pieces: Sequence[str], cfg: Mapping) -> list[Chain]:
    """Chains by relevance to their best fragment, then path score (module docstring, step 4)."""
    if not chains:
        return []
    frag = encode(list(pieces), cfg["embedding_model"])
    names = name_matrix(graph, cfg["embedding_model"])
    for c in chains:
        inner = [n for n in c.nodes if n not in (u, v)]
        c.relevance = float((names[inner] @ frag.T).mean(0).max()) if len(frag) else 0.0
    return sorted(chains, key=lambda c: (-c.relevance, -c.score, len(c.nodes), c.nodes))


class HyKGE(Template):
    """HyKGE's hypothesis output -> anchors -> reasoning chains -> fragment rerank (module docstring)."""

    uses_llm = True

    def __init__(self, cfg: Mapping, templates: Mapping, calibrated: Mapping[str, float] | None = None):
        super().__init__(cfg, templates, calibrated)
        if int(self.cfg["chain_hops"]) not in (2, 3):
            raise DataError(f"evidence.chain_hops={self.cfg['chain_hops']}: expected 2 or 3 (the path search's range)")

    def prepare(self, graph: KG, relation: Relation, hyps: Sequence[Hypothesis], llm) -> list[Prepared]:
        statements = [self.statement(graph, h) for h in hyps]
        expert = expert_words(llm)
        outputs = llm.chat_many([ho_messages(s, self.cfg, expert) for s in statements],
                                max_tokens=int(self.cfg["ho_max_tokens"]))
        out = []
        for h, statement, ho in tqdm(list(zip(hyps, statements, outputs)), desc="hykge", unit="hyp",
                                     disable=len(hyps) < 20, leave=False):
            if ho is None:
                out.append(self.template(retrieve(graph, h.src, h.dst, relation, self.cfg), h, fallback=True))
            else:
                out.append(self.hykge(graph, h, statement, ho))
        return out

    def hykge(self, graph: KG, h: Hypothesis, statement: str, ho: str) -> Prepared:
        u, v, cfg = h.src, h.dst, self.cfg
        anchors = link_anchors(graph, u, v, ho, cfg)
        chains = reasoning_chains(graph, u, v, [a.node for a in anchors], cfg)
        pieces = list(dict.fromkeys(fragments(statement, int(cfg["fragment_words"]))
                                    + fragments(ho, int(cfg["fragment_words"]))))
        kept = rerank(graph, u, v, chains, pieces, cfg)[: int(cfg["top_k"])]
        left, right = graph.label(u), graph.label(v)
        if kept:
            lines = ["Reasoning chains in the knowledge graph, most relevant first (→: linked in the literature; "
                     "papers per link: how many papers support each link):"]
            lines += [f"- {chain_text(graph, c.nodes, edge_counts(graph, c.nodes))} ({KIND_TEXT[c.kind]})" for c in kept]
        else:
            lines = [f"No reasoning chain in the knowledge graph links {left} or {right} to the concepts the hypothesis "
                     f"involves, or {left} to {right}."]
        structured = {
            "hypothesis_output": ho,
            "anchors": [asdict(a) for a in anchors],
            "chains": [asdict(c) | {"names": [graph.label(n) for n in c.nodes]} for c in kept],
            "chains_found": len(chains),
        }
        info = {"anchors": len(anchors), "chains_found": len(chains), "chains_kept": len(kept)}
        text = layout(self.templates, left, right, lines, h.score, bool(cfg["show_score"]))
        return Prepared(statement, text, structured, info)

    def summary(self, prepared: Sequence[Prepared]) -> dict[str, float]:
        out = super().summary(prepared)
        done = [p for p in prepared if not p.fallback]
        for key in ("anchors", "chains_found", "chains_kept"):
            out[f"evidence_{key}_mean"] = float(np.mean([p.info[key] for p in done])) if done else 0.0
        return out

"""HyGRAIL+Graph2Idea (``evidence=graph2idea``): Graph2Idea's compact graph-derived contexts and
two-stage generation (papers/graph2idea.txt §3.3, Algorithm 1), adapted from idea generation for a
target paper to verifying a typed hypothesis (u, v, r). The target profile z is the hypothesis
statement; the working graph is the split's training graph around u and v.

1. Target-centred subgraph: u, v and each one's ``subgraph_neighbours`` best neighbours per edge
   type (``retrieve.capped_neighbours``: by edge percentile times degree penalty), with every edge
   among them except u-v. Graph2Idea's auxiliary links (year, venue, source paper) connect sparse
   components and are never serialised as evidence; this KG's counterpart is its generic hub
   entities (template mode's rule: degree penalty <= ``hub.penalty``), which are left out of the subgraph, since the KG's
   typed edges already connect the neighbourhood of an entity pair.
2. Contexts (Algorithm 1): edges are scored by relevance to z, the mean MiniLM cosine of the
   statement and the edge's two entity names (Graph2Idea's encoder, all-MiniLM-L6-v2), and taken
   in that order. A context starts from the best unused seed edge whose core nodes (its nodes other
   than u and v: the endpoints are in every context by design) share at most ``lambda_overlap``
   (λ) nodes with earlier contexts' cores, and grows by the most relevant unused edges touching a
   core node, up to ``max_triples`` (B) triples: a small connected set of triples around its core.
   At most ``contexts`` (M) contexts; they are shown ranked by their mean edge relevance.
   Graph2Idea's M = 4 is kept; its B = 40 serves idea generation over a literature graph, while a
   reviewer here reads about as many facts as the other modes give (template: 10 features and 5
   paths; KG-FM: 30 triples), so B = 8 (32 triples at most). λ = 0: each context's core is new.
3. Two stages, both through the reviewer's cached client. Stage 1 (Graph2Idea's direction
   planning) shows the hypothesis and all contexts and asks which bear on whether it is true, one
   line ``<number>: <direction>`` each, or NONE (``STAGE1_PROMPT``). Stage 2 is the review itself,
   reading the picked contexts only, each with its stage-1 direction labelled as an LLM's reading
   rather than a graph fact (``show_directions``), as Graph2Idea's synthesis reads the context with
   its selected direction. A hypothesis with no context at all gets no stage-1 call (nothing to
   pick) and says so. A failed or unparseable stage-1 reply falls back to template evidence and is
   counted (``evidence_fallbacks``, ``evidence_stage1_unparseable``). Tokens per stage:
   ``llm_prestage_*`` (stage 1) and ``llm_review_*`` (stage 2), logged by the Reviewer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from hygrail.evidence.mode import Hypothesis, Prepared, expert_words
from hygrail.evidence.names import encode, layout, node_vectors
from hygrail.evidence.naturalize import Template
from hygrail.evidence.retrieve import capped_neighbours, gather_rows, graph_stats, retrieve
from hygrail.kg import KG, Relation

STAGE1_PROMPT = {
    "system": "You are {expert} planning how to check a hypothesis against knowledge-graph evidence.",  # mode.expert_words
    "user": (
        "Hypothesis: {hypothesis}\n\n"
        "Contexts extracted from the knowledge graph (each: entities linked in the literature around a core "
        "entity; papers: how many papers support a link):\n{contexts}\n\n"
        "Which contexts bear on whether the hypothesis is true? For each relevant context write one line "
        "'<number>: <what it suggests about the hypothesis, in one sentence>'. Write NONE if no context bears "
        "on it. Do not give a verdict."
    ),
}
_PICK = re.compile(r"^\W*(?:context\s*)?(\d+)\s*[:.)\-–]\s*(.*)$", re.IGNORECASE)


@dataclass
class Context:
    core: list[int]  # its core nodes (not u, v)
    triples: list[tuple[int, int, int]]  # (a, b, count), oriented to read from u toward v
    relevance: float  # mean relevance of its triples to the hypothesis


def target_subgraph(graph: KG, u: int, v: int, cfg: Mapping) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges (a, b, edge id), a < b, among u, v and their best non-hub neighbours, without u-v."""
    stats = graph_stats(graph)
    cap = int(cfg["subgraph_neighbours"])
    hub_cut = stats.hub_cut(float(cfg["hub"]["penalty"]))
    near = np.concatenate([capped_neighbours(graph, stats, u, v, cap)[0], capped_neighbours(graph, stats, v, u, cap)[0]])
    near = near[graph.degree[near] < hub_cut[graph.node_types[near]]]
    nodes = np.unique(np.concatenate([[u, v], near]))
    pos = np.full(graph.num_nodes, -1, dtype=np.int64)
    pos[nodes] = np.arange(len(nodes))
    row, col, eid = gather_rows(graph, nodes)
    a = nodes[row]
    keep = (pos[col] >= 0) & (a < col) & ~(((a == u) & (col == v)) | ((a == v) & (col == u)))
    return a[keep], col[keep], eid[keep]


def contexts(graph: KG, u: int, v: int, statement_vec: np.ndarray, cfg: Mapping) -> list[Context]:
    """Algorithm 1 over the target-centred subgraph (module docstring, step 2)."""
    a, b, eid = target_subgraph(graph, u, v, cfg)
    if len(a) == 0:
        return []
    nodes = np.unique(np.concatenate([a, b]))
    rel_node = dict(zip(nodes.tolist(), (node_vectors(graph, nodes, cfg["embedding_model"]) @ statement_vec).tolist()))
    rel = np.array([(rel_node[int(x)] + rel_node[int(y)]) / 2 for x, y in zip(a, b)])
    order = np.lexsort((eid, -rel))
    used = np.zeros(len(a), dtype=bool)
    taken: set[int] = set()
    lam, budget = int(cfg["lambda_overlap"]), int(cfg["max_triples"])

    def core_of(j: int) -> set[int]:
        return {int(a[j]), int(b[j])} - {u, v}

    out = []
    for _ in range(int(cfg["contexts"])):
        seed = next((j for j in order if not used[j] and core_of(j) and len(core_of(j) & taken) <= lam), None)
        if seed is None:
            break
        core = core_of(seed)
        members = [seed]
        used[seed] = True
        for j in order:
            if len(members) >= budget:
                break
            if not used[j] and (int(a[j]) in core or int(b[j]) in core):
                members.append(j)
                used[j] = True
        taken |= core
        triples = [orient(u, v, int(a[j]), int(b[j]), int(graph.counts[eid[j]])) for j in members]
        out.append(Context(sorted(core), triples, float(rel[members].mean())))
    return sorted(out, key=lambda c: -c.relevance)


def orient(u: int, v: int, a: int, b: int, count: int) -> tuple[int, int, int]:
    """A triple read from u toward v: u first, v last."""
    return (b, a, count) if b == u or a == v else (a, b, count)


def context_text(graph: KG, number: int, c: Context) -> str:
    def name(n: int) -> str:
        return f"{graph.label(n)} ({graph.schema.display_name(graph.type_of(n))})"

    head = f"Context {number} (around {', '.join(graph.label(n) for n in c.core)}):"
    return "\n".join([head, *(f"- {name(x)} — {name(y)} [{k} papers]" for x, y, k in c.triples)])


def parse_picks(reply: str, n: int) -> dict[int, str] | None:
    """Context number -> direction from a stage-1 reply; {} for NONE; None when unparseable."""
    picks: dict[int, str] = {}
    for line in reply.splitlines():
        m = _PICK.match(line.strip())
        if m and 1 <= int(m.group(1)) <= n:
            picks.setdefault(int(m.group(1)), m.group(2).strip())
    if picks:
        return picks
    return {} if re.search(r"\bnone\b", reply, re.IGNORECASE) else None


class Graph2Idea(Template):
    """Graph2Idea's compact contexts, picked in a first LLM stage, reviewed in the second."""

    uses_llm = True

    def prepare(self, graph: KG, relation: Relation, hyps: Sequence[Hypothesis], llm) -> list[Prepared]:
        statements = [self.statement(graph, h) for h in hyps]
        vecs = encode(statements, self.cfg["embedding_model"])
        found = [contexts(graph, h.src, h.dst, vec, self.cfg) for h, vec in zip(hyps, vecs)]
        asked = [i for i, c in enumerate(found) if c]
        expert = expert_words(llm)
        messages = [self.stage1_messages(graph, statements[i], found[i], expert) for i in asked]
        replies: list[str | None] = [None] * len(hyps)
        for i, r in zip(asked, llm.chat_many(messages, max_tokens=int(self.cfg["stage1_max_tokens"]))):
            replies[i] = r
        return [self.stage2(graph, relation, h, s, c, r) for h, s, c, r in zip(hyps, statements, found, replies)]

    def stage1_messages(self, graph: KG, statement: str, found: list[Context], expert: str) -> list[dict]:
        text = "\n".join(context_text(graph, i + 1, c) for i, c in enumerate(found))
        user = STAGE1_PROMPT["user"].format(hypothesis=statement, contexts=text)
        return [{"role": "system", "content": STAGE1_PROMPT["system"].format(expert=expert)},
                {"role": "user", "content": user}]

    def stage2(self, graph: KG, relation: Relation, h: Hypothesis, statement: str, found: list[Context],
               reply: str | None) -> Prepared:
        left, right = graph.label(h.src), graph.label(h.dst)
        picks = parse_picks(reply, len(found)) if reply is not None else None
        if found and picks is None:
            p = self.template(retrieve(graph, h.src, h.dst, relation, self.cfg), h, fallback=True)
            p.info = {"contexts": len(found), "picked": 0, "stage1": "failed" if reply is None else "unparseable"}
            return p
        picks = picks or {}
        if not found:
            lines = [f"No graph context around {left} and {right} was found: neither has specific linked entities "
                     "in the knowledge graph."]
        elif not picks:
            lines = [f"A first reading found none of the {len(found)} graph contexts around {left} and {right} "
                     "relevant to the hypothesis."]
        else:
            lines = ["Graph contexts a first reading judged relevant to the hypothesis:"]
            for k, direction in sorted(picks.items()):
                lines.append(context_text(graph, k, found[k - 1]))
                if self.cfg["show_directions"] and direction:
                    lines.append(f"First reading (an LLM's note, not a graph fact): {direction}")
        structured = {
            "contexts": [{"core": c.core, "triples": [list(t) for t in c.triples], "relevance": c.relevance,
                          "text": context_text(graph, i + 1, c)} for i, c in enumerate(found)],
            "picked": sorted(picks), "directions": {str(k): d for k, d in picks.items()}, "stage1_reply": reply,
        }
        info = {"contexts": len(found), "picked": len(picks), "stage1": "ok" if found else "skipped"}
        text = layout(self.templates, left, right, lines, h.score, bool(self.cfg["show_score"]))
        return Prepared(statement, text, structured, info)

    def summary(self, prepared: Sequence[Prepared]) -> dict[str, float]:
        out = super().summary(prepared)
        done = [p for p in prepared if not p.fallback]
        for key in ("contexts", "picked"):
            out[f"evidence_{key}_mean"] = float(np.mean([p.info[key] for p in done])) if done else 0.0
        out["evidence_stage1_unparseable"] = float(sum(p.info.get("stage1") == "unparseable" for p in prepared))
        return out

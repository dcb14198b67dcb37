"""HyGRAIL-Profile (issue #37): the context a small judge can read about "entity X has term Y" in a
KG whose terms form an ontology (``KG.ancestors``), e.g. HPO's "disease X has clinical feature Y".

Why: on HPO the embedded 1.5B judge reading the statement alone ranks the band at AUC 0.62
(experiments/judge.md#hpo), and the paper's Table 9 template (counts, norms, path scores; ~600
tokens) is the GNN's own input in words. A clinician deciding whether a disease has a feature
looks at the disease's other features, where the feature sits in the ontology, and at similar
diseases. This mode writes exactly those, in a few hundred tokens (the embedded judge reads ~40-50
prompt tokens/s on 2 cores, DESIGN.md, so every 100 tokens cost ~2 s per review).

The relation's source (left) is the entity, its target (right) the ontology term; every fact comes
from ``graph`` (the split's training graph), none from labels. Three parts, each switchable in
``conf/evidence/profile.yaml`` so that variants can be compared (bench/bench_context.py):

- ``features`` (N shown, 0: off): X's current terms (its edges of the relation's type), most specific
  first. Specificity = the term's number of ontology ancestors in the graph (its depth), ties broken
  by fewer entities annotated with it, then by name; the rest are counted ("and 7 more").
- ``ontology`` (on/off): Y's parents, i.e. its nearest ancestors in the graph (ancestors of Y that are
  no ancestor of another of Y's ancestors: in a sampled graph, the nearest kept ones), then which of
  X's terms are broader terms of Y (ancestors) and which are siblings (share a parent with Y).
- ``similar`` (N shown, 0: off): the entities of X's type sharing most terms with X (ties: the higher
  Jaccard, then name), each with the number shared and whether it has Y (an edge to Y or to a
  descendant of Y: the true-path rule), a sibling of Y, or neither.

Budget: the statement and text together are cut to ``max_tokens`` estimated tokens (characters /
``chars_per_token``) by showing fewer features, then fewer related terms, then fewer similar
entities; ``estimate_tokens`` is the estimate. Every sentence's wording is in the config
(``wording``), with ``{entity}``/``{term}`` the schema's display names of the two types.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from hygrail.evidence.mode import EvidenceMode, Hypothesis, Prepared
from hygrail.kg import KG, DataError, Relation


def estimate_tokens(text: str, chars_per_token: float) -> int:
    """Prompt tokens of ``text`` as the budget counts them: characters / ``chars_per_token``, rounded up."""
    return math.ceil(len(text) / float(chars_per_token))


@dataclass
class _Index:
    """What every hypothesis of one (graph, relation) reads: entity x term incidence and the ontology."""

    terms: sp.csr_matrix  # N x N bool, [x, t]: entity x has term t (the relation's edges)
    ancestors: sp.csr_matrix | None  # N x N bool, [t, a]: a is a proper ancestor of t
    descendants: sp.csr_matrix | None  # its transpose, row access
    depth: np.ndarray  # per node: number of ancestors
    annotated: np.ndarray  # per node: entities having it as a term
    names: list[str]

    @classmethod
    def build(cls, graph: KG, relation: Relation) -> "_Index":
        etype = graph.schema.edge_type(relation.src, relation.dst)
        e = graph.edges.filter(graph.edges["type"] == etype)
        u, v = e["u"].to_numpy(), e["v"].to_numpy()
        src_first = graph.node_types[u] == graph.schema.node_types.index(relation.src)
        x, t = np.where(src_first, u, v), np.where(src_first, v, u)
        n = graph.num_nodes
        terms = sp.csr_matrix((np.ones(len(x), dtype=bool), (x, t)), shape=(n, n))
        anc = graph.ancestors
        depth = np.zeros(n, dtype=np.int64) if anc is None else np.diff(anc.indptr)
        desc = None if anc is None else sp.csr_matrix(anc.T)
        annotated = np.asarray(terms.sum(axis=0)).ravel()
        return cls(terms, anc, desc, depth, annotated, graph.names)

    def terms_of(self, x: int) -> np.ndarray:
        return self.terms.indices[self.terms.indptr[x]:self.terms.indptr[x + 1]]

    def ancestors_of(self, t: int) -> np.ndarray:
        a = self.ancestors
        return np.zeros(0, dtype=np.int64) if a is None else a.indices[a.indptr[t]:a.indptr[t + 1]]

    def descendants_of(self, t: int) -> np.ndarray:
        d = self.descendants
        return np.zeros(0, dtype=np.int64) if d is None else d.indices[d.indptr[t]:d.indptr[t + 1]]

    def parents(self, t: int) -> np.ndarray:
        """Nearest ancestors in the graph: those that are no ancestor of another ancestor of ``t``."""
        anc = self.ancestors_of(t)
        if len(anc) < 2:
            return anc
        below = np.asarray(self.ancestors[anc][:, anc].sum(axis=0)).ravel()  # [a]: ancestors of t under a
        return anc[below == 0]

    def by_specificity(self, ts: np.ndarray) -> list[int]:
        return sorted((int(t) for t in ts), key=lambda t: (-self.depth[t], self.annotated[t], self.names[t]))


class Profile(EvidenceMode):
    """The entity's terms, the candidate term's place among them, and similar entities (module docstring)."""

    def __init__(self, cfg: Mapping, templates: Mapping, calibrated: Mapping[str, float] | None = None):
        super().__init__(cfg, templates, calibrated)
        for key in ("features", "similar", "max_tokens"):
            if int(self.cfg.get(key, 0)) < 0:
                raise DataError(f"evidence.{key}={self.cfg.get(key)!r}: expected a count >= 0")
        if float(self.cfg.get("chars_per_token", 0)) <= 0:
            raise DataError(f"evidence.chars_per_token={self.cfg.get('chars_per_token')!r}: expected a number > 0")
        self._index: tuple[int, str, _Index] | None = None

    def index(self, graph: KG, relation: Relation) -> _Index:
        if self._index is None or self._index[:2] != (id(graph), relation.name):
            self._index = (id(graph), relation.name, _Index.build(graph, relation))
        return self._index[2]

    def prepare(self, graph, relation, hyps: Sequence[Hypothesis], llm=None) -> list[Prepared]:
        if graph.ancestors is None and self.cfg.get("ontology"):
            raise DataError(f"evidence=profile with ontology on needs a KG with an ontology hierarchy "
                            f"(KG.ancestors); relation {relation.name} has none: set evidence.ontology=false")
        ix = self.index(graph, relation)
        return [self.one(graph, relation, ix, h) for h in hyps]

    # -- the facts ------------------------------------------------------------------------------
    def facts(self, ix: _Index, x: int, y: int) -> dict:
        """Structured evidence for (x, y): everything the text may show, before the budget cuts it."""
        own = np.setdiff1d(ix.terms_of(x), [y])
        out: dict = {"features": ix.by_specificity(own)}
        parents = ix.parents(y)
        out["parents"] = sorted((int(p) for p in parents), key=lambda t: ix.names[t])
        broader = np.intersect1d(own, ix.ancestors_of(y))
        sib_of: dict[int, list[int]] = {}
        if len(parents):
            for f in np.setdiff1d(own, broader):
                shared = np.intersect1d(ix.parents(int(f)), parents)
                if len(shared):
                    sib_of[int(f)] = [int(p) for p in shared]
        out["broader"] = ix.by_specificity(broader)
        out["siblings"] = ix.by_specificity(np.array(list(sib_of), dtype=np.int64))
        out["sibling_parents"] = sib_of
        out["similar"] = self.similar(ix, x, y, own, parents) if int(self.cfg.get("similar", 0)) else []
        return out

    def similar(self, ix: _Index, x: int, y: int, own: np.ndarray, parents: np.ndarray) -> list[dict]:
        """The entities sharing most of x's terms (y left out: it is the question), with their answer."""
        if not len(own):
            return []
        shared = ix.terms[:, own].sum(axis=1).A.ravel()
        shared[x] = 0
        cand = np.flatnonzero(shared)
        if not len(cand):
            return []
        sizes = np.diff(ix.terms.indptr)[cand]
        jaccard = shared[cand] / (sizes + len(own) - shared[cand])
        order = sorted(range(len(cand)), key=lambda i: (-shared[cand[i]], -jaccard[i], ix.names[cand[i]]))
        below = ix.descendants_of(y)
        out = []
        for i in order[: int(self.cfg["similar"])]:
            d = int(cand[i])
            theirs = ix.terms_of(d)
            narrower = np.intersect1d(theirs, below)
            sibs = [int(t) for t in theirs if t != y and len(np.intersect1d(ix.parents(int(t)), parents))]
            if y in theirs:
                status, via = "has", None
            elif len(narrower):
                status, via = "narrower", ix.by_specificity(narrower)[0]
            elif sibs:
                status, via = "sibling", ix.by_specificity(np.array(sibs))[0]
            else:
                status, via = "not", None
            out.append({"entity": d, "shared": int(shared[d]), "status": status, "via": via})
        return out

    # -- the text -------------------------------------------------------------------------------
    def one(self, graph: KG, relation: Relation, ix: _Index, h: Hypothesis) -> Prepared:
        facts = self.facts(ix, h.src, h.dst)
        statement = self.statement(graph, h)
        words = {"left": graph.label(h.src), "right": graph.label(h.dst),
                 "entity": graph.schema.display_name(relation.src), "term": graph.schema.display_name(relation.dst)}
        budget, cpt = int(self.cfg["max_tokens"]), float(self.cfg["chars_per_token"])
        n_feat = min(int(self.cfg.get("features", 0)), len(facts["features"]))
        n_rel, n_sim = int(self.cfg.get("related", 6)), len(facts["similar"])
        while True:
            text = self.render(ix, facts, words, n_feat, n_rel, n_sim)
            if estimate_tokens(f"Hypothesis: {statement}\nEvidence:\n{text}", cpt) <= budget:
                break
            if n_feat > 3:  # features first (the least specific ones go), then related terms, then neighbours
                n_feat -= 1
            elif n_rel > 2:
                n_rel -= 1
            elif n_sim > 1:
                n_sim -= 1
            elif n_feat > 0:
                n_feat -= 1
            else:  # names alone too long for the budget: cut the text itself
                room = max(0, int((budget - estimate_tokens(f"Hypothesis: {statement}\nEvidence:\n", cpt)) * cpt) - 1)
                text = text[:room].rstrip() + "…"
                break
        structured = {"features": [ix.names[t] for t in facts["features"]],
                      "parents": [ix.names[t] for t in facts["parents"]],
                      "broader": [ix.names[t] for t in facts["broader"]],
                      "siblings": [ix.names[t] for t in facts["siblings"]],
                      "similar": [{"name": ix.names[s["entity"]], "shared": s["shared"], "status": s["status"],
                                   "via": None if s["via"] is None else ix.names[s["via"]]} for s in facts["similar"]]}
        info = {"profile_features": len(facts["features"]), "profile_features_shown": n_feat,
                "profile_broader": len(facts["broader"]), "profile_siblings": len(facts["siblings"]),
                "profile_similar_with": sum(s["status"] in ("has", "narrower") for s in facts["similar"][:n_sim]),
                "profile_tokens_est": estimate_tokens(f"Hypothesis: {statement}\nEvidence:\n{text}", cpt)}
        return Prepared(statement, text, structured, info)

    def render(self, ix: _Index, facts: dict, words: dict, n_feat: int, n_rel: int, n_sim: int) -> str:
        w = self.cfg["wording"]
        names = ix.names
        lines = []
        if int(self.cfg.get("features", 0)):
            feats = facts["features"]
            if not feats:
                lines.append(w["no_features"].format(**words))
            else:
                more = len(feats) - n_feat
                if n_feat:
                    listed = "; ".join(names[t] for t in feats[:n_feat])
                    tail = w["more"].format(n=more) if more else ""
                    lines.append(w["features"].format(n=len(feats), listed=listed, more=tail, **words))
                else:
                    lines.append(w["count_only"].format(n=len(feats), **words))
        if self.cfg.get("ontology"):
            if facts["parents"]:
                lines.append(w["parents"].format(parents="; ".join(names[t] for t in facts["parents"]), **words))
            related = []
            if facts["broader"]:
                related.append(w["broader"].format(listed="; ".join(names[t] for t in facts["broader"][:n_rel]), **words))
            if facts["siblings"]:
                related.append(w["siblings"].format(listed="; ".join(names[t] for t in facts["siblings"][:n_rel]), **words))
            if facts["features"]:  # with no terms there is nothing to relate Y to
                lines.append(" ".join(related) if related else w["no_related"].format(**words))
        if int(self.cfg.get("similar", 0)) and facts["features"]:
            sims = facts["similar"][:n_sim]
            if not sims:
                lines.append(w["no_similar"].format(**words))
            else:
                parts = [w["similar_item"].format(name=names[s["entity"]], shared=s["shared"],
                                                  status=w["status"][s["status"]].format(
                                                      via="" if s["via"] is None else names[s["via"]], **words), **words)
                         for s in sims]
                lines.append(w["similar"].format(listed="; ".join(parts), **words))
        return "\n".join(lines)

    def summary(self, prepared: Sequence[Prepared]) -> dict[str, float]:
        out = super().summary(prepared)
        tok = [p.info.get("profile_tokens_est", 0) for p in prepared]
        return out | ({"evidence_tokens_est_max": float(max(tok))} if tok else {})

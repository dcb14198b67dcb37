"""Knowledge-graph-embedding baseline (issue #34, item 6c): a PyKEEN model (RotatE or ComplEx)
trained on the graph it is given, scoring a candidate (u, v) as the triple (u, r, v) of the
relation's edge type r. Optional: ``pip install -e '.[kge]'`` (pykeen); without it every entry
point raises a one-line DataError saying so.

Which graph: the one passed in. ``method=kge`` (hygrail/pipeline.py ``run_kge``) trains on the
split's training graph (no val/test edge of the relation in it) and, under
``split.graph_cut=time``, a second model on the test graph for the test pairs (a transductive
embedding cannot read edges it was not trained on); discovery's per-entity factory ``kge`` trains
on the graph discovery reads (the cut graph at a cutoff, or the split's training graph, whichever
the caller hands it).

Triples, as a PyKEEN user builds them: every edge of the graph is one triple (head, edge type,
tail), every edge type one relation (static ones such as HPO's is_a and the recipes'
Target-Element included), node ids as PyKEEN entity ids. KG edges are undirected: each edge is
stored once, oriented from the hypothesis relation's source type to its target type when a
schema relation uses that edge type (else the edge type's first type; within one type, smaller
id first), and PyKEEN's inverse triples (``create_inverse_triples``) add the reverse of each as a
relation of its own, so that the model trains both directions without forcing a relation to be
symmetric (one relation for both directions would make ComplEx's r real, i.e. DistMult, and
RotatE's a rotation by 0 or pi). A hypothesis pair is then always a tail query f(u, r, ?), the
direction PyKEEN scores without inverting. Node ids are PyKEEN entity ids, so nodes without edges
(unknown at a cutoff) keep untrained embeddings, and no candidate space contains them.

Training (PyKEEN's stochastic local closed-world assumption loop, ``SLCWATrainingLoop``, as its
"first steps" guide uses it without ``pipeline``'s evaluation, which ranks every held-out triple
against all entities and would cost more than training here): Adam, the model's own default loss
(RotatE: self-adversarial negative sampling loss, margin 9, temperature 1, Sun et al. 2019;
ComplEx: softplus with L2 regularisation 0.01), ``num_negs_per_pos`` negatives per positive, a
fixed seed (the model's ``random_seed``), one torch thread. ``DEFAULTS`` holds the
hyperparameters: RotatE, embedding_dim 32 (complex, 64 floats per entity; PyKEEN's default is 200),
12 epochs, batch size 4096, lr 0.01, the pseudo-typed negative sampler (a corrupted head or tail
is drawn from the entities seen in that slot of that relation: type-correct negatives, the
discrimination a ranking of one type's candidates needs; ``basic`` draws from every entity, most of
them of the wrong type), 4 negatives per positive.

Choice, on validation only (the split of the cut graph, ``build_split(cfg, kg.until(cutoff))``,
as discovery calibrates; its val pairs, 1:20 negatives; test pairs and post-cutoff answers never
read). HPO disease-phenotype cut at 2015 (training graph 67,423 edges, val 134,043 pairs, 6,383
positive; PA reaches val AUC 0.540, AP 0.218) / recipes target-precursor cut at 2014 (154,974 edges,
88,095 pairs, 4,195 positive; PA 0.925, 0.569), val AUC / AP after n epochs:

  ComplEx, basic, dim 64           HPO 0.502 / 0.046 (20)   recipes 0.507 / 0.045 (10)
  ComplEx, pseudo-typed, dim 32    HPO 0.500 / 0.045 (10)   recipes 0.437 / 0.038 (10)
  RotatE, basic, dim 64            HPO 0.652 / 0.307 (20)   recipes 0.938 / 0.656 (20)
  RotatE, pseudo-typed, dim 64     HPO 0.833 / 0.396 (5), 0.815 / 0.320 (10), 0.769 / 0.186 (20)
                                   recipes 0.946 / 0.647 (8), 0.946 / 0.650 (10), 0.947 / 0.637 (12)
  RotatE, pseudo-typed, dim 32     HPO 0.835 / 0.397 (8), 0.832 / 0.380 (10), 0.828 / 0.363 (12),
  (DEFAULTS)                       0.823 / 0.341 (14); recipes 0.943 / 0.547 (8), 0.947 / 0.579 (10),
                                   0.951 / 0.601 (12), 0.951 / 0.604 (14), 0.952 / 0.599 (16)

(All rows but ComplEx pseudo-typed and the last ran with PyKEEN's GPU memory probe on, one extra
first batch: the last configuration then gave recipes AP 0.664 at 10 epochs, so differences of
~0.05 in AP are seed noise.) ComplEx with PyKEEN's defaults did not learn the val links at all (its loss stalls near
0.74); RotatE did, and type-correct negatives raised HPO's AP from 0.31 to ~0.39. With them HPO
overfits after ~8 epochs while the recipes gain to ~14: 12 epochs is the shared compromise (the two
APs summed: 0.944, 0.959, 0.964, 0.945 at 8, 10, 12, 14 epochs); dim 32 overfits HPO more slowly
than 64 at half the cost. More epochs than the budget needs would not help, so the budget
below is not what bounds them.

Cost (this configuration, 2 cores shared with other work, load average ~4, 1 torch thread,
2026-12-03; graphs loaded by ``hygrail.data.load_kg`` from conf/config.yaml composed with
data=hpo / data=synthesis_recipes): per epoch, the whole HPO graph (36,206 nodes, 288,371 edges,
is_a included) 8.8 s, the whole recipes graph (20,952 nodes, 215,805 edges) 5.7 s; cut at 2015 /
2014 (86,572 / 167,559 edges) 3.0 s / 4.4 s. 12 epochs on the whole HPO graph: ~1.8 min, inside
issue #34's ~20 min. Peak memory of the process 0.84 GB (HPO; 0.64 GB of it the loaded graph) and
0.83 GB (recipes): the parameters are 9.3 / 5.4 MB, Adam's state twice that. Scoring (PyKEEN's
``score_t`` over a block's destinations: RotatE forms a rows x destinations x dim array, so rows
are batched by ``SCORE_FLOATS``) ~1 us a pair: the 6,011 x 9,557 HPO disease-phenotype space cut
at 2015 ~70 s, the whole graph's 12,687 x 13,137 ~3 min, the recipes' 11,795 x 1,555 at 2014 ~20 s.
"""

from __future__ import annotations

import gc
import logging
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from hygrail.kg import KG, DataError, Relation

INSTALL = "pip install -e '.[kge]'"
LABEL = "RotatE (PyKEEN)"  # its row in the triage and discovery tables
MODELS = ("complex", "rotate")
SAMPLERS = ("basic", "pseudo_typed")
DEFAULTS = {
    "model": "rotate",
    "embedding_dim": 32,
    "epochs": 12,
    "batch_size": 4096,
    "lr": 0.01,
    "negative_sampler": "pseudo_typed",
    "num_negs_per_pos": 4,
    "inverse_triples": True,
    "seed": 0,
    "threads": 1,
}
# Floats of a scoring block's (rows x destinations x dim) intermediate: RotatE's distance needs it
# whole, ComplEx's einsum does not; ~64 MB of float32 either way.
SCORE_FLOATS = 1 << 24


def _require_pykeen() -> None:
    """The one-line DataError naming the extra, where PyKEEN is not installed."""
    try:
        import pykeen.models  # noqa: F401
        import pykeen.training  # noqa: F401
        import pykeen.triples  # noqa: F401
    except ImportError:
        raise DataError(f"the KGE baseline needs PyKEEN: {INSTALL}") from None


def options_of(options: Mapping | None) -> dict:
    """``DEFAULTS`` updated by ``options`` (unknown keys and values are one-line errors)."""
    out = dict(DEFAULTS)
    for k, v in (options or {}).items():
        if k == "name":  # conf/method/kge.yaml's cell name
            continue
        if k not in DEFAULTS:
            raise DataError(f"kge option {k!r}: expected some of {', '.join(DEFAULTS)}")
        out[k] = v
    if out["model"] not in MODELS:
        raise DataError(f"kge model={out['model']!r}: expected one of {', '.join(MODELS)}")
    if out["negative_sampler"] not in SAMPLERS:
        raise DataError(f"kge negative_sampler={out['negative_sampler']!r}: expected one of {', '.join(SAMPLERS)}")
    return out


def orientation(graph: KG) -> dict[str, str]:
    """Edge type -> the node type its triples take as head (module docstring)."""
    heads = {}
    for rel in graph.schema.relations.values():
        heads.setdefault(graph.schema.edge_type(rel.src, rel.dst), rel.src)
    return {t: heads.get(t, t.partition("-")[0]) for t in graph.edge_types}


def triples(graph: KG) -> tuple[np.ndarray, tuple[str, ...], dict[str, str]]:
    """(n, 3) int64 (head, relation, tail) of every edge, the relation names (graph.edge_types,
    relation id = position) and the orientation."""
    heads = orientation(graph)
    u, v = graph.edges["u"].to_numpy(), graph.edges["v"].to_numpy()
    rel = graph.edge_type_ids
    head_type = np.array([graph.schema.node_types.index(heads[t]) for t in graph.edge_types])[rel]
    # u < v by id: within one type u is the head; between two, the end of the head's type is
    swap = (graph.node_types[u] != head_type) & (graph.node_types[u] != graph.node_types[v])
    h, t = np.where(swap, v, u), np.where(swap, u, v)
    return np.column_stack([h, rel, t]).astype(np.int64), graph.edge_types, heads


@dataclass
class KGEModel:
    """A trained PyKEEN model and how the graph's edges map onto its triples."""

    model: object  # pykeen.models.ERModel
    relations: tuple[str, ...]  # edge types, relation id = position
    heads: dict[str, str]  # edge type -> head node type
    schema: object
    options: dict
    seconds: float  # training, wall clock
    losses: list[float] = field(default_factory=list)  # per epoch

    def _query(self, relation: Relation) -> tuple[int, bool]:
        """(PyKEEN's internal relation id, whether the relation's source is the tail of its triples)."""
        etype = self.schema.edge_type(relation.src, relation.dst)
        if etype not in self.relations:
            raise DataError(f"kge: edge type {etype} has no edges in the graph the model was trained on")
        rid = self.relations.index(etype)
        reverse = relation.src != relation.dst and self.heads[etype] != relation.src
        if self.model.use_inverse_triples:  # PyKEEN stores relation r as 2r, its inverse as 2r + 1
            return 2 * rid + int(reverse), False
        return rid, reverse

    def block(self, src: np.ndarray, dst: np.ndarray, relation: Relation) -> np.ndarray:
        """len(src) x len(dst) float32 scores f(src[i], r, dst[j]) (higher: more plausible)."""
        import torch

        rid, reverse = self._query(relation)
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        out = np.empty((len(src), len(dst)), dtype=np.float32)
        rows = max(1, SCORE_FLOATS // max(1, len(dst) * 2 * int(self.options["embedding_dim"])))
        others = torch.as_tensor(dst)
        self.model.eval()
        with torch.inference_mode():
            for lo in range(0, len(src), rows):
                s = torch.as_tensor(src[lo : lo + rows])
                r = torch.full_like(s, rid)
                # score_t / score_h with the internal relation id: predict_t would map r -> 2r again
                scores = (self.model.score_h(torch.stack([r, s], 1), heads=others) if reverse
                          else self.model.score_t(torch.stack([s, r], 1), tails=others))
                out[lo : lo + len(s)] = scores.numpy()
        return out

    def pairs(self, src: np.ndarray, dst: np.ndarray, relation: Relation) -> np.ndarray:
        """float32 score of each pair (src[i], dst[i]), as ``block`` scores it."""
        import torch

        rid, reverse = self._query(relation)
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        h, t = (dst, src) if reverse else (src, dst)
        hrt = torch.as_tensor(np.column_stack([h, np.full(len(h), rid), t]).reshape(-1, 3))
        self.model.eval()
        with torch.inference_mode():
            return np.concatenate([self.model.score_hrt(hrt[i : i + 65536]).numpy().ravel()
                                   for i in range(0, len(hrt), 65536)] + [np.zeros(0, np.float32)]).astype(np.float32)

    def scorer(self, space) -> Callable:
        """Discovery's Scorer over ``space`` (a CandidateSpace): a block's S sources x all ``space.dst``."""
        return lambda block: self.block(block.src, space.dst, space.relation)


def fit_kge(graph: KG, options: Mapping | None = None, callbacks=None) -> KGEModel:
    """Train ``options["model"]`` on every edge of ``graph`` (module docstring; ``DEFAULTS``);
    ``callbacks``: PyKEEN ``TrainingCallback``s (e.g. a check of validation AUC per epoch)."""
    _require_pykeen()
    import torch
    from pykeen.models import ComplEx, RotatE
    from pykeen.training import SLCWATrainingLoop
    from pykeen.triples import CoreTriplesFactory

    o = options_of(options)
    # PyKEEN sets its logger to INFO on import: a line per embedding, factory and sampler built,
    # noise in a sweep's log; its warnings stay
    if logging.getLogger("pykeen").level == logging.INFO:
        logging.getLogger("pykeen").setLevel(logging.WARNING)
    mapped, relations, heads = triples(graph)
    if len(mapped) == 0:
        raise DataError("kge: the graph has no edges to train on")
    factory = CoreTriplesFactory(torch.as_tensor(mapped), num_entities=graph.num_nodes,
                                 num_relations=len(relations), create_inverse_triples=bool(o["inverse_triples"]))
    threads = torch.get_num_threads()
    torch.set_num_threads(int(o["threads"]))
    # PyKEEN's loop runs a full gc.collect() after every epoch: ~1 s each over this process's heap
    # (hygrail, polars, torch, transformers imported); 20 epochs of the test KG took 23.8 s, 1.0 s
    # with the objects that exist now frozen out of every collection.
    gc.freeze()
    try:
        t0 = time.perf_counter()
        cls = {"complex": ComplEx, "rotate": RotatE}[o["model"]]
        model = cls(triples_factory=factory, embedding_dim=int(o["embedding_dim"]), random_seed=int(o["seed"]))
        # automatic_memory_optimization off: it probes for the largest sub-batch that fits a GPU
        # by running one first; pin_memory off: nothing to pin on a CPU (PyKEEN's default warns)
        loop = SLCWATrainingLoop(model=model, triples_factory=factory,
                                 optimizer=torch.optim.Adam(model.parameters(), lr=float(o["lr"])),
                                 negative_sampler=o["negative_sampler"],
                                 negative_sampler_kwargs={"num_negs_per_pos": int(o["num_negs_per_pos"])},
                                 automatic_memory_optimization=False)
        losses = loop.train(triples_factory=factory, num_epochs=int(o["epochs"]), batch_size=int(o["batch_size"]),
                            use_tqdm=False, use_tqdm_batch=False, callbacks=callbacks,
                            pin_memory=False) if int(o["epochs"]) > 0 else []
        seconds = time.perf_counter() - t0
    finally:
        gc.unfreeze()
        torch.set_num_threads(threads)
    return KGEModel(model, relations, heads, graph.schema, o, seconds, list(losses or []))


def kge_scores(split, options: Mapping | None = None, threshold_rule: str = "max_f1"):
    """``method=kge`` (hygrail/pipeline.py ``run_kge``): val and test pairs scored by models of the
    split's graphs, mapped to [0, 1] on validation and thresholded there by ``threshold_rule``, as
    the structural heuristics are (``structural.fit_on_validation``: Platt scaling of the raw score,
    strictly increasing, so AUC and AP are the model's own)."""
    from hygrail.baselines.structural import StructuralResult, fit_on_validation
    from hygrail.thresholds import decision_threshold

    t0 = time.perf_counter()
    val, test = split.part("val"), split.part("test")
    y_val = val["label"].to_numpy()
    if len(np.unique(y_val)) < 2:
        raise DataError(f"method=kge: relation {split.relation.name} has {int(y_val.sum())} validation positives of "
                        f"{len(y_val)} hypotheses; mapping its scores to probabilities needs both classes")
    models: dict[int, KGEModel] = {}  # one model per distinct graph (two under split.graph_cut=time)
    raw = []
    for name, part in (("val", val), ("test", test)):
        graph = split.graph(name)
        if id(graph) not in models:
            models[id(graph)] = fit_kge(graph, options)
        model = models[id(graph)]
        raw.append(model.pairs(part["src"].to_numpy(), part["dst"].to_numpy(), split.relation).astype(np.float64))
    platt = fit_on_validation(raw[0][:, None], y_val, "kge")
    s_val, s_test = (platt.predict_proba(x[:, None])[:, 1] for x in raw)
    clf = platt[-1]
    weights = {"slope": float(clf.coef_[0, 0]), "intercept": float(clf.intercept_[0])}
    return StructuralResult(s_val, s_test, decision_threshold(s_val, y_val, threshold_rule), weights,
                            time.perf_counter() - t0)


def kge(graph: KG, space, options: Mapping) -> Callable:
    """Discovery's per-entity baseline factory (hygrail/discovery/entities.py ``BASELINES``): a
    model trained on ``graph``, scoring ``space``'s blocks. ``options["kge"]`` overrides
    ``DEFAULTS`` (other keys, the compatibility filter's, are not this baseline's)."""
    return fit_kge(graph, (options or {}).get("kge")).scorer(space)

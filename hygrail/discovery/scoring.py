"""Scoring a whole candidate space: the trained GNN, TSH and preferential attachment, block by block.

Each scorer maps a ``Block`` (S source nodes x all D destinations) to an S x D array of ranking
scores, higher = more promising; ``walk`` streams a space through one of them and keeps what
discovery needs: the top-K head, the top of the routed band, how many candidates fall in each
region of the band, and (retrospective evaluation only) every score.

- GNN (``GNNBlocks``): the trained model's logits (``Scorer.logit_block``: nodes encoded once,
  R-GCN's pair features by sparse products per block). Ranked by logit, not score: the float32
  score saturates at 1 and would tie the best candidates; the band is applied to the score,
  computed exactly as for the validation hypotheses it was calibrated on.
- TSH: its validation-fit classifier on the same descriptors as in ``task=run``, names compared
  by one matrix product per block.
- Preferential attachment: deg(u) * deg(v) on the training graph (the classic strong baseline of
  literature-based discovery: hubs co-occur next).

Exhaustive GNN scoring costs what the decoder costs per pair: HGT's cosine a few hundred flops
(1.5 M pairs/s measured on the 3,000-node graph), R-GCN's MLP over 406 inputs ~90k (52-97k pairs/s,
depending on the other load). At full synthetic MatKG size (1.5e8 CHM-APL pairs) that is 26-50 min
for R-GCN, so ``two_stage`` shortlists first: a surrogate fit to the model's own logits on a uniform
sample of candidates (no labels involved) ranks every pair from cheap terms (each node's mean logit
against random partners, the cosine of the encoder states, the model's pair features, computed by
blocks once and carried along with the shortlisted pairs), then the model scores the shortlist
exactly. For a cosine decoder the surrogate holds the decoder's own term (R^2 = 1.000). Region
counts then come from the uniform sample, as estimates under their own names.
bench/bench_discover.py measures the recall against exhaustive scoring (3,000 nodes: 0.996 of the
exact top-1,000 with a 2,000-pair shortlist, 1.000 from 5,000 on, R-GCN) and the full-size cost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np
import torch
from tqdm import tqdm

from hygrail.discovery.space import Block, CandidateSpace, TopK
from hygrail.triage.routing import Band, route

# Which part of the band a candidate falls in (``route``: 0 below a*, -1 inside, 1 above b*).
REGION_NAMES = {0: "auto_reject", -1: "routed", 1: "auto_accept"}


class GNNBlocks:
    """The trained triage model over blocks: logits (ranking) and scores (the band)."""

    def __init__(self, scorer, space: CandidateSpace):
        self.scorer, self.space = scorer, space
        backbone = scorer.backbone
        self.features = backbone.block_features(scorer.kg, space.dst) if backbone.pair_features is not None else None

    def __call__(self, block: Block) -> np.ndarray:
        return self.scorer.logit_block(block.src, self.space.dst, self.features)

    def probability(self, logits: np.ndarray) -> np.ndarray:
        return self.scorer.probability(logits)

    def pairs(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Logits of a list of pairs (the shortlist of ``two_stage``)."""
        return self.scorer.logits(src, dst)


class PreferentialAttachment:
    """deg(u) * deg(v) on ``kg`` (all edge types): exact integers in float64, so ties are exact."""

    def __init__(self, kg, space: CandidateSpace):
        self.deg = kg.degree.astype(np.float64)
        self.dst_deg = self.deg[space.dst]

    def __call__(self, block: Block) -> np.ndarray:
        return self.deg[block.src][:, None] * self.dst_deg[None, :]


class TSHBlocks:
    """Baseline TSH fit on the split's validation hypotheses (as in ``task=run``), scoring blocks."""

    def __init__(self, split, cfg: Mapping, space: CandidateSpace):
        from hygrail.baselines import tsh
        from hygrail.names import embed_names

        self.tsh, self.cfg, self.space, self.graph = tsh, dict(cfg), space, split.train_graph
        self.model, _ = tsh.fit_on_validation(split, self.cfg)
        if self.cfg.get("embedding", True):  # each side's names encoded once, in one batch (then cached)
            for ids in (space.src, space.dst):
                embed_names([self.graph.names[i] for i in ids], str(self.cfg["embedding_model"]))

    def __call__(self, block: Block) -> np.ndarray:
        from hygrail.descriptors import block_features

        feats = block_features(self.graph, block.src, self.space.dst, self.cfg)
        return self.tsh.score_pairs(self.model, feats).reshape(len(block.src), len(self.space.dst))


@dataclass
class Walk:
    """What a walk over a candidate space kept."""

    head: TopK  # the best top_k candidates by ranking score
    routed: TopK | None = None  # the best candidates inside the band (a* <= score <= b*)
    counts: dict[str, int] = field(default_factory=dict)  # candidates per band region (whole space)
    scores: np.ndarray | None = None  # every candidate's ranking score in walk order (keep=True)
    estimated: bool = False  # counts come from a uniform sample (two_stage), not from every pair
    info: dict[str, float] = field(default_factory=dict)  # two_stage's figures (sample, shortlist, fit)


def walk(space: CandidateSpace, score: Callable[[Block], np.ndarray], top_k: int, seed: int, block_pairs: int,
         band: Band | None = None, probability: Callable | None = None, routed_k: int = 0, keep: bool = False,
         desc: str = "score") -> Walk:
    """Stream every candidate through ``score``; with a ``band`` (and the ``probability`` that maps
    ranking scores to the scores it was calibrated on) also count each region and keep the
    ``routed_k`` best routed candidates."""
    out = Walk(TopK(top_k, seed), TopK(routed_k, seed) if band is not None and routed_k > 0 else None)
    counts = dict.fromkeys(REGION_NAMES.values(), 0)
    kept = []
    size = space.block_size(block_pairs)
    with tqdm(total=space.size, desc=desc, unit="pair", unit_scale=True, leave=False) as bar:
        for block in space.blocks(size):
            s, extra = score(block), None
            if isinstance(s, tuple):  # (scores, per-pair values the head carries along)
                s, extra = s
            out.head.push(s, block.valid, block.src, space.dst, extra)
            if band is not None:
                r = route(probability(s), band)
                for code, name in REGION_NAMES.items():
                    counts[name] += int((block.valid & (r == code)).sum())
                if out.routed is not None:
                    out.routed.push(s, block.valid & (r == -1), block.src, space.dst)
            if keep:
                kept.append(s[block.valid].astype(np.float64))
            bar.update(int(block.valid.sum()))
    out.counts = counts if band is not None else {}
    out.scores = np.concatenate(kept) if keep else None
    return out


# -- two-stage scoring ------------------------------------------------------------------------------
def two_stage(gnn: GNNBlocks, space: CandidateSpace, top_k: int, seed: int, block_pairs: int, shortlist: int,
              band: Band, routed_k: int = 0, sample: int = 100_000, partners: int = 16) -> Walk:
    """Surrogate over every candidate, the model on the ``shortlist`` best of them (module docstring).

    The surrogate is a least-squares fit of the model's logits on a uniform sample of ``sample``
    candidates, over: each endpoint's mean logit against ``partners`` random nodes of the other
    type, the cosine of the endpoints' encoder states, and the model's pair features (if it reads
    any). Band region counts are the sample's shares times the space size (``estimated``)."""
    rng = np.random.default_rng(seed)
    clock = time.perf_counter()
    scorer = gnn.scorer
    rel = space.relation
    z_src = torch.nn.functional.normalize(scorer.states(space.src, rel.src).float(), dim=-1).numpy()
    z_dst = torch.nn.functional.normalize(scorer.states(space.dst, rel.dst).float(), dim=-1).numpy()
    m_src = _mean_logit(gnn, space.src, space.dst, partners, rng, other_is_dst=True)
    m_dst = _mean_logit(gnn, space.dst, space.src, partners, rng, other_is_dst=False)
    src_row = np.full(scorer.kg.num_nodes, -1, dtype=np.int64)
    src_row[space.src] = np.arange(len(space.src))

    # The uniform sample: exact logits (fit targets and the region estimates).
    s_i, d_j = _sample_candidates(space, min(sample, space.size), rng)
    exact = gnn.pairs(space.src[s_i], space.dst[d_j])
    feats = _pair_feats(gnn, space.src[s_i], space.dst[d_j])
    x = _design(m_src[s_i], m_dst[d_j], np.einsum("ij,ij->i", z_src[s_i], z_dst[d_j]), feats)
    coef, *_ = np.linalg.lstsq(x, exact, rcond=None)
    fit_r2 = 1 - np.var(exact - x @ coef) / max(np.var(exact), 1e-12)

    def surrogate(block: Block) -> np.ndarray:
        rows = src_row[block.src]
        cos = z_src[rows] @ z_dst.T
        f = gnn.features(block.src) if gnn.features is not None else None
        n_s, n_d = cos.shape
        lin = coef[0] * m_src[rows][:, None] + coef[1] * m_dst[None, :] + coef[2] * cos + coef[-1]
        if f is None:
            return lin
        # the shortlist keeps each pair's features: the model needs them again in stage two
        return lin + (f.reshape(n_s * n_d, -1).astype(np.float64) @ coef[3:-1]).reshape(n_s, n_d), f

    fit_seconds, clock = time.perf_counter() - clock, time.perf_counter()
    short = walk(space, surrogate, shortlist, seed, block_pairs, desc="shortlist")
    walk_seconds, clock = time.perf_counter() - clock, time.perf_counter()
    s_src, s_dst = short.head.src, short.head.dst
    s_logit = scorer.logits(s_src, s_dst, features=short.head.extra)
    out = Walk(TopK(top_k, seed), TopK(routed_k, seed) if routed_k > 0 else None, estimated=True)
    out.head.add(s_logit, s_src, s_dst)
    r_short = route(gnn.probability(s_logit.astype(np.float32)), band)
    if out.routed is not None:
        sel = r_short == -1
        out.routed.add(s_logit[sel], s_src[sel], s_dst[sel])
    r_sample = route(gnn.probability(exact.astype(np.float32)), band)
    out.counts = {name: int(round(np.mean(r_sample == code) * space.size)) for code, name in REGION_NAMES.items()}
    out.info = {"shortlist": float(len(s_src)), "sample": float(len(exact)), "surrogate_r2": float(fit_r2),
                "partners": float(partners), "fit_seconds": fit_seconds, "walk_seconds": walk_seconds,
                "rescore_seconds": time.perf_counter() - clock}
    return out


def _design(m_s: np.ndarray, m_d: np.ndarray, cos: np.ndarray, feats: np.ndarray | None) -> np.ndarray:
    cols = [m_s, m_d, cos] + ([] if feats is None else list(feats.T.astype(np.float64))) + [np.ones(len(m_s))]
    return np.column_stack(cols)


def _pair_feats(gnn: GNNBlocks, src: np.ndarray, dst: np.ndarray) -> np.ndarray | None:
    if gnn.features is None:
        return None
    return gnn.scorer.backbone.pair_features(gnn.scorer.kg, src, dst)


def _mean_logit(gnn: GNNBlocks, nodes: np.ndarray, others: np.ndarray, k: int, rng, other_is_dst: bool) -> np.ndarray:
    """Each node's mean logit against ``k`` random nodes of the other type (observed pairs included:
    a node's level, not a candidate's score)."""
    mate = others[rng.integers(0, len(others), (len(nodes), k))].ravel()
    mine = np.repeat(nodes, k)
    logits = gnn.pairs(mine, mate) if other_is_dst else gnn.pairs(mate, mine)
    return logits.reshape(len(nodes), k).mean(1)


def _sample_candidates(space: CandidateSpace, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """n distinct uniform candidates as (row in space.src, row in space.dst)."""
    n_d = len(space.dst)
    picked = np.zeros(0, dtype=np.int64)
    while len(picked) < n:
        draw = rng.integers(0, len(space.src) * n_d, 2 * (n - len(picked)) + 64)
        i, j = draw // n_d, draw % n_d
        ok = space.contains(space.src[i], space.dst[j])
        if space.same_type:
            ok &= space.src[i] < space.dst[j]
        picked = np.unique(np.concatenate([picked, draw[ok]]))
    picked = rng.permutation(picked)[:n]
    return picked // n_d, picked % n_d

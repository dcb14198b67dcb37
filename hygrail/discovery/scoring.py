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
- Preferential attachment: deg(u) * deg(v) on the cut graph (the classic strong baseline of
  literature-based discovery: hubs co-occur next).

Exhaustive GNN scoring costs what the decoder costs per pair: HGT's cosine a few hundred flops
(1.5 M pairs/s measured on the 3,000-node graph), R-GCN's MLP over 406 inputs ~90k (52-97k pairs/s,
depending on the other load). At full synthetic MatKG size (1.5e8 CHM-APL pairs) that is 26-50 min
for R-GCN, so ``two_stage`` shortlists first: a surrogate fit to the model's own logits on a uniform
sample of candidates (no labels involved) ranks every pair from cheap terms (each node's mean logit
against random partners, the cosine of the encoder states, the model's pair features, computed by
blocks once and carried along with the shortlisted pairs), then the model scores the shortlist
exactly. For a cosine decoder the surrogate holds the decoder's own term (R^2 = 1.000). Region
counts then come from the uniform sample, as estimates under their own names. A plus backbone
whose validation head reads TSH's descriptors (``HeadPairs``) is fit in stage one on its link
features and the cosine of the names' embeddings only (``GNNBlocks.cheap``): on the whole HPO graph
the descriptors cost 0.41 s a 14 x 18,387 block against 0.069 s for the link features (measured
2026-12-03, one thread, a loaded box), i.e. ~6 min of a walk over 2.3e8 pairs; stage two computes
them for the shortlist only.
bench/bench_discover.py measures the recall against exhaustive scoring (3,000 nodes: 0.996 of the
exact top-1,000 with a 2,000-pair shortlist, 1.000 from 5,000 on, R-GCN; the whole HPO graph, 2.3e8
candidates: 0.999 for rgcn_plus, and 0.995 of each disease's best 20; 162 s, 2.33 GB) and the
full-size cost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np
import torch
from tqdm import tqdm

from hygrail.discovery.space import Block, CandidateSpace, TopK, ranking
from hygrail.triage.backbones import HeadPairs
from hygrail.triage.features import LinkBlocks, link_blocks, link_feature_names, link_features
from hygrail.triage.routing import Band, route

# Which part of the band a candidate falls in (``route``: 0 below a*, -1 inside, 1 above b*).
REGION_NAMES = {0: "auto_reject", -1: "routed", 1: "auto_accept"}


class GNNBlocks:
    """The trained triage model over blocks: logits (ranking) and scores (the band).

    Pair lists (``pairs``: two-stage's sample and shortlist, per-entity queries) get the plus
    backbones' link features by blocks of their sources (``link_by_source``): ``link_features``
    computes them one source at a time when few of a source's partners are asked for: 2.5 ms a
    pair against 0.2 ms by source blocks, for 2,000 uniform random pairs on the whole HPO graph.
    ``cheap``: the block features two stages read in stage one: the link features without the
    validation head's TSH descriptors (``HeadPairs``), ~6 times cheaper per block there (module
    docstring); the shortlist gets the rest (``HeadPairs.extra``) pair by pair."""

    def __init__(self, scorer, space: CandidateSpace, block_pairs: int = 1 << 18):
        self.scorer, self.space, self.block_pairs = scorer, space, int(block_pairs)
        backbone = scorer.backbone
        self.features = backbone.block_features(scorer.kg, space.dst) if backbone.pair_features is not None else None
        self.head_pairs = backbone.pair_features if isinstance(backbone.pair_features, HeadPairs) else None
        self.by_source = self.head_pairs is not None or backbone.pair_features is link_features
        self.cheap = LinkBlocks(scorer.kg, space.dst) if self.head_pairs is not None else self.features
        self._names_dst = None

    def __call__(self, block: Block) -> np.ndarray:
        return self.scorer.logit_block(block.src, self.space.dst, self.features)

    def probability(self, logits: np.ndarray) -> np.ndarray:
        return self.scorer.probability(logits)

    def pairs(self, src: np.ndarray, dst: np.ndarray, cheap: np.ndarray | None = None) -> np.ndarray:
        """Logits of a list of pairs (two-stage's sample and shortlist, an entity's candidates);
        ``cheap``: their ``cheap`` features if already computed (stage one carries them)."""
        if not self.by_source:
            return self.scorer.logits(src, dst, features=cheap)
        return self.scorer.logits(src, dst, features=self.pair_features(src, dst, cheap))

    def cheap_pairs(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray | None:
        """``cheap`` of a list of pairs (None for a backbone without pair features)."""
        if self.by_source:
            return link_by_source(self.scorer.kg, src, dst, self.block_pairs)
        return None if self.features is None else self.scorer.backbone.pair_features(self.scorer.kg, src, dst)

    def pair_features(self, src: np.ndarray, dst: np.ndarray, cheap: np.ndarray | None = None) -> np.ndarray:
        """The backbone's ``pair_features`` of the pairs (plus backbones): the link part by source
        blocks (or ``cheap``, given), then the head's ``extra`` columns."""
        link = link_by_source(self.scorer.kg, src, dst, self.block_pairs) if cheap is None else cheap
        return link if self.head_pairs is None else np.hstack([link, self.extra(src, dst)]).astype(np.float32)

    def extra(self, src: np.ndarray, dst: np.ndarray, chunk: int = 1 << 15) -> np.ndarray:
        """``HeadPairs.extra`` in chunks of pairs sorted by source (the name similarity stacks two
        embeddings per pair: 200 MB a chunk)."""
        out = np.zeros((len(src), self.head_pairs.width), dtype=np.float32)
        order = np.argsort(src, kind="stable")  # TSH's descriptors cost per distinct source of a call
        for lo in range(0, len(src), chunk):
            at = order[lo : lo + chunk]
            out[at] = self.head_pairs.extra(self.scorer.kg, src[at], dst[at])
        return out

    def name_cosine(self, src: np.ndarray, dst: np.ndarray | None = None) -> np.ndarray | None:
        """Cosine of the entity names' embeddings, as the plus decoders read it (the node inputs' last
        ``name_dim`` columns; None without names): of src[i] x dst[j] (S x D, ``dst`` None: the
        space's) or, with ``dst`` given, of the pairs (src[i], dst[i])."""
        k = getattr(self.scorer.backbone, "name_dim", 0)
        if not k or self.features is None:
            return None
        graph, rel = self.scorer.module.graph, self.space.relation
        names = lambda nodes, t: graph[t].x[graph.local_index[torch.as_tensor(nodes)], -k:].numpy()
        if dst is not None:
            return np.einsum("ij,ij->i", names(src, rel.src), names(dst, rel.dst)).astype(np.float64)
        if self._names_dst is None:
            self._names_dst = np.ascontiguousarray(names(self.space.dst, rel.dst).T)
        return (names(src, rel.src) @ self._names_dst).astype(np.float64)


def link_by_source(kg, src: np.ndarray, dst: np.ndarray, block_pairs: int = 1 << 18) -> np.ndarray:
    """``link_features`` of the pairs (src[i], dst[i]), from ``link_blocks`` over blocks of their
    sources x the partners those sources are asked about (at most ~``block_pairs`` cells a block),
    read at the pairs: the same products, entry for entry, at the cost of the blocks."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    out = np.zeros((len(src), len(link_feature_names(kg))), dtype=np.float32)
    if not len(src):
        return out
    order = np.argsort(src, kind="stable")
    sources, first, per = np.unique(src[order], return_index=True, return_counts=True)
    n_dst = len(np.unique(dst))
    lo = 0
    while lo < len(sources):  # sources x min(their pairs, distinct partners) <= block_pairs (at least one source)
        hi, pairs = lo + 1, int(per[lo])
        while hi < len(sources) and (hi + 1 - lo) * min(pairs + int(per[hi]), n_dst) <= block_pairs:
            pairs += int(per[hi])
            hi += 1
        sel = order[first[lo] : first[lo] + pairs]
        targets, col = np.unique(dst[sel], return_inverse=True)
        row = np.searchsorted(sources[lo:hi], src[sel])
        out[sel] = link_blocks(kg, sources[lo:hi], targets)[row, col]
        lo = hi
    return out


class PreferentialAttachment:
    """deg(u) * deg(v) on ``kg`` (all edge types): exact integers in float64, so ties are exact."""

    def __init__(self, kg, space: CandidateSpace):
        self.deg = kg.degree.astype(np.float64)
        self.dst_deg = self.deg[space.dst]

    def __call__(self, block: Block) -> np.ndarray:
        return self.deg[block.src][:, None] * self.dst_deg[None, :]


class TSHBlocks:
    """Baseline TSH fit on the split's validation hypotheses (as in ``task=run``, descriptors from the
    training graph), scoring blocks with descriptors read from the candidate space's graph (the cut
    graph: everything known at the cutoff)."""

    def __init__(self, split, cfg: Mapping, space: CandidateSpace):
        from hygrail.baselines import tsh
        from hygrail.names import embed_names

        self.tsh, self.cfg, self.space, self.graph = tsh, dict(cfg), space, space.kg
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
    lists: "Lists | None" = None  # every source's best candidates (``lists`` > 0)


@dataclass
class Lists:
    """Every source's best candidates by ranking score: (src, dst, score, rank from 0) sorted by
    source, then as every ranking of discovery (``space.ranking``: score descending, ties by the
    seeded pair hash)."""

    src: np.ndarray
    dst: np.ndarray
    score: np.ndarray
    rank: np.ndarray

    @classmethod
    def best(cls, src: np.ndarray, dst: np.ndarray, score: np.ndarray, k: int, seed: int) -> "Lists":
        order = ranking(score, src, dst, seed)
        order = order[np.argsort(src[order], kind="stable")]
        src, dst, score = src[order], dst[order], score[order]
        first = np.r_[0, np.flatnonzero(np.diff(src)) + 1]
        rank = np.arange(len(src)) - np.repeat(first, np.diff(np.r_[first, len(src)]))
        keep = rank < k
        return cls(src[keep], dst[keep], score[keep], rank[keep])


class PerSource:
    """Each source's ``k`` best pairs by a block scorer, collected while ``walk`` streams the blocks
    through it (``__call__`` passes the scores on), with the per-pair values the scorer carries."""

    def __init__(self, score: Callable[[Block], np.ndarray], k: int):
        self.score, self.k, self.parts = score, int(k), []

    def __call__(self, block: Block):
        out = self.score(block)
        s, extra = out if isinstance(out, tuple) else (out, None)
        masked = np.where(block.valid, s, -np.inf)
        k = min(self.k, s.shape[1])
        cols = np.argpartition(-masked, k - 1, axis=1)[:, :k].ravel()
        rows = np.repeat(np.arange(len(block.src)), k)
        keep = np.isfinite(masked[rows, cols])
        rows, cols = rows[keep], cols[keep]
        self.parts.append((block.src[rows], cols, masked[rows, cols], None if extra is None else extra[rows, cols]))
        return out

    def pairs(self, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """(src, dst, score, extra) of every kept pair."""
        if not self.parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), None
        src, cols, score, extra = (list(x) for x in zip(*self.parts))
        return (np.concatenate(src), dst[np.concatenate(cols)], np.concatenate(score),
                None if extra[0] is None else np.concatenate(extra))


def walk(space: CandidateSpace, score: Callable[[Block], np.ndarray], top_k: int, seed: int, block_pairs: int,
         band: Band | None = None, probability: Callable | None = None, routed_k: int = 0, keep: bool = False,
         desc: str = "score", lists: int = 0, keep_dtype=np.float64) -> Walk:
    """Stream every candidate through ``score``; with a ``band`` (and the ``probability`` that maps
    ranking scores to the scores it was calibrated on) also count each region and keep the
    ``routed_k`` best routed candidates; ``lists``: also every source's ``lists`` best; ``keep``:
    every score in walk order, as ``keep_dtype`` (float32 for the GNN's float32 logits: 0.23 GB
    less at 5.7e7 candidates; float64 for counts, which float32 would round past 2^24)."""
    out = Walk(TopK(top_k, seed), TopK(routed_k, seed) if band is not None and routed_k > 0 else None)
    rows = PerSource(score, lists) if lists > 0 else None
    score = rows or score
    counts = dict.fromkeys(REGION_NAMES.values(), 0)
    kept, at = (np.empty(space.size, dtype=keep_dtype) if keep else None), 0
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
            if keep:  # filled in place: a list of blocks then concatenated doubled the peak at 5.7e7 candidates
                n = int(block.valid.sum())
                kept[at:at + n] = s[block.valid]
                at += n
            bar.update(int(block.valid.sum()))
    out.counts = counts if band is not None else {}
    out.scores = kept
    if rows is not None:
        src, dst, s, _ = rows.pairs(space.dst)
        out.lists = Lists.best(src, dst, s, lists, seed)
    return out


# -- two-stage scoring ------------------------------------------------------------------------------
@dataclass
class Surrogate:
    """A least-squares fit of the model's logits on a uniform sample of candidates (``fit_surrogate``);
    called on a block, the S x D surrogate scores and (for a backbone with pair features) the block's
    ``cheap`` features, which the shortlist carries to stage two."""

    gnn: GNNBlocks
    coef: np.ndarray
    m_src: np.ndarray  # each source's mean logit against random partners (a row of space.src each)
    m_dst: np.ndarray
    z_src: np.ndarray  # unit encoder states
    z_dst: np.ndarray
    src_row: np.ndarray  # node id -> row in space.src
    names: bool  # the design has the names' cosine
    exact: np.ndarray  # the sample's exact logits (the fit's targets; region estimates)
    r2: float

    def __call__(self, block: Block):
        gnn, coef = self.gnn, self.coef
        rows = self.src_row[block.src]
        cos = self.z_src[rows] @ self.z_dst.T
        n_s, n_d = cos.shape
        lin = coef[0] * self.m_src[rows][:, None] + coef[1] * self.m_dst[None, :] + coef[2] * cos + coef[-1]
        if self.names:
            lin += coef[3] * gnn.name_cosine(block.src)
        f = gnn.cheap(block.src) if gnn.cheap is not None else None
        if f is None:
            return lin
        at = 4 if self.names else 3  # where the pair features' coefficients start
        return lin + (f.reshape(n_s * n_d, -1).astype(np.float64) @ coef[at:-1]).reshape(n_s, n_d), f


def fit_surrogate(gnn: GNNBlocks, space: CandidateSpace, rng, sample: int = 100_000, partners: int = 16) -> Surrogate:
    """The surrogate of ``two_stage``, fit on ``sample`` uniform candidates, over: each endpoint's mean
    logit against ``partners`` random nodes of the other type, the cosine of the endpoints' encoder
    states, the cosine of their names' embeddings (plus backbones) and the model's ``cheap`` pair
    features (if it reads any)."""
    scorer, rel = gnn.scorer, space.relation
    z_src = torch.nn.functional.normalize(scorer.states(space.src, rel.src).float(), dim=-1).numpy()
    z_dst = torch.nn.functional.normalize(scorer.states(space.dst, rel.dst).float(), dim=-1).numpy()
    # Each endpoint's partners for its mean logit, and the uniform sample (exact logits: the fit's
    # targets and the region estimates), scored in one list: the plus head's descriptors cost per
    # distinct source, and every list holds nearly every source.
    mate_of_src = space.dst[rng.integers(0, len(space.dst), (len(space.src), partners))].ravel()
    mate_of_dst = space.src[rng.integers(0, len(space.src), (len(space.dst), partners))].ravel()
    s_i, d_j = _sample_candidates(space, min(sample, space.size), rng)
    all_src = np.concatenate([np.repeat(space.src, partners), mate_of_dst, space.src[s_i]])
    all_dst = np.concatenate([mate_of_src, np.repeat(space.dst, partners), space.dst[d_j]])
    all_cheap = gnn.cheap_pairs(all_src, all_dst)
    logits = gnn.pairs(all_src, all_dst, cheap=all_cheap)
    n_s, n_d = len(space.src) * partners, len(space.dst) * partners
    m_src = logits[:n_s].reshape(len(space.src), partners).mean(1)  # observed pairs included: a node's level
    m_dst = logits[n_s : n_s + n_d].reshape(len(space.dst), partners).mean(1)
    exact, feats = logits[n_s + n_d :], None if all_cheap is None else all_cheap[n_s + n_d :]
    src_row = np.full(scorer.kg.num_nodes, -1, dtype=np.int64)
    src_row[space.src] = np.arange(len(space.src))
    names = gnn.name_cosine(space.src[s_i], space.dst[d_j])
    x = _design(m_src[s_i], m_dst[d_j], np.einsum("ij,ij->i", z_src[s_i], z_dst[d_j]), names, feats)
    coef, *_ = np.linalg.lstsq(x, exact, rcond=None)
    r2 = 1 - np.var(exact - x @ coef) / max(np.var(exact), 1e-12)
    return Surrogate(gnn, coef, m_src, m_dst, z_src, z_dst, src_row, names is not None, exact, float(r2))


def two_stage(gnn: GNNBlocks, space: CandidateSpace, top_k: int, seed: int, block_pairs: int, shortlist: int,
              band: Band, routed_k: int = 0, sample: int = 100_000, partners: int = 16, lists: int = 0,
              lists_shortlist: int = 0) -> Walk:
    """Surrogate over every candidate (``fit_surrogate``), the model on the ``shortlist`` best of them
    (module docstring). Band region counts are the sample's shares times the space size (``estimated``).

    ``lists``: every source's ``lists`` best candidates too, by the model's logits over the source's
    ``lists_shortlist`` best by the surrogate (at least ``lists``). Within a source row the surrogate
    ranks well where across rows it does not: on the whole HPO graph (rgcn_plus, 160 random diseases)
    the exact best candidate of a row was the surrogate's 0th-11th, the exact top 5 its 0th-72nd, and
    with 100 rescored per disease 0.995 of each disease's exact best 20 were found
    (bench/bench_discover.py)."""
    rng = np.random.default_rng(seed)
    clock = time.perf_counter()
    surrogate = fit_surrogate(gnn, space, rng, sample, partners)
    fit_seconds, clock = time.perf_counter() - clock, time.perf_counter()
    rows = PerSource(surrogate, max(lists, lists_shortlist)) if lists > 0 else None
    short = walk(space, rows or surrogate, shortlist, seed, block_pairs, desc="shortlist")
    walk_seconds, clock = time.perf_counter() - clock, time.perf_counter()
    s_src, s_dst = short.head.src, short.head.dst
    s_logit = gnn.pairs(s_src, s_dst, cheap=short.head.extra)
    rescore_seconds, clock = time.perf_counter() - clock, time.perf_counter()
    out = Walk(TopK(top_k, seed), TopK(routed_k, seed) if routed_k > 0 else None, estimated=True)
    out.head.add(s_logit, s_src, s_dst)
    r_short = route(gnn.probability(s_logit.astype(np.float32)), band)
    if out.routed is not None:
        sel = r_short == -1
        out.routed.add(s_logit[sel], s_src[sel], s_dst[sel])
    exact = surrogate.exact
    r_sample = route(gnn.probability(exact.astype(np.float32)), band)
    out.counts = {name: int(round(np.mean(r_sample == code) * space.size)) for code, name in REGION_NAMES.items()}
    out.info = {"shortlist": float(len(s_src)), "sample": float(len(exact)), "surrogate_r2": surrogate.r2,
                "partners": float(partners), "fit_seconds": fit_seconds, "walk_seconds": walk_seconds,
                "rescore_seconds": rescore_seconds}
    if rows is not None:  # each row's surrogate shortlist through the model (its cheap features carried)
        clock = time.perf_counter()
        r_src, r_dst, _, r_extra = rows.pairs(space.dst)
        out.lists = Lists.best(r_src, r_dst, gnn.pairs(r_src, r_dst, cheap=r_extra), lists, seed)
        out.info |= {"lists_rescored": float(len(r_src)), "lists_seconds": time.perf_counter() - clock}
    return out


def _design(m_s: np.ndarray, m_d: np.ndarray, cos: np.ndarray, names: np.ndarray | None,
            feats: np.ndarray | None) -> np.ndarray:
    cols = [m_s, m_d, cos] + ([] if names is None else [names]) + \
        ([] if feats is None else list(feats.T.astype(np.float64))) + [np.ones(len(m_s))]
    return np.column_stack(cols)


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

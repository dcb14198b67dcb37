"""The candidate space of a hypothesis relation and the bounded top-K kept while streaming over it.

A relation's candidates are every typed pair (u, v) of its two node types that is not an edge of
the graph: the Cartesian product minus the observed edges (any edge between the two types is an
edge of the relation), for a same-type relation the unordered pairs u < v without self-pairs. Only
*known* nodes take part: nodes with at least one edge in the graph (with a cutoff, an entity first
mentioned after it does not exist yet for the method; ``data.split.known_nodes``, the nodes the
split draws its negatives from). Pairs that are true without being edges (``KG.excluded``: undated
edges a cutoff withholds, pairs an ontology's true-path rule implies) are not candidates either.
At full synthetic MatKG size CHM-APL has 15,424 x 9,777 = 1.5e8 pairs, so the space is never materialised: it is walked in blocks of source
nodes (each block an S x D array over all destinations plus a validity mask), and each ranking
keeps only its best K pairs (``TopK``).

Ties are broken by a seeded hash of the pair, not by node id or block order: the degree product
has many exact ties, and breaking them by id would make precision@K depend on how the KG file
happened to number its nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from hygrail.data.split import candidate_pairs, excluded_pairs, known_nodes
from hygrail.kg import KG, Relation


@dataclass(frozen=True)
class Block:
    src: np.ndarray  # (S,) source node ids
    valid: np.ndarray  # (S, D) bool: the pair is a candidate (not observed; u < v for same-type relations)


class CandidateSpace:
    """Candidates of ``relation`` on ``kg`` (known nodes only), walked in blocks of source nodes."""

    def __init__(self, kg: KG, relation: Relation):
        self.kg, self.relation = kg, relation
        self.src, self.dst = known_nodes(kg, relation.src), known_nodes(kg, relation.dst)
        self.same_type = relation.src == relation.dst
        self.excluded = excluded_pairs(kg, relation)
        # an edge's two ends are known nodes, so every edge of the relation is inside the known product
        self.size = candidate_pairs(kg, relation, known=True) - kg.relation_edges(relation).height - self.excluded

    def blocks(self, block_size: int) -> Iterator[Block]:
        """Blocks of ``block_size`` source nodes over all destinations, in source order."""
        for lo in range(0, len(self.src), block_size):
            yield self.block(self.src[lo : lo + block_size])

    def block(self, src: np.ndarray) -> Block:
        """The candidates of the given source nodes (known ones) over all destinations."""
        valid = self.kg.adjacency[src][:, self.dst].toarray() == 0
        if (excluded := self.kg.excluded_block(src, self.dst)) is not None:
            valid &= ~excluded
        if self.same_type:  # each unordered pair once, as (smaller id, larger id)
            valid &= src[:, None] < self.dst[None, :]
        return Block(src, valid)

    def pairs(self, block_size: int = 1 << 18, dtype=None) -> tuple[np.ndarray, np.ndarray]:
        """Every candidate as (src, dst) arrays in walk order (source-major, then destination), the
        order in which ``walk`` keeps scores; sorted by (src, dst), since both node lists are.
        ``dtype``: by default the smallest that holds every node id, uint16 up to 65,536 nodes (HPO:
        5.7e7 candidates at 2015 in 0.23 GB, against 0.46 as int32); search them with ``row_bounds``."""
        if dtype is None:
            dtype = np.uint16 if self.kg.num_nodes <= 1 << 16 else np.int32 if self.kg.num_nodes <= 1 << 31 else np.int64
        src, dst = np.empty(self.size, dtype=dtype), np.empty(self.size, dtype=dtype)
        at = 0
        for b in self.blocks(self.block_size(block_size)):
            n = int(b.valid.sum())
            src[at:at + n] = np.broadcast_to(b.src[:, None], b.valid.shape)[b.valid]
            dst[at:at + n] = np.broadcast_to(self.dst, b.valid.shape)[b.valid]
            at += n
        if at != self.size:
            raise RuntimeError(f"candidate space: {at} candidates walked, {self.size} counted")
        return src, dst

    def positions(self, src_all: np.ndarray, dst_all: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Walk-order positions of the pairs (src[i], dst[i]) among ``pairs()``'s (``src_all``,
        ``dst_all``), -1 where a pair is no candidate; same-type pairs in either order."""
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        if self.same_type:
            src, dst = np.minimum(src, dst), np.maximum(src, dst)
        lo, hi = row_bounds(src_all, src)
        out = np.full(len(src), -1, dtype=np.int64)
        for i in range(len(src)):  # answers and reviews: thousands, each a search within one source's row
            j = lo[i] + int(np.searchsorted(dst_all[lo[i]:hi[i]], dst[i]))
            if j < hi[i] and dst_all[j] == dst[i]:
                out[i] = j
        return out

    def contains(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Whether each (src[i], dst[i]) is a candidate of this space (oriented as the relation;
        a same-type pair in either order)."""
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        if self.same_type:
            src, dst = np.minimum(src, dst), np.maximum(src, dst)
            ok = src != dst
        else:
            ok = np.ones(len(src), dtype=bool)
        ok &= np.isin(src, self.src) & np.isin(dst, self.dst)
        return ok & ~self.kg.has_edges(src, dst) & ~self.kg.excluded(src, dst)

    def block_size(self, pairs: int) -> int:
        """Sources per block for about ``pairs`` pairs per block (at least one source)."""
        return max(1, pairs // max(1, len(self.dst)))


def row_bounds(src_all: np.ndarray, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each source's run [lo, hi) of walk-order pairs (``CandidateSpace.pairs``'s ``src_all``, source-major),
    searched in ``src_all``'s own dtype: numpy would copy the whole of it to the sources' int64 first
    (0.46 GB at HPO 2015). ``sources``: node ids, which that dtype holds."""
    q = np.asarray(sources).astype(src_all.dtype, copy=False)
    return np.searchsorted(src_all, q, "left"), np.searchsorted(src_all, q, "right")


def tiebreak(src: np.ndarray, dst: np.ndarray, seed: int) -> np.ndarray:
    """A seeded pseudo-random uint64 per pair (splitmix64 of the pair and the seed): ties in a
    ranking are broken by it, the same way in every block and every method."""
    with np.errstate(over="ignore"):
        x = (np.asarray(src, dtype=np.uint64) << np.uint64(32)) ^ np.asarray(dst, dtype=np.uint64)
        x = x + np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def ranking(scores: np.ndarray, src: np.ndarray, dst: np.ndarray, seed: int) -> np.ndarray:
    """Order of the pairs by score (descending), ties by ``tiebreak``."""
    return np.lexsort((tiebreak(src, dst, seed), -np.asarray(scores, dtype=np.float64)))


class TopK:
    """The ``k`` best pairs seen so far by score (descending; ties by ``tiebreak``), fed block by
    block: memory O(k + one block), whatever the size of the space. Each pair may carry a row of
    ``extra`` values (e.g. its pair features, so that a shortlist need not compute them again).

    Pairs are buffered unsorted and cut back to the best k (all ties at the cut kept, so that the
    tiebreak decides among them) whenever the buffer holds more than 2k: a full sort per block
    cost 0.1 s at k = 200,000 (two-stage shortlists), more than scoring the block."""

    def __init__(self, k: int, seed: int):
        self.k, self.seed = int(k), int(seed)
        self._parts: list[tuple[np.ndarray, ...]] = []
        self._n, self._floor, self._sorted = 0, -np.inf, None

    @property
    def floor(self) -> float:
        """A score below which nothing can enter any more (-inf until k pairs were seen)."""
        return self._floor

    def push(self, scores: np.ndarray, mask: np.ndarray, src: np.ndarray, dst: np.ndarray,
             extra: np.ndarray | None = None) -> None:
        """Offer the pairs (src[i], dst[j]) of an S x D block where ``mask`` holds (``extra``: S x D x F)."""
        rows, cols = np.nonzero(mask & (scores >= self._floor))
        self.add(scores[rows, cols], src[rows], dst[cols], None if extra is None else extra[rows, cols])

    def add(self, scores: np.ndarray, src: np.ndarray, dst: np.ndarray, extra: np.ndarray | None = None) -> None:
        """Offer a list of pairs."""
        if len(scores) == 0:
            return
        part = (np.asarray(scores, dtype=np.float64), np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64))
        self._parts.append(part + (() if extra is None else (np.asarray(extra),)))
        self._n += len(scores)
        self._sorted = None
        if self._n > 2 * self.k:
            self._cut()

    def _merged(self) -> tuple[np.ndarray, ...]:
        if len(self._parts) != 1:
            self._parts = [tuple(np.concatenate(x) for x in zip(*self._parts))] if self._parts else []
        return self._parts[0] if self._parts else (np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64))

    def _cut(self) -> None:
        merged = self._merged()
        score = merged[0]
        if len(score) > self.k:
            cut = np.partition(score, len(score) - self.k)[len(score) - self.k]  # the k-th best score
            keep = score >= cut
            self._parts = [tuple(x[keep] for x in merged)]
            self._n, self._floor = int(keep.sum()), max(self._floor, float(cut))

    def _final(self) -> tuple[np.ndarray, ...]:
        if self._sorted is None:
            merged = self._merged()
            order = ranking(merged[0], merged[1], merged[2], self.seed)[: self.k]
            self._sorted = tuple(x[order] for x in merged)
        return self._sorted

    @property
    def score(self) -> np.ndarray:
        return self._final()[0]

    @property
    def src(self) -> np.ndarray:
        return self._final()[1]

    @property
    def dst(self) -> np.ndarray:
        return self._final()[2]

    @property
    def extra(self) -> np.ndarray | None:
        final = self._final()
        return final[3] if len(final) > 3 else None

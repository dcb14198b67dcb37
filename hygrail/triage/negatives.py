"""Fresh negatives for every training step of the plus backbones (``train.FoldPairs``), drawn as PyG's
``negative_sampling`` (method ``sparse``) draws them, with the pairs never to draw sorted once.

Why: PyG's function rebuilds the taken pairs' index vector and tests the draw against it with ``np.isin``,
which sorts both arrays together, at every call. On the whole HPO graph (5.5 M taken pairs, ~1 M drawn a
fold) that was 19% of an epoch of rgcn_plus (py-spy, experiments/newcomer.md, issue #57). Here the vector
is built once per sampler, as a bitmap over the pairs (sorted, for ``np.searchsorted``, past ``BITMAP_MAX``
pairs), and a draw is looked up in it: the same membership, so the same negatives, bit for bit (tests/test_minibatch.py compares the two on one seed); the draw itself
stays PyG's (``random.sample`` through its ``sample``), so the Python RNG is consumed as before and a
resumed training (``TriageModule.on_save_checkpoint``) goes on with the same negatives.
"""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.utils._negative_sampling import edge_index_to_vector, sample, vector_to_edge_index


# Pairs up to which the taken ones are a bitmap (64 MiB at most): one lookup a draw. Whole HPO's 1.5e8
# Disease x Phenotype pairs take 18 MiB; searchsorted into its 5.5 M taken pairs cost 4% of an epoch (py-spy).
BITMAP_MAX = 1 << 29


class NegativeSampler:
    """``negative_sampling(taken, num_nodes=size, num_neg_samples=n)`` for any ``n``, ``taken`` fixed.

    ``size``: an int (one node set: no self-pairs) or (sources, destinations) (bipartite), as PyG's
    ``num_nodes``."""

    def __init__(self, taken: torch.Tensor, size: int | tuple[int, int]):
        self.bipartite = not isinstance(size, int)
        self.size = tuple(size) if self.bipartite else (size, size)
        idx, self.population = edge_index_to_vector(taken.clone(), self.size, self.bipartite)
        self.n_taken = idx.numel()  # with repeats, as PyG counts them in its over-sampling rate
        idx = idx.numpy()
        self.bits = self.sorted = None
        if self.population <= BITMAP_MAX:
            self.bits = np.zeros((self.population + 7) // 8, dtype=np.uint8)
            np.bitwise_or.at(self.bits, idx >> 3, (1 << (idx & 7)).astype(np.uint8))
        else:
            self.sorted = np.unique(idx)

    def _taken(self, rnd: np.ndarray) -> np.ndarray:
        if self.bits is not None:
            return ((self.bits[rnd >> 3] >> (rnd & 7).astype(np.uint8)) & 1).astype(bool)
        at = np.searchsorted(self.sorted, rnd).clip(max=max(len(self.sorted) - 1, 0))
        return self.sorted[at] == rnd if len(self.sorted) else np.zeros(len(rnd), dtype=bool)

    def __call__(self, n: int) -> torch.Tensor:
        """(2, <= n) negative pairs; the lines below are PyG's, but for the lookup."""
        if self.n_taken >= self.population:
            return torch.empty((2, 0), dtype=torch.long)
        prob = 1.0 - self.n_taken / self.population
        sample_size = int(1.1 * n / prob)
        neg_idx = None
        for _ in range(3):
            rnd = sample(self.population, sample_size, device="cpu")
            mask = torch.from_numpy(self._taken(rnd.numpy()))
            if neg_idx is not None:
                mask |= torch.from_numpy(np.isin(rnd, neg_idx)).bool()
            rnd = rnd[~mask]
            neg_idx = rnd if neg_idx is None else torch.cat([neg_idx, rnd])
            if neg_idx.numel() >= n:
                neg_idx = neg_idx[:n]
                break
        return vector_to_edge_index(neg_idx, self.size, self.bipartite)

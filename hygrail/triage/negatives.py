"""Fresh negatives for every training step of the plus backbones (``train.FoldPairs``), drawn as PyG's
``negative_sampling`` (method ``sparse``) draws them, with the pairs never to draw sorted once.

Why: PyG's function rebuilds the taken pairs' index vector and tests the draw against it with ``np.isin``,
which sorts both arrays together, at every call. On the whole HPO graph (4.7 M taken pairs, ~1 M drawn a
fold) that was 17.8% of an epoch of rgcn_plus (py-spy, experiments/newcomer.md, issue #57). Here the vector
is built and sorted once per sampler and a draw is looked up by ``np.searchsorted``: the same membership,
so the same negatives, bit for bit (tests/test_minibatch.py compares the two on one seed); the draw itself
stays PyG's (``random.sample`` through its ``sample``), so the Python RNG is consumed as before and a
resumed training (``TriageModule.on_save_checkpoint``) goes on with the same negatives.
"""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.utils._negative_sampling import edge_index_to_vector, sample, vector_to_edge_index


class NegativeSampler:
    """``negative_sampling(taken, num_nodes=size, num_neg_samples=n)`` for any ``n``, ``taken`` fixed.

    ``size``: an int (one node set: no self-pairs) or (sources, destinations) (bipartite), as PyG's
    ``num_nodes``."""

    def __init__(self, taken: torch.Tensor, size: int | tuple[int, int]):
        self.bipartite = not isinstance(size, int)
        self.size = tuple(size) if self.bipartite else (size, size)
        idx, self.population = edge_index_to_vector(taken.clone(), self.size, self.bipartite)
        self.n_taken = idx.numel()  # with repeats, as PyG counts them in its over-sampling rate
        self.sorted = np.unique(idx.numpy())

    def _taken(self, rnd: np.ndarray) -> np.ndarray:
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

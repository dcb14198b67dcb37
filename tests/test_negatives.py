"""The training negatives (hygrail/triage/negatives.py): PyG's draw, bit for bit, with the taken pairs sorted once."""

import random

import numpy as np
import pytest
import torch
from torch_geometric.utils import negative_sampling

from hygrail.triage.negatives import NegativeSampler, sample


def _taken(rng, n, size, repeats=True):
    rows = rng.integers(0, size[0], n)
    cols = rng.integers(0, size[1], n)
    taken = np.stack([rows, cols])
    if repeats:  # an edge that is also a split pair is listed twice, as FoldPairs lists them
        taken = np.concatenate([taken, taken[:, : n // 5]], axis=1)
    return torch.from_numpy(taken)


@pytest.mark.parametrize("size, n_taken, draws, repeats", [
    ((40, 70), 300, [50, 400, 1], True),    # bipartite (Disease x Phenotype)
    (60, 500, [200, 30], True),             # one node set: no self-pairs
    ((30, 40), 600, [8] * 40, False),       # small draws: some need PyG's second or third try
])
@pytest.mark.parametrize("lookup", ["bitmap", "sorted"])
def test_the_draws_are_pygs_bit_for_bit(size, n_taken, draws, repeats, lookup, monkeypatch):
    from hygrail.triage import negatives

    if lookup == "sorted":
        monkeypatch.setattr(negatives, "BITMAP_MAX", 0)
    tries = []
    monkeypatch.setattr(negatives, "sample", lambda *a, **k: tries.append(1) or sample(*a, **k))
    rng = np.random.default_rng(0)
    taken = _taken(rng, n_taken, size if isinstance(size, tuple) else (size, size), repeats)
    sampler = NegativeSampler(taken, size)
    assert (sampler.bits is not None) == (lookup == "bitmap")
    random.seed(7)
    ours = [sampler(n) for n in draws]
    random.seed(7)
    theirs = [negative_sampling(taken, num_nodes=size, num_neg_samples=n) for n in draws]
    for a, b in zip(ours, theirs):
        assert torch.equal(a, b)
    pairs = {tuple(p) for p in taken.T.tolist()}
    drawn = [tuple(p) for a in ours for p in a.T.tolist()]
    assert len(drawn) > 0.9 * sum(draws) and not pairs & set(drawn)  # never a taken pair
    assert len(tries) > len(draws) or repeats  # the retries ran too


def test_nothing_left_to_draw_gives_no_pairs():
    every = torch.cartesian_prod(torch.arange(3), torch.arange(4)).T.contiguous()
    out = NegativeSampler(every, (3, 4))(5)
    assert out.shape == (2, 0) and negative_sampling(every, num_nodes=(3, 4), num_neg_samples=5).shape == (2, 0)

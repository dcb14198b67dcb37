"""The shortcuts a training epoch takes (issue #57) compute what the plain computations do, bit for bit: the
name cosine in chunks, and the lean R-GCN layers keeping their means instead of recomputing them. (The
negatives: tests/test_negatives.py; the link features: tests/test_triage.py and tests/test_discover.py.)"""

import pytest
import torch

from hygrail.data.split import temporal_split
from hygrail.triage import lean, train
from hygrail.triage.backbones import name_cosine
from test_triage import FAST, planted_kg


@pytest.mark.parametrize("n", [0, 1, 4096, 10_001])
def test_name_cosine_in_chunks_is_the_whole_product(n):
    torch.manual_seed(0)
    xs, xd = torch.randn(50, 13), torch.randn(70, 13)
    ls, ld = torch.randint(0, 50, (n,)), torch.randint(0, 70, (n,))
    whole = (xs[ls, -8:] * xd[ld, -8:]).sum(-1, keepdim=True)
    got = name_cosine(xs, xd, ls, ld, 8)
    assert got.shape == (n, 1) and torch.equal(got, whole)
    assert torch.equal(name_cosine(xs, xd, ls, ld, 8, chunk=7), whole)


def test_lean_rgcn_keeping_its_means_is_recomputing_them_bit_for_bit():
    kg = planted_kg()
    split = temporal_split(kg, kg.schema.relations["chm_apl"], neg_ratio=5)
    torch.manual_seed(0)
    backbone, graph = train.build_backbone(split.train_graph, split.relation, FAST["rgcn"])
    weights = torch.randn(split.train_graph.num_nodes, FAST["rgcn"]["hidden"])
    kept = []
    forward = lean._RelationMean.forward

    def spy(ctx, x, w, edge_index, conv, keep):
        kept.append(keep)
        return forward(ctx, x, w, edge_index, conv, keep)

    def encode(keep_mb: float):
        backbone.zero_grad()
        with train.lean_rgcn(backbone, True, keep_mb=keep_mb):
            z = backbone.encode(graph)
        (z * weights).sum().backward()
        return z.detach(), {n: p.grad.clone() for n, p in backbone.named_parameters() if p.grad is not None}

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lean._RelationMean, "forward", staticmethod(spy))
        (z_kept, g_kept), (z_again, g_again) = encode(lean.KEEP_MEANS_MB), encode(0)
    n = len(kept) // 2
    assert n and all(kept[:n]) and not any(kept[n:])  # the default kept this graph's means, 0 MB none
    assert torch.equal(z_kept, z_again) and g_kept.keys() == g_again.keys() and "encoder.convs.0.comp" in g_kept
    for name in g_kept:
        assert torch.equal(g_kept[name], g_again[name]), name

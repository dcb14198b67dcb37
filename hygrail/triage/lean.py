"""R-GCN layers that hold less for their backward pass, for mini-batch training (``train.fit`` on graphs whose
full batch does not fit: ``train.batch_plan``).

Autograd on PyG's ``RGCNConv`` keeps every relation's (nodes x in) mean for the weight gradient: 2.7 GB of the
3.07 GB one R-GCN encoder forward + backward took at full synthetic MatKG size (49 relations, 2 layers, 70k
nodes). ``lean_rgcn`` runs each relation's term as ``_RelationMean``, which keeps the inputs and the relation's
edges and recomputes the mean in the backward pass: 1.52 GB there instead of 3.07 GB, and 32 s instead of 23 s
(measured once, one thread). Generic recomputation (torch.utils.checkpoint per layer or per relation) was worse
there: 4.4 to 10.0 GB.

Where a layer's means are small (``KEEP_MEANS_MB``) they are kept instead of recomputed: the same values, so the
same gradients, bit for bit (tests/test_epoch_shortcuts.py). On whole HPO (5 relations, 36k nodes, 64 hidden:
46 MB a layer) the recomputation was 37% of the encoder's backward pass, 4% of an epoch (py-spy, issue #57).
"""

from __future__ import annotations

from contextlib import contextmanager
from functools import partial
from typing import Iterator

import torch

# A layer keeps its relations' means for the backward pass when they take at most this (float32 nodes x in x
# relations): whole HPO's 46 MB are kept, the full-size synthetic MatKG's 1.3 GB recomputed.
KEEP_MEANS_MB = 256


class _RelationMean(torch.autograd.Function):
    """mean over one relation's incoming edges of ``x``, times ``w``: an ``RGCNConv`` term (PyG's own
    ``propagate`` forward, so the values are its). Keeps the mean for the backward pass if ``keep``, else
    only the inputs and the relation's edges, and recomputes it there."""

    @staticmethod
    def forward(ctx, x, w, edge_index, conv, keep):
        ctx.conv = conv
        mean = conv.propagate(edge_index, x=x, edge_type_ptr=None, size=(x.size(0), x.size(0)))
        ctx.save_for_backward(x, w, edge_index, mean if keep else None)
        return mean @ w

    @staticmethod
    def backward(ctx, grad):
        x, w, edge_index, mean = ctx.saved_tensors
        src, dst = edge_index
        if mean is None:
            mean = ctx.conv.propagate(edge_index, x=x, edge_type_ptr=None, size=(x.size(0), x.size(0)))
        grad_w = mean.t() @ grad
        del mean
        per_dst = (grad @ w.t()) / torch.bincount(dst, minlength=x.size(0)).clamp_(min=1).to(grad.dtype)[:, None]
        return torch.zeros_like(x).index_add_(0, src, per_dst.index_select(0, dst)), grad_w, None, None, None


def _lean_rgcn_forward(conv, x: torch.Tensor, edge_index: torch.Tensor, edge_type: torch.Tensor,
                       keep_mb: float = KEEP_MEANS_MB) -> torch.Tensor:
    """``RGCNConv.forward`` (float inputs, mean aggregation, no block decomposition) by ``_RelationMean`` terms."""
    from torch_geometric.nn.conv.rgcn_conv import masked_edge_index

    weight = conv.weight
    if conv.num_bases is not None:
        weight = (conv.comp @ weight.view(conv.num_bases, -1)).view(conv.num_relations, conv.in_channels_l, conv.out_channels)
    keep = x.size(0) * x.size(1) * 4 * conv.num_relations <= keep_mb * 2**20
    out = torch.zeros(x.size(0), conv.out_channels)
    for r in range(conv.num_relations):
        out = out + _RelationMean.apply(x, weight[r], masked_edge_index(edge_index, edge_type == r), conv, keep)
    if conv.root is not None:
        out = out + x @ conv.root
    return out if conv.bias is None else out + conv.bias


@contextmanager
def lean_rgcn(backbone: torch.nn.Module, on: bool, keep_mb: float = KEEP_MEANS_MB) -> Iterator[None]:
    """Within the block (if ``on``), the backbone's ``RGCNConv`` layers run as ``_lean_rgcn_forward``: the same
    outputs, gradients equal up to summation order (module docstring). Mini-batch training only: full-batch
    training stays PyG's computation, bit for bit. The module's parameters and state dict are untouched."""
    from torch_geometric.nn import RGCNConv

    layers = [m for m in backbone.modules() if isinstance(m, RGCNConv) and m.num_blocks is None and m.aggr == "mean"]
    for m in layers if on else []:
        m.forward = partial(_lean_rgcn_forward, m, keep_mb=keep_mb)
    try:
        yield
    finally:
        for m in layers if on else []:
            del m.forward

"""Triage backbones as plain ``nn.Module``s: the paper's three (§4 "GNN backbones", App. B.1) and
the ``*_plus`` options built from the same encoders.

Each one is built from the training graph (``features.hetero_graph``) and the hypothesis
relation's endpoint types, and maps candidate pairs (KG node ids) to logits in two steps:
``z = encode(graph)`` (node states, once per graph) and ``decode(graph, z, src, dst, pair_feats)``
(any number of pairs, e.g. in chunks over a whole candidate space); ``forward`` is the two in a
row. ``sigmoid(logits)`` is the score s_h in [0, 1]. One model is trained per relation, so the
decoder is specific to that relation. ``pair_features`` (a function of (kg, src, dst), or None)
says which pair features ``decode`` expects; ``block_features(kg, dst)`` gives the same for every
pair of a block (sources x ``dst``), for scoring a whole candidate space.

Why the paper's HeteroConv and HGT stay near chance here (bench_triage.py --ablation; the paper's
own Table 2 shows the same: their GNN-only F1 0.093 at recall 0.87-0.94 is what calling every
hypothesis positive gives at 1:20): each node starts from a free embedding, so ~100-200 training
positives are memorised (train AUC 1.0 after 10 epochs while validation AUC falls), a node without
training links carries nothing learned, and the cosine decoder sees no pair structure. Hiding the
supervised edges from message passing does not change that (measured: chm_apl test AUC 0.58). These
are the paper's settings, kept as its rows; the ``*_plus`` options change them (``PlusNet``).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import HeteroData
from torch_geometric.nn import MLP, GraphConv, HeteroConv, HeteroDictLinear, HGTConv, RGCNConv
from torch_geometric.nn.dense import HeteroLinear

from hygrail import descriptors
from hygrail.kg import DataError
from hygrail.triage.features import (
    N_PAIR_FEATURES,
    BlockPairFeatures,
    LinkBlocks,
    link_features,
    pair_features,
    relational_graph,
)


class CosineDecoder(nn.Module):
    """Dot product of l2-normalised endpoint embeddings (App. B.1). The cosine lies in [-1, 1],
    so a learnable scale and bias turn it into a logit; otherwise sigmoid could not go below 0.27."""

    def __init__(self, scale: float = 5.0):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(scale))
        self.bias = nn.Parameter(torch.tensor(0.0))

    def forward(self, z_src: Tensor, z_dst: Tensor) -> Tensor:
        return self.scale * (F.normalize(z_src, dim=-1) * F.normalize(z_dst, dim=-1)).sum(-1) + self.bias


class HeteroConvEncoder(nn.Module):
    """Two HeteroConv layers (a weighted GraphConv per edge type, mean across edge types), LayerNorm
    after each, ReLU after the first."""

    def __init__(self, graph: HeteroData, hidden: int):
        super().__init__()
        self.convs = nn.ModuleList(
            HeteroConv({et: GraphConv(hidden, hidden) for et in graph.edge_types}, aggr="mean") for _ in range(2)
        )
        self.norms = nn.ModuleList(
            nn.ModuleDict({t: nn.LayerNorm(hidden) for t in graph.node_types}) for _ in range(2)
        )

    def forward(self, x_dict: dict[str, Tensor], graph: HeteroData) -> dict[str, Tensor]:
        for i, (conv, norm) in enumerate(zip(self.convs, self.norms)):
            x_dict = conv(x_dict, graph.edge_index_dict, edge_weight_dict=graph.edge_weight_dict)
            x_dict = {t: norm[t](x) for t, x in x_dict.items()}
            if i == 0:
                x_dict = {t: x.relu() for t, x in x_dict.items()}
        return x_dict


class HeteroConvNet(nn.Module):
    """Per-type embeddings, ``HeteroConvEncoder``; cosine decoder."""

    pair_features = block_features = None

    def __init__(self, graph: HeteroData, relation: tuple[str, str], hidden: int = 64):
        super().__init__()
        self.relation = relation
        self.emb = nn.ModuleDict({t: nn.Embedding(graph[t].num_nodes, hidden) for t in graph.node_types})
        self.encoder = HeteroConvEncoder(graph, hidden)
        self.decoder = CosineDecoder()

    def encode(self, graph: HeteroData) -> dict[str, Tensor]:
        return self.encoder({t: emb.weight for t, emb in self.emb.items()}, graph)

    def decode(self, graph: HeteroData, z: dict[str, Tensor], src: Tensor, dst: Tensor, pair_feats: Tensor | None = None) -> Tensor:
        s, d = self.relation
        return self.decoder(z[s][graph.local_index[src]], z[d][graph.local_index[dst]])

    def forward(self, graph: HeteroData, src: Tensor, dst: Tensor, pair_feats: Tensor | None = None) -> Tensor:
        return self.decode(graph, self.encode(graph), src, dst, pair_feats)


class ConcatHeteroLinear(HeteroLinear):
    """PyG's HeteroLinear with a faster pure-PyTorch path (same parameters and results).

    Without pyg-lib, HeteroLinear writes each type's product into a slice of one output tensor;
    autograd then copies the whole tensor once per type. HGTConv has heads x edge types (4 x 50
    on MatKG) types: encode + backward at 3,000 nodes took 2.05 s with PyG's HeteroLinear against
    0.22 s with this one (measured once, 1 thread)."""

    def forward_naive(self, x: Tensor, type_ptr: Tensor) -> Tensor:
        # split/cat, not slicing: each slice's backward would also allocate a full-size gradient.
        parts = x.split(type_ptr.diff().tolist())
        return torch.cat([part @ w for part, w in zip(parts, self.weight.unbind(0))])


class HGTEncoder(nn.Module):
    """Two HGTConv layers (multi-head attention over node and edge types), LayerNorm + ReLU after each."""

    def __init__(self, graph: HeteroData, hidden: int, heads: int):
        super().__init__()
        self.convs = nn.ModuleList(HGTConv(hidden, hidden, graph.metadata(), heads) for _ in range(2))
        for conv in self.convs:
            conv.k_rel.__class__ = conv.v_rel.__class__ = ConcatHeteroLinear
        self.norms = nn.ModuleList(
            nn.ModuleDict({t: nn.LayerNorm(hidden) for t in graph.node_types}) for _ in range(2)
        )

    def forward(self, x_dict: dict[str, Tensor], graph: HeteroData) -> dict[str, Tensor]:
        for conv, norm in zip(self.convs, self.norms):
            x_dict = conv(x_dict, graph.edge_index_dict)
            x_dict = {t: norm[t](x).relu() for t, x in x_dict.items()}
        return x_dict


class HGTNet(nn.Module):
    """Per-type embeddings, per-type linear projections, ``HGTEncoder``; cosine decoder."""

    pair_features = block_features = None

    def __init__(self, graph: HeteroData, relation: tuple[str, str], hidden: int = 64, heads: int = 4):
        super().__init__()
        self.relation = relation
        self.emb = nn.ModuleDict({t: nn.Embedding(graph[t].num_nodes, hidden) for t in graph.node_types})
        self.lin_dict = nn.ModuleDict({t: nn.Linear(hidden, hidden) for t in graph.node_types})
        self.encoder = HGTEncoder(graph, hidden, heads)
        self.decoder = CosineDecoder()

    def encode(self, graph: HeteroData) -> dict[str, Tensor]:
        return self.encoder({t: self.lin_dict[t](emb.weight) for t, emb in self.emb.items()}, graph)

    def decode(self, graph: HeteroData, z: dict[str, Tensor], src: Tensor, dst: Tensor, pair_feats: Tensor | None = None) -> Tensor:
        s, d = self.relation
        return self.decoder(z[s][graph.local_index[src]], z[d][graph.local_index[dst]])

    def forward(self, graph: HeteroData, src: Tensor, dst: Tensor, pair_feats: Tensor | None = None) -> Tensor:
        return self.decode(graph, self.encode(graph), src, dst, pair_feats)


class RGCNEncoder(nn.Module):
    """Two basis-decomposed RGCNConv layers over global node ids, LayerNorm after each, ReLU between."""

    def __init__(self, graph: HeteroData, hidden: int, bases: int):
        super().__init__()
        num_relations = len(graph.edge_types)
        self.convs = nn.ModuleList(RGCNConv(hidden, hidden, num_relations, num_bases=bases) for _ in range(2))
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(2))

    def forward(self, x: Tensor, graph: HeteroData) -> Tensor:
        edge_index, edge_type = relational_graph(graph)
        for i, (conv, norm) in enumerate(zip(self.convs, self.norms)):
            x = norm(conv(x, edge_index, edge_type))
            if i == 0:
                x = x.relu()
        return x


class RGCNNet(nn.Module):
    """Global node embeddings, ``RGCNEncoder``, and an MLP edge scorer over [z_u, z_v, z_u*z_v,
    |z_u-z_v|, target-relation embedding, six standardised local features] with two hidden layers
    (dropout 0.15, 0.10)."""

    pair_features = staticmethod(pair_features)
    block_features = BlockPairFeatures

    def __init__(
        self,
        graph: HeteroData,
        relation: tuple[str, str],
        hidden: int = 96,
        bases: int = 8,
        relation_dim: int = 16,
        mlp_hidden: tuple[int, int] = (96, 48),
        dropout: tuple[float, float] = (0.15, 0.10),
    ):
        super().__init__()
        self.emb = nn.Embedding(int(graph.local_index.numel()), hidden)
        self.encoder = RGCNEncoder(graph, hidden, bases)
        # One model per hypothesis relation: its embedding is a single learned vector.
        self.relation_emb = nn.Parameter(torch.randn(relation_dim) * 0.1)
        self.scale = FeatureScale(N_PAIR_FEATURES)
        h1, h2 = mlp_hidden
        self.mlp = nn.Sequential(
            nn.Linear(4 * hidden + relation_dim + N_PAIR_FEATURES, h1),
            nn.ReLU(),
            nn.Dropout(dropout[0]),
            nn.Linear(h1, h2),
            nn.ReLU(),
            nn.Dropout(dropout[1]),
            nn.Linear(h2, 1),
        )

    def encode(self, graph: HeteroData) -> Tensor:
        return self.encoder(self.emb.weight, graph)

    def forward(self, graph: HeteroData, src: Tensor, dst: Tensor, pair_feats: Tensor | None = None) -> Tensor:
        return self.decode(graph, self.encode(graph), src, dst, pair_feats)

    def decode(self, graph: HeteroData, z: Tensor, src: Tensor, dst: Tensor, pair_feats: Tensor | None = None) -> Tensor:
        zs, zd = F.normalize(z[src], dim=-1), F.normalize(z[dst], dim=-1)
        rel = self.relation_emb.expand(len(src), -1)
        return self.mlp(torch.cat([zs, zd, zs * zd, (zs - zd).abs(), rel, self.scale(pair_feats)], dim=-1)).squeeze(-1)


class FeatureScale(nn.Module):
    """Standardisation of pair features with statistics fitted once on training pairs (``fit``);
    buffers, so they travel with the checkpoint."""

    def __init__(self, n: int):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n))
        self.register_buffer("std", torch.ones(n))

    def fit(self, feats: Tensor) -> None:
        self.mean.copy_(feats.mean(0))
        self.std.copy_(feats.std(0).clamp_min(1e-6))  # a constant feature stays 0

    def forward(self, feats: Tensor) -> Tensor:
        return (feats - self.mean) / self.std


class ValidationHead(nn.Module):
    """Logistic regressions fitted on validation over the decoder's logit and inputs, cross-fitted.

    Why: the GNN learns from older links, validation and test positives are the newest ones
    (temporal split), and link patterns drift over time (on the second KG, bench/biokg.py, the
    recent compound-disease links are mostly indirect). TSH fits all its weights on validation for
    this reason; the head does the same on top of the GNN, with few parameters (L2, ``C``).
    ``fit`` deals validation into ``folds`` stratified folds and returns each pair's logit from
    the head that did not see it (out-of-fold: the threshold and band chosen on these scores are
    not optimistic); any other pair gets the log-odds of the folds' mean probability. With several
    ``candidates`` (input sets), each is cross-fitted on the same folds and the one with the best
    out-of-fold average precision is kept (its coefficients; the others' columns get 0). The sets
    are compared without the columns in ``compare_without``, then the kept set is fitted with them:
    a column whose validation AP is optimistic (the GNN's logit, whose epoch was chosen on
    validation AP) would favour the set that leans on it most. The comparison averages the
    out-of-fold AP over ``repeats`` fold partitions (the head itself is fitted on the first): with
    one partition the kept set changed with the partition's seed (on CHM-APL at data.scale 2 the
    other set won 1-4 of 10 seeds in 4 of 5 graphs; validation only). The configs' 10 is the number
    of seeds that check used, not a tuned value. Its cost per fit, one core: 0.19 s at paper size
    (399 validation pairs), 0.25 s at data.scale 2 (1,407), 12.9 s against 1.9 s for one partition
    on 110k random pairs (the full release's validation size).
    """

    def __init__(self, n_inputs: int, folds: int, C: float = 0.1, candidates: dict[str, list[int]] | None = None,
                 compare_without: tuple[int, ...] = (), repeats: int = 1):
        super().__init__()
        if repeats < 1:
            raise DataError(f"backbone.head_repeats={repeats}; expected >= 1 fold partitions")
        self.folds, self.C, self.repeats = folds, C, repeats
        # name -> input columns; ``fit`` keeps the set with the best out-of-fold AP (None: all columns)
        self.candidates = candidates or {"all": list(range(n_inputs))}
        # name -> the columns its comparison reads
        self.compared = {k: [c for c in cols if c not in set(compare_without)] for k, cols in self.candidates.items()}
        if len(self.candidates) > 1 and not all(self.compared.values()):
            raise ValueError(f"every candidate set needs a column outside compare_without={tuple(compare_without)}")
        self.register_buffer("choice", torch.tensor(0))
        self.register_buffer("mean", torch.zeros(n_inputs))
        self.register_buffer("std", torch.ones(n_inputs))
        self.register_buffer("coef", torch.zeros(folds, n_inputs))
        self.register_buffer("intercept", torch.zeros(folds))
        self.register_buffer("fitted", torch.tensor(False))

    def fit(self, x: np.ndarray, y: np.ndarray, seed: int = 0) -> np.ndarray:
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import StratifiedKFold

        x = np.asarray(x, dtype=np.float64)
        if min(int(y.sum()), int(len(y) - y.sum())) < self.folds:
            raise DataError(f"backbone.head_folds={self.folds}: validation has {int(y.sum())} positives "
                            f"of {len(y)}; each fold needs one of each class (lower head_folds or set it to 0)")
        from sklearn.metrics import average_precision_score

        mean, std = x.mean(0), x.std(0)
        std[std == 0] = 1.0
        xs = (x - mean) / std
        def partition(r: int) -> list:
            return list(StratifiedKFold(self.folds, shuffle=True, random_state=seed + r).split(xs, y))

        def cross_fit(cols: list[int], folds: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            coef, intercept, oof = np.zeros((self.folds, x.shape[1])), np.zeros(self.folds), np.zeros(len(y))
            for k, (fit_idx, held) in enumerate(folds):
                clf = LogisticRegression(C=self.C, max_iter=5000).fit(xs[fit_idx][:, cols], y[fit_idx])
                coef[k, cols], intercept[k] = clf.coef_[0], clf.intercept_[0]
                oof[held] = clf.decision_function(xs[held][:, cols])
            return coef, intercept, oof

        first, i = partition(0), 0
        if len(self.candidates) > 1:  # same partitions for every set: a paired comparison
            partitions = [first] + [partition(r) for r in range(1, self.repeats)]
            i = int(np.argmax([np.mean([average_precision_score(y, cross_fit(cols, folds)[2]) for folds in partitions])
                               for cols in self.compared.values()]))
        coef, intercept, oof = cross_fit(list(self.candidates.values())[i], first)
        self.coef.copy_(torch.from_numpy(coef))
        self.intercept.copy_(torch.from_numpy(intercept))
        self.choice.fill_(i)
        self.mean.copy_(torch.from_numpy(mean))
        self.std.copy_(torch.from_numpy(std))
        self.fitted.fill_(True)
        return oof

    @property
    def chosen(self) -> str:
        """Name of the input set ``fit`` kept."""
        return list(self.candidates)[int(self.choice)]

    def forward(self, x: Tensor) -> Tensor:
        p = torch.sigmoid(((x - self.mean) / self.std) @ self.coef.T + self.intercept).mean(-1)
        return torch.logit(p, eps=1e-7)


HEAD_INPUTS = ("auto", "tsh", "link")
HEAD_COMPATIBLE = "backbone.head_compatible"  # the option's name in errors


class HeadPairs:
    """Pair features of a plus backbone whose validation head reads more than the MLP's inputs:
    ``link_features`` (the MLP's), then, with ``tsh``, ``hygrail.descriptors.design`` (log1p local
    descriptors, and the entity names' similarity under the node inputs' sentence encoder ``names``,
    if any; TSH's other settings at their defaults), then, with ``compatible`` ({via, ignore}), the
    two ``descriptors.COMPATIBILITY`` columns. Only scored pairs need the parts after the first:
    training pairs get ``PlusNet.fold_features``. Block cost in bench_triage.py --feature-cost."""

    def __init__(self, names: str | None, tsh: bool = True, compatible: dict | None = None):
        self.cfg = {"embedding": bool(names), "embedding_model": names}
        self.tsh, self.compatible = tsh, compatible
        self.tsh_width = descriptors.design_width(self.cfg) if tsh else 0
        self.width = self.tsh_width + (len(descriptors.COMPATIBILITY) if compatible else 0)

    def __call__(self, kg, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        return np.hstack([link_features(kg, src, dst), self.extra(kg, src, dst)]).astype(np.float32)

    def extra(self, kg, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The columns after ``link_features`` (``width`` of them)."""
        parts = [np.zeros((len(src), 0))]
        if self.tsh:
            parts.append(descriptors.design(descriptors.pair_features(kg, src, dst, self.cfg)))
        if self.compatible:
            parts.append(descriptors.design(descriptors.compatibility(kg, src, dst, self.compatible, HEAD_COMPATIBLE)))
        return np.hstack(parts).astype(np.float32)

    def blocks(self, kg, dst: np.ndarray):
        """``block_features``: every pair of sources x ``dst``, as ``LinkBlocks`` does for the first part."""
        link, dst = LinkBlocks(kg, dst), np.asarray(dst, dtype=np.int64)

        def features(src: np.ndarray) -> np.ndarray:
            parts = [link(src)]
            if self.tsh:
                parts.append(descriptors.design(descriptors.block_features(kg, src, dst, self.cfg)))
            if self.compatible:
                parts.append(descriptors.design(descriptors.compatibility_block(kg, src, dst, self.compatible, HEAD_COMPATIBLE)))
            rest = [p.reshape(len(src), len(dst), -1).astype(np.float32) for p in parts[1:]]
            return np.concatenate([parts[0], *rest], axis=-1)

        return features


class PlusNet(nn.Module):
    """A paper encoder (``encoder``: heteroconv | hgt | rgcn) on informative node inputs, with an
    MLP link scorer over endpoint states and the pair's structure (``*_plus`` backbones).

    - Inputs: ``graph[t].x`` (``features.node_inputs``: degree, per-type degree, count and year
      statistics, and optionally the entity names' sentence embeddings) projected per node type
      (PyG ``HeteroDictLinear``) instead of free per-node embeddings: a free embedding per node
      lets 100-odd training positives be memorised (the paper backbones reach train AUC 1.0 within
      10 epochs while validation AUC falls, bench_triage.py) and carries nothing to a node without
      training links.
    - Decoder: PyG ``MLP`` over [z_u * z_v, z_u, z_v, standardised ``features.link_features``, cosine
      of the two names' embeddings (when the inputs carry names: their last ``name_dim`` columns)].
    - ``decoder: cosine`` (ablation): the paper's cosine decoder instead, no pair features, no head.
    - ``head_folds`` > 0: a ``ValidationHead`` fitted after training (``hygrail.triage.train.fit``;
      until then decode returns the logit) over the decoder logit and ``head_inputs``: ``link``, the
      link features and name cosine the MLP reads; ``tsh``, TSH's own classifier inputs
      (``HeadPairs``); ``auto`` (the configs'), whichever of the two gives the better out-of-fold
      validation AP, per relation. Why auto: no set wins everywhere on validation. As the inputs of a
      logistic regression fitted on validation (no GNN), TSH's descriptors beat the link features on
      every synthetic MatKG relation (out-of-fold AP 0.569 vs 0.538, means over 5 graphs; the per-type
      common neighbours hurt most), and the link features beat TSH's on the second KG's
      compound-disease relation (0.387 vs 0.345, 3 graphs), where the links run through typed
      metapaths (compound-gene-disease).
    - The two sets are compared as above, without the logit they share (``compare_without``), then
      the kept one is fitted with it. The logit's validation AP is optimistic, its epoch having been
      chosen on validation AP: on CHM-APL (bench analysis of dumped head inputs, 5 graphs at
      data.scale 2 and 15 replicates at paper size) it was 0.016 / 0.029 above its test AP while a
      head over TSH's descriptors alone was 0.039 / 0.103 below, and with the logit in the
      comparison the link set, which leans on it most, was kept in 4 of 5 / 6 of 15 replicates, and
      was the better set on test in 0 of 5 / 1 of 15 (experiments/triage.md). ``head_repeats`` fold
      partitions are averaged in that comparison (``ValidationHead``).
    - ``head_compatible`` ({via, ignore}; absent: off, today's head): the two compatibility columns
      of ``hygrail.descriptors`` join both input sets of the head (not the MLP, not the comparison's
      difference: both sets carry them). A named option with its own rows (bench_triage.py
      ``<backbone>+compat``; "GNN + compatibility" in the report) beside TSH with the same columns.
    """

    pair_features = staticmethod(link_features)
    block_features = LinkBlocks
    fold_features = staticmethod(link_features)  # training pairs: what the MLP reads (the head is fitted later)

    def __init__(
        self,
        graph: HeteroData,
        relation: tuple[str, str],
        encoder: str,
        n_pair: int,
        name_dim: int = 0,
        hidden: int = 64,
        heads: int = 4,
        bases: int = 8,
        mlp_hidden: tuple[int, ...] = (64, 32),
        dropout: float = 0.1,
        endpoints: bool = True,
        head_folds: int = 0,
        head_C: float = 0.1,
        head_inputs: str = "auto",
        head_repeats: int = 1,
        names: str | None = None,
        decoder: str = "mlp",
        head_compatible: dict | None = None,
    ):
        super().__init__()
        self.relation, self.name_dim, self.kind, self.hidden = relation, name_dim, encoder, hidden
        self.n_link = n_pair  # pair_feats columns of the link features; TSH's design follows them
        self.endpoints = endpoints
        in_dim = graph[graph.node_types[0]].x.size(1)
        self.inputs = HeteroDictLinear(in_dim, hidden, types=graph.node_types)
        if encoder == "heteroconv":
            self.encoder = HeteroConvEncoder(graph, hidden)
        elif encoder == "hgt":
            self.encoder = HGTEncoder(graph, hidden, heads)
        elif encoder == "rgcn":
            self.encoder = RGCNEncoder(graph, hidden, bases)
        else:
            raise ValueError(f"encoder={encoder!r}; expected heteroconv, hgt or rgcn")
        if decoder == "cosine":  # ablation: the paper's decoder on informative inputs, no pair features
            self.pair_features = self.block_features = self.fold_features = None
            self.cosine, head_folds = CosineDecoder(), 0
        elif decoder != "mlp":
            raise ValueError(f"decoder={decoder!r}; expected mlp or cosine")
        if head_inputs not in HEAD_INPUTS:
            raise DataError(f"backbone.head_inputs={head_inputs!r}; expected one of {', '.join(HEAD_INPUTS)}")
        if head_compatible and not head_folds:
            raise DataError(f"{HEAD_COMPATIBLE}={head_compatible!r} is read by the validation head; this backbone has none "
                            f"(head_folds={head_folds}, decoder={decoder}): set head_folds > 0 or drop it")
        n_read = n_pair + (1 if name_dim else 0)  # link features and name cosine: the MLP's pair inputs
        self.head_set = head_inputs if head_folds else "link"
        n_tsh, n_compat = 0, 0
        if self.head_set != "link" or head_compatible:
            # pair features = [link features | TSH's design | compatibility]; the MLP reads the first part
            pairs = HeadPairs(names, tsh=self.head_set != "link", compatible=dict(head_compatible) if head_compatible else None)
            self.pair_features, self.block_features = pairs, pairs.blocks
            n_tsh, n_compat = pairs.tsh_width, pairs.width - pairs.tsh_width
        self.scale = FeatureScale(n_pair)
        width = (3 if endpoints else 1) * hidden + n_read
        self.mlp = MLP([width, *mlp_hidden, 1], dropout=dropout, norm=None)
        # head columns: [logit, link features + name cosine, TSH design, compatibility (unscaled: the head
        # standardises)]; the compatibility columns join whichever set the head reads
        compat = list(range(1 + n_read + n_tsh, 1 + n_read + n_tsh + n_compat))
        sets = {"link": list(range(1 + n_read)) + compat, "tsh": [0] + list(range(1 + n_read, 1 + n_read + n_tsh)) + compat}
        candidates = sets if self.head_set == "auto" else {self.head_set: sets[self.head_set]}
        n_head = 1 + n_read + n_tsh + n_compat
        # the sets are compared without the logit: its epoch was chosen on validation AP (docstring)
        self.head = (ValidationHead(n_head, int(head_folds), float(head_C), candidates, compare_without=(0,), repeats=head_repeats)
                     if head_folds else None)

    def encode(self, graph: HeteroData) -> dict[str, Tensor]:
        x_dict = self.inputs({t: graph[t].x for t in graph.node_types})
        if self.kind != "rgcn":
            return self.encoder(x_dict, graph)
        # R-GCN runs on global node ids; its states go back to per-type tables afterwards.
        x = next(iter(x_dict.values())).new_zeros(int(graph.local_index.numel()), self.hidden)
        for t in graph.node_types:
            x[graph[t].node_id] = x_dict[t]
        z = self.encoder(x, graph)
        return {t: z[graph[t].node_id] for t in graph.node_types}

    def decode(self, graph: HeteroData, z: dict[str, Tensor], src: Tensor, dst: Tensor, pair_feats: Tensor | None = None) -> Tensor:
        if self.pair_features is None:
            s, d = self.relation
            return self.cosine(z[s][graph.local_index[src]], z[d][graph.local_index[dst]])
        x = self.head_inputs(graph, z, src, dst, pair_feats)
        return self.head(x) if self.head is not None and bool(self.head.fitted) else x[:, 0]

    def head_inputs(self, graph: HeteroData, z: dict[str, Tensor], src: Tensor, dst: Tensor, pair_feats: Tensor) -> Tensor:
        """The head's inputs: [decoder logit, standardised link features, name cosine, TSH's design
        (unless ``head_inputs: link``), the compatibility (with ``head_compatible``)]; column 0 alone is
        the decoder's output."""
        s, d = self.relation
        ls, ld = graph.local_index[src], graph.local_index[dst]
        zs, zd = z[s][ls], z[d][ld]
        pair = [self.scale(pair_feats[:, : self.n_link])]
        if self.name_dim:
            pair.append(name_cosine(graph[s].x, graph[d].x, ls, ld, self.name_dim))
        ends = [zs * zd, zs, zd] if self.endpoints else [zs * zd]
        logit = self.mlp(torch.cat(ends + pair, dim=-1))
        return torch.cat([logit] + pair + [pair_feats[:, self.n_link :]], dim=-1)

    def forward(self, graph: HeteroData, src: Tensor, dst: Tensor, pair_feats: Tensor | None = None) -> Tensor:
        return self.decode(graph, self.encode(graph), src, dst, pair_feats)


def name_cosine(xs: Tensor, xd: Tensor, ls: Tensor, ld: Tensor, k: int, chunk: int = 4096) -> Tensor:
    """(n, 1) dot products of the last ``k`` columns of ``xs[ls]`` and ``xd[ld]`` (unit name embeddings: their
    cosine), ``chunk`` pairs at a time: the same values as all at once (each row is summed alone), but two
    (n, k) gathers and their product are not allocated whole; a training step's 65,536 pairs took 0.24 s at
    once and 0.09 s in chunks (one thread), and this was 15% of a whole-HPO epoch (py-spy, issue #57)."""
    return torch.cat([(xs[ls[lo : lo + chunk], -k:] * xd[ld[lo : lo + chunk], -k:]).sum(-1, keepdim=True)
                      for lo in range(0, max(len(ls), 1), chunk)])


BACKBONES = {
    "heteroconv": HeteroConvNet,
    "hgt": HGTNet,
    "rgcn": RGCNNet,
    "heteroconv_plus": partial(PlusNet, encoder="heteroconv"),
    "hgt_plus": partial(PlusNet, encoder="hgt"),
    "rgcn_plus": partial(PlusNet, encoder="rgcn"),
}

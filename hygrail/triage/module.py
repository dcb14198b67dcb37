"""One LightningModule for every backbone: BCE on training pairs, validation every ``val_every``
epochs, best weights kept in memory.

Paper backbones (App. B.1): one full batch of the split's fixed training pairs per epoch, on the
full training graph; best checkpoint by validation max-F1. Departure: the paper selects the best
checkpoint for R-GCN only; here HeteroConv and HGT keep theirs too (their last epoch is the most
overfitted one: train AUC 1.0 while validation AUC falls, bench_triage.py --ablation). Two training
details the paper leaves open:
- ``prior_logit``: a fixed offset log(p/(1-p)) of the training positive rate added to every logit
  (the usual output-bias initialisation). With 1:20 negatives and 100 steps of Adam at 1e-3 a
  zero-initialised bias cannot reach -3; the models instead collapsed all scores together.
- ``disjoint_train_ratio`` r (PyG's RandomLinkSplit name, resampled every epoch): each training
  step supervises a random fraction r of the training pairs and hides the supervised positives
  from message passing. r = 0 is the paper's setting and the paper configs' default.

``*_plus`` backbones (``hygrail.triage.train.FoldPairs`` builds their batches): the training
positives are cut into K folds; an epoch is K steps, step k supervising fold k's positives on
graph ``fold_graphs[k]``, which lacks exactly those edges (so a supervised positive is never an
edge the model reads, as a val/test positive never is), against fresh negatives drawn for that
step. Best checkpoint by validation average precision (``select_on="ap"``), which ranks the whole
validation set rather than one threshold's F1 over ~20 positives.

Mini-batch training (``hygrail.triage.train.batch_plan``, for graphs whose full batch does not
fit): the training loader yields steps of at most ``batch_pairs`` pairs, and validation/test pairs
are scored ``score_chunk`` at a time on one encoding of the graph.

Logged with ``self.log`` (a no-op without a Lightning logger): ``train_loss`` per epoch, and
``val_ap``, ``val_f1`` (max-F1) per validation.
"""

from __future__ import annotations

import copy
import random

import lightning as L
import numpy as np
import torch
import torch.nn.functional as F
from sklearn.metrics import average_precision_score
from torch import nn
from torch_geometric.data import HeteroData

from hygrail.triage.features import drop_target_edges
from hygrail.thresholds import max_f1

SELECT_ON = ("f1", "ap")


def _numpy_state() -> tuple:
    """numpy's global RNG state in types a weights-only ``torch.load`` (Lightning's resume) reads."""
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    return name, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(gauss)


class TriageModule(L.LightningModule):
    def __init__(
        self,
        backbone: nn.Module,
        graph: HeteroData,
        relation: tuple[str, str],
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        prior_logit: float = 0.0,
        disjoint_train_ratio: float = 0.0,
        select_on: str = "f1",
        fold_graphs: list[HeteroData] | None = None,
        score_chunk: int | None = None,
    ):
        super().__init__()
        if select_on not in SELECT_ON:
            raise ValueError(f"select_on={select_on!r}; expected one of {SELECT_ON}")
        self.backbone = backbone
        self.graph = graph  # fixed message-passing graph, not a parameter
        self.fold_graphs = fold_graphs or []  # plus training: graph k lacks fold k's positives
        self.test_graph: HeteroData | None = None  # split.graph_cut=time: the graph test is scored on
        self.relation = relation
        self.lr, self.weight_decay, self.disjoint_train_ratio = lr, weight_decay, disjoint_train_ratio
        self.select_on = select_on
        self.score_chunk = score_chunk  # mini-batch training: pairs scored without gradient are decoded this many at a time
        self.register_buffer("prior_logit", torch.tensor(float(prior_logit)))
        self.best_score, self.best_epoch, self.best_state = -1.0, 0, None

    def forward(self, batch: dict[str, torch.Tensor], graph: HeteroData | None = None) -> torch.Tensor:
        graph = self.graph if graph is None else graph
        if self.score_chunk is None or torch.is_grad_enabled():
            return self.backbone(graph, batch["src"], batch["dst"], batch.get("pair_feats")) + self.prior_logit
        # Encoded once, decoded in chunks: memory bounded by the chunk, not by the validation/test pairs.
        z, feats, n = self.backbone.encode(graph), batch.get("pair_feats"), len(batch["src"])
        return torch.cat([
            self.backbone.decode(graph, z, batch["src"][lo : lo + self.score_chunk], batch["dst"][lo : lo + self.score_chunk],
                                 None if feats is None else feats[lo : lo + self.score_chunk])
            for lo in range(0, max(n, 1), self.score_chunk)
        ]) + self.prior_logit

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = self._loss(batch)
        self.log("train_loss", loss, on_step=False, on_epoch=True, batch_size=len(batch["label"]))
        return loss

    def _loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        if "fold" in batch:
            logits = self(batch, self.fold_graphs[int(batch["fold"])])
            return F.binary_cross_entropy_with_logits(logits, batch["label"])
        if self.disjoint_train_ratio <= 0:
            return F.binary_cross_entropy_with_logits(self(batch), batch["label"])
        # Supervised: a random fraction of all pairs (so the 1:20 ratio holds); their positives leave the graph.
        sup = torch.rand(len(batch["label"])) < self.disjoint_train_ratio
        hidden = batch["edge_pos"][sup & (batch["edge_pos"] >= 0)]
        graph = drop_target_edges(self.graph, *self.relation, hidden)
        logits = self(batch, graph)
        return F.binary_cross_entropy_with_logits(logits[sup], batch["label"][sup])

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        scores, labels = torch.sigmoid(self(batch)).numpy(), batch["label"].numpy()
        f1, _ = max_f1(scores, labels)
        ap = float(average_precision_score(labels, scores)) if labels.any() else 0.0
        self.log_dict({"val_ap": ap, "val_f1": f1}, batch_size=len(labels))
        score = ap if self.select_on == "ap" else f1
        # Strictly better only: among equal scores the earliest epoch wins.
        if score > self.best_score:
            self.best_score, self.best_epoch = score, self.current_epoch + 1
            self.best_state = copy.deepcopy(self.state_dict())

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """A resumable epoch's checkpoint (``train.EpochSave``) also holds the best epoch so far and
        the RNGs training draws from (torch: folds, supervision masks, dropout; Python's ``random``:
        PyG's ``negative_sampling``; numpy's, to be safe), so a resumed run goes on exactly as the
        uninterrupted one would."""
        checkpoint["hygrail"] = {"best_score": self.best_score, "best_epoch": self.best_epoch,
                                 "best_state": self.best_state, "torch_rng": torch.get_rng_state(),
                                 "python_rng": random.getstate(), "numpy_rng": _numpy_state()}

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        if (kept := checkpoint.get("hygrail")) is not None:
            self.best_score, self.best_epoch, self.best_state = kept["best_score"], kept["best_epoch"], kept["best_state"]
            torch.set_rng_state(kept["torch_rng"])
            random.setstate(kept["python_rng"])
            name, keys, pos, has_gauss, gauss = kept["numpy_rng"]
            np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))

    def restore_best(self) -> None:
        """Load the best validated weights (no-op when validation never ran: the last ones stay)."""
        if self.best_state is not None:
            self.load_state_dict(self.best_state)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.lr, weight_decay=self.weight_decay)

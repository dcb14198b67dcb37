"""Train one backbone on one relation's split and score its val/test hypotheses, with a cache.

``triage_scores`` is the stage the pipeline calls: its result depends only on (split pairs,
training graph, backbone config, seed, CODE_VERSION), hashed into the cache key, so the 12
LLM x evidence cells of one (relation, backbone) share one training run. ``load_scorer`` gives
the cached model as a ``Scorer`` for any other candidate pairs (discovery): the graph is encoded
once and pairs are decoded in chunks.
"""

from __future__ import annotations

import json
import logging
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

import lightning as L
import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from torch.utils.data import DataLoader
from tqdm import tqdm

from hygrail.cache import DiskCache, content_key
from hygrail.data.split import SPLITS, Split
from hygrail.kg import KG, DataError
from hygrail.triage.backbones import BACKBONES
from hygrail.triage.features import BlockPairFeatures, hetero_graph, pair_features, target_edge_positions
from hygrail.triage.module import TriageModule
from hygrail.triage.routing import max_f1

# Bump when a code change alters trained scores: old cache entries then miss instead of lying.
CODE_VERSION = "triage-1"
# Backbone config keys that steer training; every other key is a constructor argument of the model.
TRAIN_KEYS = ("name", "epochs", "val_every", "lr", "weight_decay", "disjoint_train_ratio")


@dataclass(frozen=True)
class Scores:
    """GNN scores in [0, 1], aligned row by row with ``split.part("val")`` / ``split.part("test")``."""

    val: np.ndarray
    test: np.ndarray
    key: str
    cache_hit: bool
    fit_seconds: float  # 0.0 on a cache hit
    best_epoch: int  # epoch whose weights were kept (validation max-F1)
    checkpoint: Path | None  # Lightning checkpoint of those weights (None without a cache)


def triage_scores(
    split: Split, backbone_cfg: Mapping, seed: int, cache_dir: Path | None, progress: bool = False, logger=None
) -> Scores:
    """Scores of the val/test hypotheses from ``backbone_cfg`` trained with ``seed`` (cached).
    ``logger``: a Lightning logger for the training curves (used only when training runs)."""
    cfg = plain_config(backbone_cfg)
    key = cache_key(split, cfg, seed)
    if cache_dir is None:
        run = fit(split, cfg, seed, progress, logger)
        return Scores(run.scores["val"], run.scores["test"], key, False, run.seconds, run.best_epoch, None)

    fitted: list[FitResult] = []

    def write(tmp: Path) -> None:
        run = fit(split, cfg, seed, progress, logger)
        fitted.append(run)
        np.savez(tmp / "scores.npz", val=run.scores["val"], test=run.scores["test"])
        run.trainer.save_checkpoint(tmp / "model.ckpt", weights_only=True)
        f1, threshold = max_f1(run.scores["val"], split.part("val")["label"].to_numpy())
        meta = {
            "key": key,
            "code_version": CODE_VERSION,
            "relation": split.relation.name,
            "backbone": cfg,
            "seed": seed,
            "best_epoch": run.best_epoch,
            "fit_seconds": run.seconds,
            "val_max_f1": f1,
            "val_f1_threshold": threshold,
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))

    entry, hit = DiskCache(Path(cache_dir)).get_or_create(key, write)
    meta = json.loads((entry / "meta.json").read_text())
    with np.load(entry / "scores.npz") as z:
        val, test = z["val"], z["test"]
    seconds = 0.0 if hit else fitted[0].seconds
    return Scores(val, test, key, hit, seconds, int(meta["best_epoch"]), entry / "model.ckpt")


class Scorer:
    """A trained triage model scoring any (src, dst) pairs of its relation on its graph.

    ``encode`` runs once (the node states are kept); each call decodes pairs in chunks of
    ``chunk``, computing R-GCN's pair features per chunk, so memory is bounded by the chunk and
    not by the number of pairs (a relation's whole candidate space is ~1.5e8 pairs at full size).
    """

    def __init__(self, module: TriageModule, graph_kg: KG, encode_edges: int | None = None):
        self.module, self.kg = module.eval(), graph_kg
        self.backbone = module.backbone
        with torch.no_grad(), by_destination(self.backbone, encode_edges):
            self.z = self.backbone.encode(module.graph)

    def __call__(self, src: np.ndarray, dst: np.ndarray, chunk: int = 1 << 16) -> np.ndarray:
        return self.probability(self.logits(src, dst, chunk))

    @torch.no_grad()
    def logits(self, src: np.ndarray, dst: np.ndarray, chunk: int = 1 << 16,
               features: np.ndarray | None = None) -> np.ndarray:
        """float32 logits, prior included, of the pairs (src[i], dst[i]); ``probability`` of them
        is the score. ``features``: the pairs' features if already computed (e.g. by blocks)."""
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        out = np.empty(len(src), dtype=np.float32)
        for lo in range(0, len(src), chunk):
            hi = lo + chunk
            if features is None:
                b = pair_batch(self.kg, src[lo:hi], dst[lo:hi], None, self.backbone.uses_pair_features)
            else:
                b = pair_batch(self.kg, src[lo:hi], dst[lo:hi], None, False)
                b["pair_feats"] = torch.from_numpy(np.ascontiguousarray(features[lo:hi], dtype=np.float32))
            out[lo:hi] = self._logits(b["src"], b["dst"], b.get("pair_feats")).numpy()
        return out

    def _logits(self, src: torch.Tensor, dst: torch.Tensor, pair_feats: torch.Tensor | None) -> torch.Tensor:
        return self.backbone.decode(self.module.graph, self.z, src, dst, pair_feats) + self.module.prior_logit

    @torch.no_grad()
    def logit_block(self, src: np.ndarray, dst: np.ndarray, features: BlockPairFeatures | None = None,
                    chunk: int = 1 << 16) -> np.ndarray:
        """(S, D) float32 logits, prior included, of every pair (src[i], dst[j]); ``probability`` of
        them equals ``self(np.repeat(src, D), np.tile(dst, S))`` reshaped. A ranking reads the
        logits: near 1 the float32 scores saturate into ties. ``features``: a ``BlockPairFeatures``
        over ``dst``, built once for many blocks (one is built here if the backbone needs it)."""
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        n = len(src) * len(dst)
        feats = None
        if self.backbone.uses_pair_features:
            feats = torch.from_numpy((features or BlockPairFeatures(self.kg, dst))(src).reshape(n, -1))
        pair_src, pair_dst = torch.from_numpy(np.repeat(src, len(dst))), torch.from_numpy(np.tile(dst, len(src)))
        out = np.empty(n, dtype=np.float32)
        for lo in range(0, n, chunk):
            hi = lo + chunk
            out[lo:hi] = self._logits(pair_src[lo:hi], pair_dst[lo:hi], None if feats is None else feats[lo:hi]).numpy()
        return out.reshape(len(src), len(dst))

    @staticmethod
    def probability(logits: np.ndarray) -> np.ndarray:
        """Scores in [0, 1] from ``logit_block``'s logits, computed as the trained model's are."""
        return torch.sigmoid(torch.from_numpy(np.asarray(logits, dtype=np.float32))).double().numpy()

    @torch.no_grad()
    def states(self, nodes: np.ndarray, node_type: str) -> torch.Tensor:
        """Encoder states of the given nodes (all of type ``node_type``), one row each."""
        nodes = torch.as_tensor(np.asarray(nodes, dtype=np.int64))
        if isinstance(self.z, dict):  # per-type states (HeteroConv, HGT), indexed by position within the type
            return self.z[node_type][self.module.graph.local_index[nodes]]
        return self.z[nodes]


def load_scorer(split: Split, backbone_cfg: Mapping, seed: int, cache_dir: Path, encode_edges: int | None = None) -> Scorer:
    """The cached model of (split, backbone_cfg, seed) as a ``Scorer``; trains it first if the
    cache lacks it. ``encode_edges``: see ``by_destination``."""
    cfg = plain_config(backbone_cfg)
    ckpt = triage_scores(split, cfg, seed, cache_dir).checkpoint
    backbone, graph = build_backbone(split.train_graph, split.relation, cfg)
    module = TriageModule.load_from_checkpoint(
        ckpt, map_location="cpu", backbone=backbone, graph=graph, relation=(split.relation.src, split.relation.dst)
    )
    return Scorer(module, split.train_graph, encode_edges)


class DestinationChunks(torch.nn.Module):
    """A heterogeneous message-passing layer (PyG ``HGTConv``, ``HeteroConv``) run on the edges
    into a range of destination nodes at a time, at most ``max_edges`` edges per run.

    Exact: such a layer's output at node v depends on the inputs and the edges into v only (HGT's
    attention softmax is over v's incoming edges; HeteroConv's mean over edge types keeps every
    edge type into v's type, empty ones included). What it saves is the per-edge tensors: HGT holds
    ~5 (edges x hidden) float tensors at once, 6.7 GB at full synthetic MatKG size (5.4 M directed
    edges; measured peak RSS of one encode), against ``max_edges`` x hidden x 20 B per run here."""

    def __init__(self, conv: torch.nn.Module, max_edges: int):
        super().__init__()
        self.conv, self.max_edges = conv, int(max_edges)

    def forward(self, x_dict: dict, edge_index_dict: dict, **kwargs) -> dict:
        out = {}
        for node_type in dict.fromkeys(et[2] for et in edge_index_dict):
            into = [et for et in edge_index_dict if et[2] == node_type]
            dst = torch.cat([edge_index_dict[et][1] for et in into])
            n = x_dict[node_type].size(0)
            per_node = torch.bincount(dst, minlength=n).cumsum(0)
            bounds = [0]
            while bounds[-1] < n:  # ranges of destinations holding at most max_edges edges (at least one node)
                start = int(per_node[bounds[-1] - 1]) if bounds[-1] else 0
                bounds.append(max(bounds[-1] + 1, int(torch.searchsorted(per_node, start + self.max_edges, right=True))))
            parts = []
            for lo, hi in zip(bounds[:-1], bounds[1:]):
                keep = {et: (edge_index_dict[et][1] >= lo) & (edge_index_dict[et][1] < hi) for et in into}
                sub = {et: edge_index_dict[et][:, keep[et]] for et in into}
                kw = {k: {et: v[et][keep[et]] for et in into if et in v} for k, v in kwargs.items()}
                parts.append(self.conv(x_dict, sub, **kw)[node_type][lo:hi])
            out[node_type] = torch.cat(parts)
        return out


@contextmanager
def by_destination(backbone: torch.nn.Module, max_edges: int | None) -> Iterator[None]:
    """Within the block, the backbone's heterogeneous message-passing layers run as
    ``DestinationChunks`` (no-op for ``None``; R-GCN's homogeneous ``RGCNConv`` loops over
    relations already and peaks at 1.5 GB at full size, measured)."""
    from torch_geometric.nn import HeteroConv, HGTConv

    swapped = []
    if max_edges:
        for parent in list(backbone.modules()):
            for name, child in list(parent.named_children()):
                if isinstance(child, (HGTConv, HeteroConv)):
                    setattr(parent, name, DestinationChunks(child, max_edges))
                    swapped.append((parent, name, child))
    try:
        yield
    finally:
        for parent, name, child in swapped:
            setattr(parent, name, child)


def cache_key(split: Split, cfg: Mapping, seed: int) -> str:
    """Content hash of everything the scores depend on."""
    pairs, g = split.pairs, split.train_graph
    return content_key(
        CODE_VERSION,
        {"relation": split.relation.name, "src": split.relation.src, "dst": split.relation.dst},
        np.array(pairs["split"].to_list(), dtype="U8"),
        pairs["src"].to_numpy(),
        pairs["dst"].to_numpy(),
        pairs["label"].to_numpy(),
        list(g.schema.node_types),
        g.node_types,
        list(g.edge_types),
        g.edge_type_ids,
        g.edges["u"].to_numpy(),
        g.edges["v"].to_numpy(),
        g.counts,
        dict(cfg),
        int(seed),
    )


# -- training -------------------------------------------------------------------------------------


@dataclass
class FitResult:
    module: TriageModule
    trainer: L.Trainer
    scores: dict[str, np.ndarray]  # "val", "test"
    seconds: float
    best_epoch: int


def fit(split: Split, cfg: Mapping, seed: int, progress: bool = False, logger=None) -> FitResult:
    """Seeded, deterministic full-batch training by a lean Lightning Trainer on CPU; the weights
    of the best validation max-F1 epoch are kept (the last ones if validation never ran)."""
    epochs, val_every = int(cfg["epochs"]), int(cfg["val_every"])
    L.seed_everything(seed, verbose=False)
    module, batches = build_module(split, cfg)
    with _quiet_lightning(), _restore_determinism():
        trainer = L.Trainer(
            accelerator="cpu",
            devices=1,
            max_epochs=epochs,
            check_val_every_n_epoch=val_every,
            num_sanity_val_steps=0,  # an untrained model must not become "best"
            deterministic=True,
            logger=logger if logger is not None else False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            callbacks=[EpochBar(f"{cfg['name']} {split.relation.name}")] if progress else None,
        )
        t0 = time.perf_counter()
        trainer.fit(module, _one_batch(batches["train"]), _one_batch(batches["val"]))
        seconds = time.perf_counter() - t0
    module.restore_best()
    best_epoch = module.best_epoch if module.best_state is not None else epochs
    scores = {p: predict(module, batches[p]) for p in ("val", "test")}
    return FitResult(module, trainer, scores, seconds, best_epoch)


class EpochBar(L.Callback):
    """One tqdm bar over epochs: Lightning's own bar redraws for every one-batch epoch."""

    def __init__(self, desc: str):
        self.desc, self.bar = desc, None

    def on_train_start(self, trainer, pl_module):
        self.bar = tqdm(total=trainer.max_epochs, desc=f"train {self.desc}", unit="epoch", leave=False)

    def on_train_epoch_end(self, trainer, pl_module):
        self.bar.update(1)

    def on_train_end(self, trainer, pl_module):
        self.bar.close()


def build_backbone(graph_kg: KG, relation, cfg: Mapping):
    """(backbone nn.Module, HeteroData message-passing graph) for a backbone config."""
    name = cfg.get("name")
    if name not in BACKBONES:
        raise DataError(f"backbone.name={name!r}; expected one of {sorted(BACKBONES)}")
    graph = hetero_graph(graph_kg)
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in cfg.items() if k not in TRAIN_KEYS}
    try:
        return BACKBONES[name](graph, (relation.src, relation.dst), **kwargs), graph
    except TypeError as e:
        raise DataError(f"backbone={name}: bad model option ({e})") from None


def build_module(split: Split, cfg: Mapping) -> tuple[TriageModule, dict[str, dict[str, torch.Tensor]]]:
    """The LightningModule and one full batch per split (train/val/test)."""
    backbone, graph = build_backbone(split.train_graph, split.relation, cfg)
    batches = {}
    for p in SPLITS:
        part = split.part(p)
        batches[p] = pair_batch(
            split.train_graph, part["src"].to_numpy(), part["dst"].to_numpy(), part["label"].to_numpy(),
            backbone.uses_pair_features,
        )
    if backbone.uses_pair_features:
        backbone.fit_feature_scale(batches["train"]["pair_feats"])
    rel = (split.relation.src, split.relation.dst)
    train = split.part("train")
    batches["train"]["edge_pos"] = target_edge_positions(graph, *rel, train["src"].to_numpy(), train["dst"].to_numpy())
    module = TriageModule(
        backbone,
        graph,
        rel,
        lr=float(cfg.get("lr", 1e-3)),
        weight_decay=float(cfg.get("weight_decay", 0.0)),
        prior_logit=prior_logit(train["label"].to_numpy()),
        disjoint_train_ratio=float(cfg.get("disjoint_train_ratio", 0.0)),
    )
    return module, batches


def prior_logit(labels: np.ndarray) -> float:
    """log-odds of the positive rate (0 when a class is missing: no prior to encode)."""
    p = float(np.mean(labels)) if len(labels) else 0.0
    return float(np.log(p / (1 - p))) if 0 < p < 1 else 0.0


def pair_batch(
    graph_kg: KG, src: np.ndarray, dst: np.ndarray, labels: np.ndarray | None, with_features: bool
) -> dict[str, torch.Tensor]:
    batch = {"src": torch.as_tensor(np.asarray(src, dtype=np.int64)), "dst": torch.as_tensor(np.asarray(dst, dtype=np.int64))}
    if labels is not None:
        batch["label"] = torch.as_tensor(np.asarray(labels, dtype=np.float32))
    if with_features:
        batch["pair_feats"] = torch.from_numpy(pair_features(graph_kg, src, dst))
    return batch


def _one_batch(batch: dict[str, torch.Tensor]) -> DataLoader:
    """A loader yielding the full batch once (batch_size=None: no collation, no splitting)."""
    return DataLoader([batch], batch_size=None)


def predict(module: TriageModule, batch: dict[str, torch.Tensor]) -> np.ndarray:
    module.eval()
    with torch.no_grad():
        return torch.sigmoid(module(batch)).double().numpy()


def plain_config(cfg: Mapping) -> dict:
    """A backbone config as plain JSON-able data (DictConfig from Hydra or a dict)."""
    if isinstance(cfg, DictConfig):
        return OmegaConf.to_container(cfg, resolve=True)
    return json.loads(json.dumps(dict(cfg)))


@contextmanager
def _quiet_lightning() -> Iterator[None]:
    """Lightning announces devices and advertises a logger on every Trainer, and warns about
    one-batch epochs; a sweep fits hundreds of models, so those lines are noise here."""
    log = logging.getLogger("lightning.pytorch")
    level = log.level
    log.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", message=".*(does not have many workers|log_every_n_steps|LeafSpec).*"
            )
            yield
    finally:
        log.setLevel(level)


@contextmanager
def _restore_determinism() -> Iterator[None]:
    """Trainer(deterministic=True) switches torch's deterministic mode on for the whole process;
    switch it back afterwards so that code running later in the same process is unaffected."""
    was = torch.are_deterministic_algorithms_enabled()
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was)

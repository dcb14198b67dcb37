"""Train one backbone on one relation's split and score its val/test hypotheses, with a cache.

``triage_scores`` is the stage the pipeline calls: its result depends only on (split pairs,
training graph, backbone config, seed, CODE_VERSION), hashed into the cache key, so the 12
LLM x evidence cells of one (relation, backbone) share one training run. ``load_scorer`` gives
the cached model as a ``Scorer`` for any other candidate pairs (discovery): the graph is encoded
once and pairs are decoded in chunks.

Paper backbones train on the split's fixed training pairs, one full batch per epoch. A backbone
config with ``folds`` (the ``*_plus`` ones) trains on ``FoldPairs`` instead (leak-free folds,
fresh negatives), and one with ``head_folds`` then fits its validation head (``fit_head``): its
cached validation scores are out-of-fold, while test and any other pairs get the folds' mean.
Node inputs of the plus backbones (``features.node_inputs``) are computed once per graph;
entity-name embeddings (``names``: a sentence-transformers model) cost ~6 ms per name on one
core (17 s for the 2,930 names of the second KG, measured once), paid once per process.

Memory (``backbone.training``: full | minibatch | auto, ``batch_pairs``; ``batch_plan``): a full
batch holds the decoder's activations for every training pair of a step, ~5 KB per pair for R-GCN,
and a real KG has millions (data=hpo: 3.7 M training pairs, > 20 GB). Mini-batch training takes
steps of at most ``batch_pairs`` pairs (``PairSteps``; for the plus backbones, of each fold's
pairs), runs the encoder on the whole training graph once per step (R-GCN's layers as ``lean_rgcn``:
per-relation states recomputed in the backward pass, not kept), and scores validation/test pairs
in chunks of ``batch_pairs`` (pair features are computed in chunks in either mode:
``features.pair_features``, ``features.link_features``). A config opts in with
``+backbone.training=minibatch`` (``+backbone.batch_pairs=N``) on the command line. PyG's
``LinkNeighborLoader`` (neighbour-sampled subgraphs per step) is not used: its sampler needs pyg-lib
or torch-sparse, neither of which installs here (pyg-lib has no PyPI wheel; torch-sparse 0.6.18 is
source-only and compiled 12 of its 23 C++ files in 10 minutes on this 2-core machine before being
stopped). ``auto`` (the default) keeps the paper's full batch unless ``full_batch_gb`` exceeds
``AUTO_LIMIT_GB``; at paper size it is full batch, bit-identical to training without the option.
bench/bench_memory.py measures both modes on the real KGs and the full-size synthetic MatKG.
"""

from __future__ import annotations

import ctypes
import gc
import json
import logging
import shutil
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, Iterator, Mapping

import lightning as L
import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from lightning.pytorch.callbacks import Checkpoint, EarlyStopping
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

from hygrail.cache import DiskCache, content_key, load, read_file
from hygrail.data.split import SPLITS, Split, known_nodes
from hygrail.kg import KG, DataError
from hygrail.triage.backbones import BACKBONES
from hygrail.triage.features import hetero_graph, link_feature_names, node_inputs, target_edge_positions
from hygrail.triage.lean import lean_rgcn
from hygrail.triage.module import TriageModule
from hygrail.triage.negatives import NegativeSampler
from hygrail.thresholds import max_f1

log = logging.getLogger("hygrail.triage")

# Bump when a code change alters trained scores: old cache entries then miss instead of lying.
CODE_VERSION = "triage-5"  # 5: the plus head compares its input sets without the logit, over head_repeats partitions
# Changes that alter the plus backbones' scores only (so the paper backbones' cached scores stay valid):
PLUS_VERSION = "plus-2"  # 2: FoldPairs draws negatives from known nodes and never an excluded pair
# ``fit(resume=...)``: seconds between saves of the training state. Saving every epoch cost ~12 ms an epoch
# (a 4.3 MB checkpoint): +14% on the paper's 120-epoch R-GCN over tests/test_triage.py's planted graph
# (9.9 -> 11.3 s, measured 2026-12-04), for trainings too short to need resuming; whole-HPO epochs
# (~143 s) are each saved. A kill loses at most this plus an epoch.
SAVE_EVERY_S = 60.0
# Backbone config keys that steer training or build inputs; every other key is a constructor argument of the model.
TRAIN_KEYS = ("name", "epochs", "val_every", "lr", "weight_decay", "disjoint_train_ratio", "select_on", "folds",
              "patience", "names", "training", "batch_pairs")
TRAINING = ("auto", "full", "minibatch")
BATCH_PAIRS = 65_536  # pairs per mini-batch step unless backbone.batch_pairs says otherwise
# ``full_batch_gb``'s constants, measured by bench/bench_memory.py --attribute (peak RSS above the
# RSS held before, one thread): the decoder's forward + backward over 250,000 training pairs took
# 1.20 GB (R-GCN, data=hpo) and 1.11 GB (data=synthesis_recipes), i.e. <= 5.2 KB per pair; the
# encoder's over the full-size synthetic MatKG (5.4 M directed edges) 3.07 GB (R-GCN, 96 hidden) and
# 5.39 GB (rgcn_plus, 64), i.e. <= 17 B per directed edge and hidden unit.
PAIR_KB, EDGE_HIDDEN_B = 5.2, 17.0
# auto trains in mini-batches above this estimate: the 4 GB target less the 0.9-2.9 GB that the
# graph, the pair features, torch and the data hold before training at real size (same bench).
AUTO_LIMIT_GB = 1.5


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
    if cache_dir is None:
        run = fit(split, cfg, seed, progress, logger)
        scores = Scores(run.scores["val"], run.scores["test"], cache_key(split, cfg, seed), False, run.seconds,
                        run.best_epoch, None)
        del run
        free_training()
        return scores
    return _cached(split, cfg, seed, Path(cache_dir), progress, logger)[0]


def _cached(split: Split, cfg: dict, seed: int, cache_dir: Path, progress: bool = False, logger=None,
            checkpoint: bool = False) -> tuple[Scores, dict | None]:
    """``triage_scores``' cached path, and the loaded checkpoint if asked (``load_scorer``): a scores,
    meta or checkpoint file that does not load is a damaged entry, trained again (``DiskCache``)."""
    key = cache_key(split, cfg, seed)
    fitted: list[FitResult] = []

    resume = cache_dir / f".resume-{key}"  # each epoch's state: a killed training goes on from there

    def write(tmp: Path) -> None:
        run = fit(split, cfg, seed, progress, logger, resume=resume)
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
            "head_inputs": head.chosen if (head := getattr(run.module.backbone, "head", None)) is not None else None,
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))

    def read(entry: Path) -> tuple[int, np.ndarray, np.ndarray, dict | None]:
        best_epoch = load(entry / "meta.json", lambda f: int(json.loads(f.read_text())["best_epoch"]))
        val, test = load(entry / "scores.npz", _val_test)
        ckpt = load(entry / "model.ckpt", partial(torch.load, map_location="cpu", weights_only=True)) if checkpoint else None
        return best_epoch, val, test, ckpt

    (best_epoch, val, test, loaded), hit = DiskCache(cache_dir).get_or_create(
        key, write, read, what="the trained GNN's scores and checkpoint")
    shutil.rmtree(resume, ignore_errors=True)  # the entry is complete: its epochs are not needed again
    seconds = 0.0 if hit else fitted.pop().seconds
    if not hit:
        free_training()
    return Scores(val, test, key, hit, seconds, best_epoch, cache_dir / key / "model.ckpt"), loaded


def _val_test(file: Path) -> tuple[np.ndarray, np.ndarray]:
    with np.load(file) as z:
        return z["val"], z["test"]


def free_training() -> None:
    """Free what a training left: its module, graphs and features (Lightning's trainer and module refer
    to each other, so they wait for a full garbage collection, which numpy-heavy work after it seldom
    triggers: in a fresh whole-HPO 2015 discovery the trained module was still alive at the
    evaluation's peak, 0.25 GB of its arrays by memray, 2026-12-04), then give the heap's free pages
    back to the system (glibc's ``malloc_trim``; nothing elsewhere): about 1 GB of freed blocks there
    (RSS 2.05 -> 1.00 GB after training)."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


class Scorer:
    """A trained triage model scoring any (src, dst) pairs of its relation on its graph.

    ``encode`` runs once (the node states are kept); each call decodes pairs in chunks of
    ``chunk``, computing the backbone's pair features (R-GCN's six, the plus backbones'
    ``link_features``) per chunk, so memory is bounded by the chunk and not by the number of pairs
    (a relation's whole candidate space is ~1.5e8 pairs at full size). Chunks sorted by source
    node are cheapest: pair features are computed per distinct source.
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
                b = pair_batch(self.kg, src[lo:hi], dst[lo:hi], None, self.backbone.pair_features)
            else:
                b = pair_batch(self.kg, src[lo:hi], dst[lo:hi], None)
                b["pair_feats"] = torch.from_numpy(np.ascontiguousarray(features[lo:hi], dtype=np.float32))
            out[lo:hi] = self._logits(b["src"], b["dst"], b.get("pair_feats")).numpy()
        return out

    def _logits(self, src: torch.Tensor, dst: torch.Tensor, pair_feats: torch.Tensor | None) -> torch.Tensor:
        return self.backbone.decode(self.module.graph, self.z, src, dst, pair_feats) + self.module.prior_logit

    @torch.no_grad()
    def logit_block(self, src: np.ndarray, dst: np.ndarray, features: Callable | None = None,
                    chunk: int = 1 << 16) -> np.ndarray:
        """(S, D) float32 logits, prior included, of every pair (src[i], dst[j]); ``probability`` of
        them equals ``self(np.repeat(src, D), np.tile(dst, S))`` reshaped. A ranking reads the
        logits: near 1 the float32 scores saturate into ties. ``features``: the backbone's
        ``block_features`` over ``dst``, built once for many blocks (built here if not given)."""
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        n = len(src) * len(dst)
        feats = None
        if self.backbone.pair_features is not None:
            feats = torch.from_numpy((features or self.backbone.block_features(self.kg, dst))(src).reshape(n, -1))
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


def load_scorer(split: Split, backbone_cfg: Mapping, seed: int, cache_dir: Path, encode_edges: int | None = None,
                graph: KG | None = None) -> Scorer:
    """The cached model of (split, backbone_cfg, seed) as a ``Scorer``; trains it first if the
    cache lacks it. ``encode_edges``: see ``by_destination``. ``graph``: the graph the model passes
    messages over and reads its pair features from when it scores (same node ids as the split's;
    default its training graph, the one it was trained and calibrated on). Discovery passes the
    whole cut graph: a list read "today" must not ignore the split's most recent 30% of what is known."""
    cfg = plain_config(backbone_cfg)
    _, ckpt = _cached(split, cfg, seed, Path(cache_dir), checkpoint=True)
    graph_kg = split.train_graph if graph is None else graph
    backbone, hetero = build_backbone(graph_kg, split.relation, cfg, split.train_graph.edge_types)
    module = TriageModule(backbone, hetero, (split.relation.src, split.relation.dst))
    module.on_load_checkpoint(ckpt)  # as Lightning's load_from_checkpoint, from the file read (and checked) once
    module.load_state_dict(ckpt["state_dict"])
    return Scorer(module, graph_kg, encode_edges)


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


def reads(cfg: Mapping) -> dict[str, bool]:
    """What of the graph a backbone reads beyond structure and counts: the plus backbones' node inputs
    hold each node's first and last edge year (``features.node_statistics``), and their name
    embeddings and the head's name similarity read the node names (``names``)."""
    plus = str(cfg.get("name", "")).endswith("_plus")
    # head_compatible ignores nodes by name: a renamed node can change what it ignores
    return {"years": plus, "names": plus and (bool(cfg.get("names")) or bool(cfg.get("head_compatible")))}


def cache_key(split: Split, cfg: Mapping, seed: int) -> str:
    """Content hash of everything the scores depend on: the split, the training graph's structure and
    counts, and its edge years and node names where the backbone reads them (``reads``: a corrected
    names or years file must not reuse a model trained on the old ones). The paper backbones read
    neither, so their keys are what they were before years and names entered the key."""
    pairs, g = split.pairs, split.train_graph
    extra = reads(cfg)
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
        keyed_config(split, cfg),
        int(seed),
        *([PLUS_VERSION, g.edges["year"].to_numpy()] if extra["years"] else []),
        *([g.names] if extra["names"] else []),
        # graph_cut=time: the test graph too (absent otherwise, so relation-cut keys are unchanged)
        *([split.graph_cut, split.test_graph.edges["u"].to_numpy(), split.test_graph.edges["v"].to_numpy(),
           split.test_graph.counts] if split.test_graph is not None else []),
    )


def keyed_config(split: Split, cfg: Mapping) -> dict:
    """The config as the cache key reads it: ``training`` and ``batch_pairs`` give way to the plan
    they resolve to (``batch_plan``), so ``auto`` shares its entry with the mode it picks and a
    full-batch run keeps the key it had before the options existed. ``head_compatible`` enters only
    when on (its ignored names as a set), so a config without it, or with it null, keeps its key."""
    out = {k: v for k, v in cfg.items() if k not in ("training", "batch_pairs", "head_compatible")}
    if compatible := cfg.get("head_compatible"):
        if isinstance(compatible, Mapping):
            ignore = compatible.get("ignore") or []
            compatible = dict(compatible) | {"ignore": sorted(map(str, [ignore] if isinstance(ignore, str) else ignore))}
        out["head_compatible"] = compatible
    plan = batch_plan(split, cfg)
    return out if plan is None else out | {"batch_pairs": plan}


def batch_plan(split: Split, cfg: Mapping) -> int | None:
    """Pairs per training step for mini-batch training, or None for the full batch (module docstring)."""
    mode, size = cfg.get("training", "auto"), cfg.get("batch_pairs", BATCH_PAIRS)
    if mode not in TRAINING:
        raise DataError(f"backbone.training={mode!r}; expected one of {', '.join(TRAINING)}")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise DataError(f"backbone.batch_pairs={size!r}; expected a whole number of pairs >= 1")
    if mode == "full" or (mode == "auto" and full_batch_gb(split, cfg) <= AUTO_LIMIT_GB):
        return None
    return size


def full_batch_gb(split: Split, cfg: Mapping) -> float:
    """Estimated peak of one full-batch training step above what setup holds (GiB): the decoder over a
    step's pairs (all training pairs; one fold's with ``folds``) at ``PAIR_KB``, plus the encoder over
    every directed edge of the training graph at ``EDGE_HIDDEN_B`` per hidden unit. At paper size
    (3,000 nodes) it is at most 0.075 (rgcn, chm_pro); for rgcn / rgcn_plus, data=hpo 19.1 / 5.0,
    data=synthesis_recipes 5.6 / 1.6, full-size synthetic MatKG 12.1 / 6.4 (one encoder constant for
    both: R-GCN's own 3.07 GB there is 2.7 times below it, so the estimate errs towards mini-batches).
    Added to the RSS held before training (0.9, 1.55, 1.25 GB), it predicts the full-batch R-GCN peaks
    that bench_memory.py measured: 6.5 against 6.51 GB (recipes), 20.7 against an OOM kill at 20.9
    (hpo), 13.3 against 12.68 (MatKG)."""
    pairs = split.part("train").height / max(1, int(cfg.get("folds") or 0))
    edges = 2 * split.train_graph.edges.height
    return (pairs * PAIR_KB * 1024 + edges * int(cfg.get("hidden", 64)) * EDGE_HIDDEN_B) / 2**30


# -- training -------------------------------------------------------------------------------------


@dataclass
class FitResult:
    module: TriageModule
    trainer: L.Trainer
    scores: dict[str, np.ndarray]  # "val", "test"
    seconds: float
    best_epoch: int


def fit(split: Split, cfg: Mapping, seed: int, progress: bool = False, logger=None, resume: Path | None = None,
        stop_after: int | None = None, save_every_s: float = SAVE_EVERY_S) -> FitResult:
    """Seeded, deterministic training by a lean Lightning Trainer on CPU; the weights of the best
    validation epoch (max-F1, or average precision with ``select_on: ap``) are kept (the last ones
    if validation never ran). ``patience``: stop after that many validations without a gain
    (Lightning's EarlyStopping on ``val_ap``/``val_f1``); absent = run every epoch. ``resume``: a
    folder where an epoch's state is kept at most every ``save_every_s`` seconds (``EpochSave``)
    and, when one is there, training goes on from it, to the same weights as without the break
    (``TriageModule.on_save_checkpoint``); ``seconds`` then counts this process's part.
    ``stop_after``: end after that many epochs (tests: an interrupted run)."""
    epochs, val_every = int(cfg["epochs"]), int(cfg["val_every"])
    L.seed_everything(seed, verbose=False)
    module, batches, train_data = build_module(split, cfg)
    callbacks = [EpochBar(f"{cfg['name']} {split.relation.name}")] if progress else []
    if cfg.get("patience"):
        callbacks.append(EarlyStopping(f"val_{module.select_on}", patience=int(cfg["patience"]), mode="max"))
    last = None
    if resume is not None:
        resume.mkdir(parents=True, exist_ok=True)
        callbacks.append(EpochSave(resume / "last.ckpt", save_every_s))
        # a save that does not load (a truncated copy) is set aside, one warning: training starts over
        if read_file(resume / "last.ckpt", partial(torch.load, map_location="cpu", weights_only=True)) is not None:
            last = resume / "last.ckpt"
            log.info("%s %s: resuming training from %s", cfg["name"], split.relation.name, last)
    with _quiet_lightning(), _restore_determinism(), lean_rgcn(module.backbone, module.score_chunk is not None):
        trainer = L.Trainer(
            accelerator="cpu",
            devices=1,
            max_epochs=epochs if stop_after is None else min(epochs, stop_after),
            check_val_every_n_epoch=val_every,
            num_sanity_val_steps=0,  # an untrained model must not become "best"
            deterministic=True,
            logger=logger if logger is not None else False,
            log_every_n_steps=1,  # an epoch is 1 (paper) or `folds` steps; curves are logged per epoch
            enable_checkpointing=resume is not None,  # EpochSave only: Lightning adds no checkpoint of its own
            enable_progress_bar=False,
            enable_model_summary=False,
            callbacks=callbacks,
        )
        t0 = time.perf_counter()
        trainer.fit(module, DataLoader(train_data, batch_size=None), _one_batch(batches["val"]), ckpt_path=last,
                    weights_only=True)
        seconds = time.perf_counter() - t0
    module.restore_best()
    best_epoch = module.best_epoch if module.best_state is not None else trainer.current_epoch
    head = getattr(module.backbone, "head", None)
    val = predict(module, batches["val"]) if head is None else fit_head(module, batches["val"], seed)
    scores = {"val": val, "test": predict(module, batches["test"], module.test_graph)}  # after the head is fit
    return FitResult(module, trainer, scores, seconds, best_epoch)


def fit_head(module: TriageModule, val: dict[str, torch.Tensor], seed: int) -> np.ndarray:
    """Fit the backbone's ``ValidationHead`` on the validation pairs; their out-of-fold scores.
    The head's logits are complete, so the module's prior offset is dropped from then on."""
    module.eval()
    backbone = module.backbone
    n = len(val["src"])
    chunk = module.score_chunk or n
    with torch.no_grad():
        z = backbone.encode(module.graph)
        x = torch.cat([backbone.head_inputs(module.graph, z, val["src"][lo : lo + chunk], val["dst"][lo : lo + chunk],
                                            val["pair_feats"][lo : lo + chunk])
                       for lo in range(0, max(n, 1), chunk)]).double().numpy()
    oof = backbone.head.fit(x, val["label"].numpy().astype(np.int64), seed)
    module.prior_logit.zero_()
    return 1.0 / (1.0 + np.exp(-oof))


class EpochBar(L.Callback):
    """One tqdm bar over epochs: Lightning's own bar redraws for every one-batch epoch."""

    def __init__(self, desc: str):
        self.desc, self.bar = desc, None

    def on_train_start(self, trainer, pl_module):  # a resumed run starts the bar at its epoch
        self.bar = tqdm(total=trainer.max_epochs, initial=trainer.current_epoch, desc=f"train {self.desc}",
                        unit="epoch", leave=False)

    def on_train_epoch_end(self, trainer, pl_module):
        self.bar.update(1)

    def on_train_end(self, trainer, pl_module):
        self.bar.close()


class EpochSave(Checkpoint):
    """The trainer's whole state at the end of an epoch into ``path`` (written beside it, then
    renamed, so a kill leaves the previous save), at most every ``every_s`` seconds: ``fit(resume=...)``
    goes on from there (issue #36: whole-HPO training takes ~24 min and a kill began it again). A
    ``Checkpoint`` so Lightning calls it after EarlyStopping has counted the epoch (its validation
    ran before ``on_train_epoch_end``)."""

    def __init__(self, path: Path, every_s: float):
        self.path, self.every_s, self.last = path, every_s, time.perf_counter()

    def on_train_epoch_end(self, trainer, pl_module):
        if time.perf_counter() - self.last < self.every_s:
            return
        tmp = self.path.with_suffix(".tmp")
        trainer.save_checkpoint(tmp)
        tmp.replace(self.path)
        self.last = time.perf_counter()


def build_backbone(graph_kg: KG, relation, cfg: Mapping, edge_types: tuple[str, ...] | None = None):
    """(backbone nn.Module, HeteroData message-passing graph) for a backbone config; the plus
    backbones' graph carries their node inputs (computed here, once per graph). ``edge_types``: a trained
    model's (``hetero_graph``), when it passes messages over another graph than it was trained on."""
    name = cfg.get("name")
    if name not in BACKBONES:
        raise DataError(f"backbone.name={name!r}; expected one of {sorted(BACKBONES)}")
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in cfg.items() if k not in TRAIN_KEYS}
    graph = message_graph(graph_kg, cfg, edge_types)
    if name.endswith("_plus"):
        names = name_embeddings(graph_kg, cfg.get("names"))  # encoded once per process: a lookup here
        kwargs |= {"n_pair": len(link_feature_names(graph_kg)), "name_dim": 0 if names is None else names.shape[1],
                   "names": cfg.get("names")}
    try:
        return BACKBONES[name](graph, (relation.src, relation.dst), **kwargs), graph
    except TypeError as e:
        raise DataError(f"backbone={name}: bad model option ({e})") from None


def message_graph(graph_kg: KG, cfg: Mapping, edge_types: tuple[str, ...] | None = None):
    """The HeteroData a backbone passes messages on: the plus backbones' carries their node inputs."""
    if str(cfg.get("name", "")).endswith("_plus"):
        return hetero_graph(graph_kg, node_inputs(graph_kg, name_embeddings(graph_kg, cfg.get("names"))), edge_types)
    return hetero_graph(graph_kg, edge_types=edge_types)


def name_embeddings(kg: KG, model: str | None) -> np.ndarray | None:
    """Unit sentence embeddings of the node names (TSH's encoder and per-process cache), or None."""
    if not model:
        return None
    from hygrail.names import embed_names

    return embed_names(kg.names, str(model))


def build_module(split: Split, cfg: Mapping) -> tuple[TriageModule, dict[str, dict[str, torch.Tensor]], Dataset]:
    """The LightningModule, one full batch per split (val/test, and train unless ``folds``), and the
    training data: the train batch itself for the paper backbones, ``FoldPairs`` for the plus backbones,
    either cut into ``PairSteps`` under a mini-batch ``batch_plan``."""
    plan = batch_plan(split, cfg)
    backbone, graph = build_backbone(split.train_graph, split.relation, cfg)
    folds = int(cfg.get("folds") or 0)
    batches = {}
    for p in ("val", "test") if folds else SPLITS:  # with folds, the split's training pairs are never batched
        part = split.part(p)
        batches[p] = pair_batch(
            split.graph(p), part["src"].to_numpy(), part["dst"].to_numpy(), part["label"].to_numpy(),
            backbone.pair_features,
        )
    rel = (split.relation.src, split.relation.dst)
    train = split.part("train")
    if folds:
        inputs = str(cfg["name"]).endswith("_plus")
        pair_fn = getattr(backbone, "fold_features", backbone.pair_features)
        train_data = FoldPairs(split, folds, pair_fn, inputs, cfg.get("names"))
        if pair_fn is not None:
            backbone.scale.fit(train_data.scale_sample())
    else:
        if backbone.pair_features is not None:
            backbone.scale.fit(batches["train"]["pair_feats"])
        batches["train"]["edge_pos"] = target_edge_positions(graph, *rel, train["src"].to_numpy(), train["dst"].to_numpy())
        train_data = [batches["train"]]
    fold_data = train_data if folds else None
    if plan is not None:
        train_data = PairSteps(train_data, plan)
    module = TriageModule(
        backbone,
        graph,
        rel,
        lr=float(cfg.get("lr", 1e-3)),
        weight_decay=float(cfg.get("weight_decay", 0.0)),
        prior_logit=prior_logit(train["label"].to_numpy()),
        disjoint_train_ratio=float(cfg.get("disjoint_train_ratio", 0.0)),
        select_on=str(cfg.get("select_on", "f1")),
        fold_graphs=fold_data.graphs if folds else None,
        score_chunk=plan,
    )
    if split.test_graph is not None:  # split.graph_cut=time: test is scored on the graph before the test start
        module.test_graph = message_graph(split.test_graph, cfg, split.train_graph.edge_types)
    return module, batches, train_data


class FoldPairs(Dataset):
    """Training batches of the plus backbones: item k = fold k's positives + fresh negatives.

    The training positives are dealt into ``folds`` folds at random. Fold k's graph is the training
    graph without fold k's positive edges; its positives' pair features and node inputs come from
    that graph, so a supervised pair never sees its own edge (val/test positives never do).
    Negatives are drawn anew at every access (PyG's ``negative_sampling``, by ``NegativeSampler``, over
    the relation's src-type x dst-type pairs, seeded), as many per positive as the split's training part
    has, never an edge of the training graph and never a hypothesis of any split (so no val/test
    pair is trained on, whatever its label).
    """

    def __init__(self, split: Split, folds: int, pair_fn=None, inputs: bool = False, names_model: str | None = None):
        g, rel = split.train_graph, split.relation
        train = split.part("train")
        pos = train.filter(train["label"] == 1)
        if pos.height < folds:
            raise DataError(f"backbone.folds={folds}: relation {rel.name} has only {pos.height} training positives")
        self.pair_fn, self.kg = pair_fn, g
        self.ratio = max(1, round((train.height - pos.height) / pos.height))
        src, dst = pos["src"].to_numpy(), pos["dst"].to_numpy()
        fold = torch.randperm(len(src)).numpy() % folds  # seeded by fit's seed_everything
        edge_ids = np.asarray(g.adjacency[np.array(src), np.array(dst)]).ravel() - 1  # -1: not an edge
        names = name_embeddings(g, names_model) if inputs else None
        self.graphs, self.kgs, self.pos = [], [], []
        for k in range(folds):
            gk = g.without_edges(edge_ids[(fold == k) & (edge_ids >= 0)])
            self.kgs.append(gk)
            self.graphs.append(hetero_graph(gk, node_inputs(gk, names) if inputs else None))
            s, d = src[fold == k], dst[fold == k]
            self.pos.append((s, d, None if pair_fn is None else pair_fn(gk, s, d)))
        # Pools and the pairs never to draw as negatives, in per-type positions.
        self.same_type = rel.src == rel.dst
        # Known nodes only, as the split's negatives (``data.split.known_nodes``): a node without
        # edges in the training graph would teach "no edges means negative".
        self.src_pool, self.dst_pool = known_nodes(g, rel.src), known_nodes(g, rel.dst)
        local = np.full(g.num_nodes, -1, dtype=np.int64)
        local[self.src_pool] = np.arange(len(self.src_pool))
        local[self.dst_pool] = np.arange(len(self.dst_pool))
        edges = g.relation_edges(rel)
        taken_s = [edges["src"].to_numpy(), split.pairs["src"].to_numpy()]
        taken_d = [edges["dst"].to_numpy(), split.pairs["dst"].to_numpy()]
        if g.excluded_adjacency is not None:  # true pairs that are not edges (masked, ontology-implied)
            ex = g.excluded_adjacency[self.src_pool][:, self.dst_pool].tocoo()
            taken_s.append(self.src_pool[ex.row])
            taken_d.append(self.dst_pool[ex.col])
        taken_s, taken_d = np.concatenate(taken_s), np.concatenate(taken_d)
        inside = (local[taken_s] >= 0) & (local[taken_d] >= 0)  # a split pair may have an end unknown to g
        taken = np.stack([local[taken_s[inside]], local[taken_d[inside]]])
        if self.same_type:
            taken = np.concatenate([taken, taken[::-1]], axis=1)
        size = len(self.src_pool) if self.same_type else (len(self.src_pool), len(self.dst_pool))
        self.sampler = NegativeSampler(torch.from_numpy(np.ascontiguousarray(taken)), size)

    def __len__(self) -> int:
        return len(self.graphs)

    def negatives(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        ei = self.sampler(n).numpy()
        return self.src_pool[ei[0]], self.dst_pool[ei[1]]

    def __getitem__(self, k: int) -> dict[str, torch.Tensor]:
        s, d, feats = self.pos[k]
        ns, nd = self.negatives(self.ratio * len(s))
        src, dst = np.concatenate([s, ns]), np.concatenate([d, nd])
        labels = np.concatenate([np.ones(len(s)), np.zeros(len(ns))])
        batch = pair_batch(self.kgs[k], src, dst, labels, None)
        if self.pair_fn is not None:
            batch["pair_feats"] = torch.from_numpy(np.concatenate([feats, self.pair_fn(self.kgs[k], ns, nd)]))
        batch["fold"] = torch.tensor(k)
        return batch

    def scale_sample(self) -> torch.Tensor:
        """Pair features of every fold's positives and one draw of its negatives (standardisation)."""
        return torch.cat([self[k]["pair_feats"] for k in range(len(self))])


class PairSteps(Dataset):
    """Mini-batch training steps: each item of ``data`` (the full training batch, or one fold of
    ``FoldPairs``, whose negatives are drawn at that moment) is fetched when its first step comes, its
    pairs put in a fresh random order (torch-seeded by fit's ``seed_everything``) and cut into steps
    of at most ``size`` pairs. The loader reads the steps in order, as Lightning's does here."""

    def __init__(self, data, size: int):
        self.data, self.size = data, size
        counts = [len(data[0]["label"])] if isinstance(data, list) else [len(p[0]) * (1 + data.ratio) for p in data.pos]
        self.steps = [(k, lo) for k, n in enumerate(counts) for lo in range(0, n, size)]
        self.item, self.order = None, None

    def __len__(self) -> int:
        return len(self.steps)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        k, lo = self.steps[i]
        if lo == 0:
            self.item = self.data[k]
            self.order = torch.randperm(len(self.item["label"]))
        rows = self.order[lo : lo + self.size]
        return {key: v if v.dim() == 0 else v[rows] for key, v in self.item.items()}  # "fold" is a scalar


def prior_logit(labels: np.ndarray) -> float:
    """log-odds of the positive rate (0 when a class is missing: no prior to encode)."""
    p = float(np.mean(labels)) if len(labels) else 0.0
    return float(np.log(p / (1 - p))) if 0 < p < 1 else 0.0


def pair_batch(
    graph_kg: KG, src: np.ndarray, dst: np.ndarray, labels: np.ndarray | None, pair_fn=None
) -> dict[str, torch.Tensor]:
    """Tensors src, dst (and label), plus ``pair_fn(graph_kg, src, dst)`` as pair_feats if given."""
    # np.array copies: torch warns on the read-only views polars hands out
    batch = {"src": torch.as_tensor(np.array(src, dtype=np.int64)), "dst": torch.as_tensor(np.array(dst, dtype=np.int64))}
    if labels is not None:
        batch["label"] = torch.as_tensor(np.asarray(labels, dtype=np.float32))
    if pair_fn is not None:
        batch["pair_feats"] = torch.from_numpy(pair_fn(graph_kg, src, dst))
    return batch


def _one_batch(batch: dict[str, torch.Tensor]) -> DataLoader:
    """A loader yielding the full batch once (batch_size=None: no collation, no splitting)."""
    return DataLoader([batch], batch_size=None)


def predict(module: TriageModule, batch: dict[str, torch.Tensor], graph=None) -> np.ndarray:
    """Scores of a batch on the module's graph (or ``graph``)."""
    module.eval()
    with torch.no_grad():
        return torch.sigmoid(module(batch, graph)).double().numpy()


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

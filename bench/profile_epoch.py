"""Where an epoch of rgcn_plus on the whole HPO graph goes (issue #57), counted by stage.

    py-spy record --native -r 20 -f raw -o outputs/epoch.raw -- python bench/profile_epoch.py   # pip install -e .[profile]
    python bench/profile_epoch.py --classify outputs/epoch.raw        # the table of stages
    python bench/profile_epoch.py --memory --scores a.npz             # an epoch's seconds, peaks, scores
    python bench/profile_epoch.py --same a.npz b.npz                  # two checkouts' scores, bit for bit?

The first command trains ``make discover``'s model (conf/experiment/discover_hpo.yaml: the whole HPO graph, no
cutoff; config overrides may follow) for ``--epochs`` epochs through ``train.fit`` itself, saving the resumable
checkpoint every epoch as a whole-HPO training does (its epochs outlast ``SAVE_EVERY_S``). The second reads
py-spy's collapsed stacks and counts each sample once, under the first stage in ``STAGES`` one of whose frames it
holds: the stages that contain others (the validation pass encodes and decodes too) come first. On a shared
machine read the proportions, not the seconds. Every run prints each epoch's wall and CPU seconds (this
process's: they move less with other work on the machine); ``--memory`` the peak RSS of each part of the fit
(sampled every 0.2 s) and the frames of the highest; ``--scores`` keeps the val/test scores, so that two
checkouts (``PYTHONPATH=<checkout>``: the config is read from the checkout imported) are compared with
``--same``. ``--split-backward`` times training steps' backward in two parts (the decoder's, then the encoder's
from the gradient of its states), which py-spy cannot tell apart: both run in torch's native autograd engine.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections import Counter
from contextlib import nullcontext
from pathlib import Path

import numpy as np


# (stage, frame patterns): a sample counts under the first stage one of whose patterns matches one of its
# frames ("Class.function (file:line)" as py-spy writes a Python frame; a pattern's "f" stands for a frame's
# function name, with or without its class). Setup stages, before the training loop, come first.
def f(name: str, file: str = "") -> str:
    return rf"([\w<>.]*\.)?{re.escape(name)} \({re.escape(file)}"


STAGES = [
    ("setup: name embeddings", [f("embed_names")]),
    ("setup: feature scale (one draw of negatives, their link features)", [f("scale_sample")]),
    ("setup: fold graphs' positives' link features", [f("FoldPairs.__init__") + ".*;" + f("link_features")]),
    ("setup: fold graphs (4 graphs, node inputs)", [f("FoldPairs.__init__")]),
    ("setup: val/test link features", [f("build_module")]),
    ("validation pass", [f("validation_step"), f("_EvaluationLoop.run")]),
    ("checkpoint", [f("save_checkpoint"), f("EpochSave.on_train_epoch_end")]),
    ("after training: validation head", [f("fit_head")]),
    ("after training: test scores", [f("predict")]),
    ("negative sampling", [f("negative_sampling"), f("NegativeSampler.__call__")]),
    ("link features (fresh negatives)", [f("link_features")]),
    ("encoder backward (message passing)", [f("_RelationMean.backward")]),
    ("encoder forward (message passing)", [f("encode")]),
    ("decoder forward (pair MLP)", [f("decode"), f("head_inputs")]),
    ("other backward (decoder MLP, inputs, bases)", [f("backward", "torch/"), f("_engine_run_backward")]),
    ("batching (fold items, steps)", [f("__getitem__", "hygrail/triage/train.py"), f("pair_batch")]),
    ("optimizer step (Adam's update)", [f("Adam.step") + r"(?!.*;([\w<>.]*\.)?Closure)"]),
]


FIT, LOOP = re.compile(f("fit", "hygrail/triage/train.py")), re.compile(f("_FitLoop.run"))
OUTSIDE = "setup: imports, config, load HPO + split (before fit)"
OTHER_SETUP, OTHER_EPOCH = "setup: other", "other (Lightning's loop, logging)"


def classify(raw: Path) -> list[tuple[str, int]]:
    """Samples per stage from py-spy's raw (collapsed) output: one line per stack, its count last."""
    counts: Counter = Counter()
    patterns = [(stage, [re.compile(p) for p in pats]) for stage, pats in STAGES]
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        if "TMonitor.run" in stack or "PeakWhere._run" in stack:  # tqdm's monitor thread, asleep; --memory's probe
            continue
        frames = stack.split(";")
        # each frame with the frames inside it, so a pattern may name an inner frame after ';'
        tails = [";".join(frames[i:]) for i in range(len(frames))]
        if not any(FIT.match(t) for t in tails):
            stage = OUTSIDE
        else:
            stage = next((s for s, pats in patterns if any(p.match(t) for t in tails for p in pats)), None)
            stage = stage or (OTHER_EPOCH if any(LOOP.match(t) for t in tails) else OTHER_SETUP)
        counts[stage] += int(n)
    order = {s: i for i, (s, _) in enumerate(STAGES)} | {OTHER_SETUP: -1, OTHER_EPOCH: len(STAGES), OUTSIDE: -2}
    return sorted(counts.items(), key=lambda kv: order[kv[0]])


def config(epochs: int, overrides: list[str]):
    """``make discover``'s config, from the conf/ beside the hygrail imported (so PYTHONPATH picks the checkout)."""
    from hydra import compose, initialize_config_dir

    import hygrail

    with initialize_config_dir(str(Path(hygrail.__file__).resolve().parents[1] / "conf"), version_base="1.3"):
        return compose("config", overrides=["experiment=discover_hpo", f"backbone.epochs={epochs}", *overrides])


def split_backward(split, cfg: dict, seed: int, steps: int) -> None:
    """Seconds of the decoder's and the encoder's part of ``steps`` training steps' backward (the same
    gradients as one backward: the states' gradient is handed on)."""
    import lightning as L
    import torch
    import torch.nn.functional as F

    from hygrail.triage.train import build_module, lean_rgcn

    L.seed_everything(seed, verbose=False)
    module, _, data = build_module(split, cfg)
    parts = Counter()
    with lean_rgcn(module.backbone, module.score_chunk is not None):
        for i in range(steps):
            t0 = time.perf_counter()
            batch = data[i]
            t1 = time.perf_counter()
            graph = module.fold_graphs[int(batch["fold"])]
            z = module.backbone.encode(graph)
            t2 = time.perf_counter()
            held = {t: v.detach().requires_grad_() for t, v in z.items()}
            logits = module.backbone.decode(graph, held, batch["src"], batch["dst"], batch.get("pair_feats"))
            loss = F.binary_cross_entropy_with_logits(logits + module.prior_logit, batch["label"])
            t3 = time.perf_counter()
            loss.backward()
            t4 = time.perf_counter()
            used = [t for t in z if held[t].grad is not None]  # the relation's two node types
            torch.autograd.backward([z[t] for t in used], [held[t].grad for t in used])
            t5 = time.perf_counter()
            parts.update({"batch (negatives + their link features)": t1 - t0, "encoder forward": t2 - t1,
                          "decoder forward": t3 - t2, "decoder backward": t4 - t3, "encoder backward": t5 - t4})
    total = sum(parts.values())
    for k, v in parts.items():
        print(f"{k:45s} {v / steps:7.3f} s a step  {100 * v / total:5.1f}%")


# The parts of a fit whose peaks ``--memory`` reports: the innermost of these frames the main thread is in.
PARTS = [("after training: validation head", "fit_head"), ("after training: test scores", "predict"),
         ("the epochs", "_run_stage"), ("setup (build_module)", "build_module")]


class PeakWhere:
    """The process's RSS every ``every`` s in a thread, and the main thread's frames then (``--memory``: where a
    training's peak is, without a memory profiler's overhead): the peak of each of ``PARTS`` and the innermost
    hygrail frames at the overall peak."""

    def __init__(self, every: float = 0.2):
        import threading

        self.every, self.peak, self.where, self.parts = every, 0, "", {}
        self.main = threading.main_thread().ident
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import traceback

        import psutil

        proc = psutil.Process()
        while not self.done.wait(self.every):
            rss = proc.memory_info().rss
            frames = traceback.extract_stack(sys._current_frames()[self.main])
            names = {f.name for f in frames}
            part = next((label for label, name in PARTS if name in names), "before fit")
            self.parts[part] = max(self.parts.get(part, 0), rss)
            if rss > self.peak:
                ours = [f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in frames if "hygrail" in f.filename]
                self.peak, self.where = rss, " < ".join(reversed(ours[-4:]))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()


class EpochClock:
    """Wall and CPU seconds (this process: ``time.process_time``) of each epoch, validation included: an epoch's
    cost as two checkouts compare it on a busy machine (CPU seconds move less with the load than wall ones)."""

    def __init__(self):
        self.marks: list[tuple[float, float]] = []

    def patch(self, train_module) -> None:
        clock, base = self, train_module.EpochBar

        class Timed(base):
            def on_train_epoch_start(self, trainer, pl_module):
                clock.marks.append((time.perf_counter(), time.process_time()))

            def on_train_epoch_end(self, trainer, pl_module):
                clock.marks.append((time.perf_counter(), time.process_time()))
                super().on_train_epoch_end(trainer, pl_module)

        train_module.EpochBar = Timed

    def epochs(self) -> list[tuple[float, float]]:
        return [(w1 - w0, c1 - c0) for (w0, c0), (w1, c1) in zip(self.marks[::2], self.marks[1::2])]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--classify", type=Path, help="py-spy raw output to count by stage")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--split-backward", type=int, metavar="STEPS", help="time STEPS steps' backward in two parts")
    ap.add_argument("--memory", action="store_true", help="print the peak RSS and the frames it happened in")
    ap.add_argument("--scores", type=Path, help="write the fit's val/test scores here (.npz) to compare two checkouts")
    ap.add_argument("--same", type=Path, nargs=2, metavar="NPZ", help="are two --scores files equal, bit for bit?")
    ap.add_argument("overrides", nargs="*", help="config overrides after experiment=discover_hpo, e.g. data.subgraph_nodes=3000")
    args = ap.parse_args()
    if args.same:
        a, b = (np.load(f) for f in args.same)
        for part in ("val", "test"):
            print(f"{part}: {len(a[part])} scores, bit for bit equal: {np.array_equal(a[part], b[part])}, "
                  f"largest difference {np.abs(a[part] - b[part]).max():.3g}")
        return
    if args.classify:
        rows = classify(args.classify)
        total = sum(n for _, n in rows)
        epoch = sum(n for s, n in rows if not s.startswith(("setup", "after")))
        print("| stage | samples | share of all | share of the epoch |\n|---|---|---|---|")
        for stage, n in rows:
            in_epoch = "" if stage.startswith(("setup", "after")) else f"{100 * n / epoch:.1f}%"
            print(f"| {stage} | {n} | {100 * n / total:.1f}% | {in_epoch} |")
        return
    import torch

    from hygrail.stages import build_split, plain
    from hygrail.triage import train

    cfg = config(args.epochs, args.overrides)
    torch.set_num_threads(int(cfg.threads))
    t0 = time.perf_counter()
    _, split = build_split(cfg)
    backbone = plain(cfg.backbone)
    print(f"split {time.perf_counter() - t0:.0f} s; threads {cfg.threads}", flush=True)
    if args.split_backward:
        split_backward(split, backbone, int(cfg.seed), args.split_backward)
        return
    clock = EpochClock()
    clock.patch(train)
    with tempfile.TemporaryDirectory() as resume, PeakWhere() if args.memory else nullcontext() as peak:
        run = train.fit(split, backbone, int(cfg.seed), progress=True, resume=Path(resume), save_every_s=0.0)
    print(f"fit {run.seconds:.0f} s, best epoch {run.best_epoch}; epochs (wall s, CPU s): "
          + ", ".join(f"({w:.1f}, {c:.1f})" for w, c in clock.epochs()), flush=True)
    if args.memory:
        print(f"peak RSS {peak.peak / 2**30:.2f} GB at {peak.where}; by part: "
              + ", ".join(f"{part} {rss / 2**30:.2f} GB" for part, rss in peak.parts.items()))
    if args.scores:
        np.savez(args.scores, val=run.scores["val"], test=run.scores["test"])


if __name__ == "__main__":
    sys.exit(main())

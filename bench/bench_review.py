"""Benchmark the LLM review client and the embedded judge.

1. Scripted OpenAI-compatible server (separate process, fixed 200 ms per reply): throughput at
   concurrency 1, 8, 32, 64 against the C x sequential ideal (target >= 0.8), the client's CPU
   seconds per call, and the cost of a cache hit.
2. Embedded Qwen2.5-Coder-1.5B (if its chunk packages are installed), `make run`'s judge
   (conf/experiment/default_run.yaml: its evidence mode and few-shot prefix, built from the split's
   training pairs) on test hypotheses of its split: median seconds per review and new (not
   prefix-cached) prompt tokens per review; target <= 3.5 s on 2 cores. ``--compare`` then reviews the
   same hypotheses with the paper's template evidence under the new settings (verdict only, 4
   template examples) and the previous ones (a reasoning sentence, no examples, llama.cpp's default
   polling), one server after the other, and prints the per-review speed-up with the load of each.
3. ``--band N``: the embedded judge on N routed CHM-APL hypotheses of `make run`'s cell (val and
   test; every band positive plus a seeded random sample of band negatives: a class-stratified
   sample, on which AUC is unbiased): the judge's ranking AUC (P(yes)) beside the GNN score's on the
   same hypotheses, with a paired bootstrap interval of the difference. Goal: judge >= GNN + 0.10.
   Replies are cached under --outputs, so a rerun costs seconds.

    .venv/bin/python bench/bench_review.py [--embedded-n 12] [--compare] [--skip-embedded] [--threads N]
    .venv/bin/python bench/bench_review.py --skip-scripted --skip-embedded --band 200 [llm.fewshot.n=0 ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hygrail.review.client import ReviewClient  # noqa: E402
from hygrail.review.contract import ReviewRequest  # noqa: E402
from hygrail.review.embedded import ModelUnavailable, resolve_model  # noqa: E402

LATENCY = 0.2


def start_scripted(latency: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "scripted_server.py"), "--latency", str(latency)],
                            stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def cpu_seconds(pid: int) -> float:
    """User+system CPU seconds of another process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scripted_cfg(url: str, concurrency: int) -> dict:
    return {"name": "scripted", "model": "scripted-model", "base_url": url, "timeout": 30, "max_retries": 0,
            "concurrency": concurrency, "max_tokens": 256}


def bench_throughput() -> None:
    proc, url = start_scripted(LATENCY)
    try:
        print(f"scripted server, {LATENCY * 1000:.0f} ms per reply, separate process")
        print(f"{'C':>4} {'reviews':>8} {'wall s':>8} {'rev/s':>8} {'ideal':>8} {'ratio':>6} "
              f"{'client CPU ms/call':>19} {'server CPU ms/call':>19}")
        seq_rate, ratios = None, {}
        for c in (1, 8, 32, 64):
            n = 10 if c == 1 else 8 * c
            client = ReviewClient(scripted_cfg(url, c), None, progress=False)
            reqs = [ReviewRequest(f"C{c} hypothesis {i}", "evidence text " * 20) for i in range(n)]
            # warm-up batch (distinct requests): imports, and C keep-alive connections opened
            client.review_many([ReviewRequest(f"warm C{c} {i}") for i in range(c)])
            t0, cpu0, srv0 = time.perf_counter(), time.process_time(), cpu_seconds(proc.pid)
            results = client.review_many(reqs)
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            srv = cpu_seconds(proc.pid) - srv0
            assert all(r.ok for r in results), [r.failure for r in results if not r.ok][:3]
            rate = n / wall
            seq_rate = seq_rate or rate
            ideal = c * seq_rate
            ratios[c] = rate / ideal
            print(f"{c:>4} {n:>8} {wall:>8.2f} {rate:>8.1f} {ideal:>8.1f} {rate / ideal:>6.2f} {1000 * cpu / n:>19.2f} {1000 * srv / n:>19.2f}")
        worst = min(ratios, key=ratios.get)
        print(f"target ratio >= 0.8 at every C: {'met' if ratios[worst] >= 0.8 else 'MISSED'} "
              f"(lowest {ratios[worst]:.2f} at C={worst}; transport {client.cfg['transport']})")
    finally:
        proc.kill()
        proc.wait()

    proc, url = start_scripted(0.0)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            n = 200
            reqs = [ReviewRequest(f"overhead hypothesis {i}", "evidence text " * 20) for i in range(n)]
            client = ReviewClient(scripted_cfg(url, 1), Path(tmp) / "llm.db", progress=False)
            client.review_many(reqs[:2])
            t0, cpu0 = time.perf_counter(), time.process_time()
            client.review_many(reqs)
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            print(f"\nzero-latency server, C=1, with cache writes: {1000 * wall / n:.2f} ms/call wall, "
                  f"{1000 * cpu / n:.2f} ms/call client CPU (upper bound of client overhead)")
            t0 = time.perf_counter()
            hits = client.review_many(reqs)
            wall = time.perf_counter() - t0
            assert all(r.cache_hit for r in hits)
            print(f"cache hit: {1000 * wall / n:.3f} ms/review (0 HTTP calls)")
    finally:
        proc.kill()
        proc.wait()


# The previous embedded settings (before the few-shot/verdict-first change), for --compare: a
# reasoning sentence after the verdict, no examples, llama.cpp's default polling, template evidence.
# It asks for no stated confidence either (main did: ~8 more generated tokens), so the measured
# ratio is conservative.
PREVIOUS = ["evidence=template", "llm.reasoning=full", "llm.reasoning_max_chars=240", "llm.max_tokens=160",
            "llm.fewshot=null", "llm.decision=paper", "llm.embedded.poll=50"]
# The new settings with the paper's template evidence (conf/llm/embedded.yaml's own few-shot block).
TEMPLATE = ["evidence=template", "llm.fewshot.n=4", "llm.fewshot.positives=2"]


def run_config(overrides: list[str], outputs: str):
    """`make run`'s HyGRAIL cell config (experiment=default_run) with Hydra overrides."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=["experiment=default_run", "method=hygrail", f"paths.outputs={outputs}",
                                            *overrides])


def embedded_cfg(cfg, threads: int | None) -> dict:
    llm = OmegaConf.to_container(cfg.llm, resolve=True)
    if threads:  # else the config's (make run's: 1)
        llm["embedded"]["threads"] = threads
    return llm


def load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} / {os.cpu_count()} cores"


def review_setup(overrides: list[str], outputs: str, threads: int, n: int) -> tuple[dict, list, list]:
    """(llm config, few-shot examples, requests) of `make run`'s cell with ``overrides``: the requests
    are n test hypotheses of the split (seeded) as the cell's evidence mode renders them."""
    from hygrail.evidence.mode import Hypothesis, load_mode
    from hygrail.stages import build_split
    from hygrail.review.fewshot import build, choose

    cfg = run_config(overrides, outputs)
    llm = embedded_cfg(cfg, threads)
    _, split = build_split(cfg)
    mode = load_mode(OmegaConf.to_container(cfg.evidence, resolve=True), OmegaConf.to_container(cfg.relation.templates))
    examples = build(choose(split, llm.get("fewshot"), int(cfg.seed)), mode, split.train_graph, split.relation)
    test = split.part("test")
    rows = np.random.default_rng(0).choice(test.height, n + 1, replace=False)
    hyps = [Hypothesis(int(test["src"][int(i)]), int(test["dst"][int(i)])) for i in rows]
    prepared = mode.prepare(split.train_graph, split.relation, hyps, None)
    return llm, examples, [ReviewRequest(p.statement, p.text) for p in prepared]


def bench_embedded(n: int, threads: int, compare: bool, overrides: list[str], outputs: str) -> None:
    """Seconds per review of `make run`'s judge (and with ``compare`` the template evidence under the
    new and the previous settings), one review at a time. One llama.cpp server at a time (each holds
    ~1 GB and two would share the 2 cores): the setups run one after the other, each line says the
    load it ran under."""
    try:
        t0 = time.perf_counter()
        path = resolve_model(OmegaConf.load(ROOT / "conf" / "llm" / "embedded.yaml").embedded.model)
        print(f"\nembedded model {path.name}: ready in {time.perf_counter() - t0:.1f} s (assembly/verification)")
    except ModelUnavailable as e:
        print(f"\nembedded 1.5B skipped: {e}")
        return
    setups = {"make run": overrides}
    if compare:
        setups |= {"template, new settings": [*overrides, *TEMPLATE], "template, previous settings": [*overrides, *PREVIOUS]}
    results: dict[str, list] = {}
    llms: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (k, o) in enumerate(setups.items()):
            llm, examples, reqs = review_setup(o, outputs, threads, n)
            llms[k] = llm
            with ReviewClient(llm, Path(tmp) / f"{i}.db", progress=False) as client:
                t0 = time.perf_counter()
                client.review_many(reqs[-1:], examples)
                print(f"{k}: server start + first review (the fixed prefix, {len(examples)} examples): "
                      f"{time.perf_counter() - t0:.1f} s; {load()}")
                # one at a time: per-review latency as the pipeline sees it with concurrency 1
                results[k] = [r for req in reqs[:n] for r in client.review_many([req], examples)]
    med = statistics.median
    for k, res in results.items():
        ok = [r for r in res if r.ok]
        print(f"{k}: {len(ok)}/{len(res)} parsed; failures {[r.failure for r in res if not r.ok]}")
        print(f"  median s/review {med(r.latency for r in res):.2f} (min {min(r.latency for r in res):.2f}, "
              f"max {max(r.latency for r in res):.2f}); threads={llms[k]['embedded']['threads']}")
        print(f"  median prompt tokens {med(r.prompt_tokens for r in res):.0f}, new prompt tokens "
              f"{med(r.new_prompt_tokens for r in res):.0f}, completion tokens {med(r.completion_tokens for r in res):.0f}")
        for r in res[:2]:
            print(f"  {r.review} P(yes)={r.confidence:.3f} ({r.confidence_source}) raw={r.raw[:100]!r}" if r.ok
                  else f"  FAIL {r.failure}: {r.raw[:100]!r}")
    if compare:
        old = results["template, previous settings"]
        for k in ("template, new settings", "make run"):
            ratio = med(a.latency / b.latency for a, b in zip(old, results[k]))
            print(f"speed-up of {k!r} over the previous settings, median of per-review ratios on the same hypotheses "
                  f"(run one after the other: see the load lines): {ratio:.2f}x")
    new = med(r.latency for r in results["make run"])
    print(f"target median <= 3.5 s per review (make run's judge): {'met' if new <= 3.5 else 'MISSED'} ({new:.2f} s; {load()})")


def band_sample(labels: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Every positive, then uniformly drawn negatives up to n (seeded): a class-stratified sample."""
    pos, neg = np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)
    rng = np.random.default_rng(seed)
    return np.sort(np.concatenate([pos, rng.choice(neg, max(0, min(len(neg), n - len(pos))), replace=False)]))


def paired_bootstrap(y: np.ndarray, a: np.ndarray, b: np.ndarray, seed: int, reps: int = 2000) -> tuple[float, float]:
    """90% interval of AUC(a) - AUC(b), resampling positives and negatives separately."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    diffs = []
    for _ in range(reps):
        i = np.concatenate([rng.choice(pos, len(pos)), rng.choice(neg, len(neg))])
        diffs.append(roc_auc_score(y[i], a[i]) - roc_auc_score(y[i], b[i]))
    return float(np.quantile(diffs, 0.05)), float(np.quantile(diffs, 0.95))


def bench_band(n: int, threads: int, overrides: list[str], outputs: str, seed: int) -> None:
    """Judge vs GNN ranking AUC on routed CHM-APL hypotheses of `make run`'s cell."""
    from sklearn.metrics import roc_auc_score

    from hygrail.evidence.mode import load_mode
    from hygrail.stages import build_split, gnn_stage, hypotheses
    from hygrail.review.fewshot import choose
    from hygrail.review.stage import Reviewer

    cfg = run_config(overrides, outputs)
    kg, split = build_split(cfg)
    t, _, _ = gnn_stage(cfg, kg, split)
    parts = {"val": (t.route_val, t.scores.val), "test": (t.route_test, t.scores.test)}
    band = {name: np.flatnonzero(route == -1) for name, (route, _) in parts.items()}
    labels = {name: split.part(name)["label"].to_numpy()[band[name]] for name in parts}
    y_all = np.concatenate(list(labels.values()))
    picked = band_sample(y_all, n, seed)
    n_val = len(band["val"])
    pick = {"val": band["val"][picked[picked < n_val]], "test": band["test"][picked[picked >= n_val] - n_val]}
    print(f"\nband [{t.band[0]:.3f}, {t.band[1]:.3f}] (GNN threshold {t.threshold:.3f}): {n_val} val + "
          f"{len(band['test'])} test routed, {int(y_all.sum())} positives; sample {len(picked)} "
          f"(all positives + {len(picked) - int(y_all.sum())} random negatives, seed {seed}); {load()}")
    llm = embedded_cfg(cfg, threads) if cfg.llm.get("embedded") else OmegaConf.to_container(cfg.llm, resolve=True)
    mode = load_mode(OmegaConf.to_container(cfg.evidence, resolve=True), OmegaConf.to_container(cfg.relation.templates),
                     t.calibrated())  # the cell's validation-calibrated cuts, as run_hygrail passes them
    fewshot = choose(split, llm.get("fewshot"), int(cfg.seed))
    y, judge, gnn, where = [], [], [], []
    t0 = time.perf_counter()
    with Reviewer(llm, mode, split.train_graph, split.relation, Path(outputs) / "cache" / "llm", int(cfg.seed),
                  fewshot) as reviewer:
        for name, (_, scores) in parts.items():
            reviewed = reviewer.review(hypotheses(split.part(name), pick[name], scores))
            labels = split.part(name)["label"].to_numpy()[pick[name]]
            for r, lab in zip(reviewed, labels):
                if r.result is not None and r.result.ok:
                    y.append(lab)
                    judge.append(r.result.confidence)
                    gnn.append(r.hypothesis.score)
                    where.append(name)
        usage = reviewer.client.usage()
    y, judge, gnn, where = np.array(y), np.array(judge), np.array(gnn), np.array(where)
    print(f"{len(y)} reviewed with a verdict ({int(y.sum())} positives) in {time.perf_counter() - t0:.0f} s "
          f"({usage['calls']} calls, {usage['cache_hits']} cached); llm {llm['name']}, few-shot {len(fewshot)}, "
          f"reasoning {llm.get('reasoning', 'full')}")
    a_judge, a_gnn = roc_auc_score(y, judge), roc_auc_score(y, gnn)
    lo, hi = paired_bootstrap(y, judge, gnn, seed)
    print(f"ranking AUC on the band sample: judge P(yes) {a_judge:.3f} | GNN score {a_gnn:.3f} | "
          f"difference {a_judge - a_gnn:+.3f} (90% paired bootstrap {lo:+.3f} .. {hi:+.3f})")
    for name in parts:  # val also chose the configuration (few-shot, evidence): test is the unseen half
        sel = where == name
        if 0 < y[sel].sum() < sel.sum():
            print(f"  {name}: judge {roc_auc_score(y[sel], judge[sel]):.3f} | GNN {roc_auc_score(y[sel], gnn[sel]):.3f} "
                  f"({int(y[sel].sum())} positives, {int(sel.sum())} hypotheses)")
    print(f"P(yes): positives median {np.median(judge[y == 1]):.3f}, negatives median {np.median(judge[y == 0]):.3f}; "
          f"'yes' verdicts {(judge >= 0.5).sum()} of {len(y)}")
    print(f"goal judge AUC >= GNN AUC + 0.10: {'met' if a_judge >= a_gnn + 0.10 else 'MISSED'}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedded-n", type=int, default=12)
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: the config's)")
    ap.add_argument("--compare", action="store_true", help="interleave the previous embedded settings (speed ratio)")
    ap.add_argument("--skip-scripted", action="store_true")
    ap.add_argument("--skip-embedded", action="store_true")
    ap.add_argument("--band", type=int, default=0, help="review this many routed band hypotheses, print judge vs GNN AUC")
    ap.add_argument("--seed", type=int, default=0, help="seeds the band sample and the bootstrap")
    ap.add_argument("--outputs", default=os.environ.get("HYGRAIL_OUTPUTS", "outputs"),
                    help="where the GNN scores and replies are cached (as the sweep's paths.outputs)")
    ap.add_argument("overrides", nargs="*", help="Hydra overrides of `make run`'s cell, e.g. llm.fewshot.n=0")
    args = ap.parse_args()
    if not args.skip_scripted:
        bench_throughput()
    if not args.skip_embedded:
        bench_embedded(args.embedded_n, args.threads, args.compare, args.overrides, args.outputs)
    if args.band:
        bench_band(args.band, args.threads, args.overrides, args.outputs, args.seed)


if __name__ == "__main__":
    main()

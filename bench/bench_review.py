"""Benchmark the LLM review client.

1. Scripted OpenAI-compatible server (separate process, fixed 200 ms per reply): throughput at
   concurrency 1, 8, 32, 64 against the C x sequential ideal (target >= 0.8), the client's CPU
   seconds per call, and the cost of a cache hit.
2. Embedded Qwen2.5-Coder-1.5B (if its chunk packages are installed): median seconds per review
   and new (not prefix-cached) prompt tokens per review, on template-style evidence.

    .venv/bin/python bench/bench_review.py [--embedded-n 6] [--skip-embedded] [--threads 2]
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


EVIDENCE = (
    "The following evidence about {m} and {a} has been extracted from the knowledge graph: "
    "{m} is strongly characterized by thin film (norm=0.82, count=41), representing a well-established and "
    "defining trait. {m} shows a notable association with band gap (norm=0.55, count=9), suggesting a "
    "promising but less-explored characteristic. {a} fundamentally requires conductivity (norm=0.77, count=35), "
    "a well-documented core requirement. {a} appears to benefit from stability (norm=0.41, count=6), an "
    "emerging but less-explored requirement. A plausible connection exists: {m} exhibits band gap, which "
    "relates to {a} (path score=0.412, suggesting moderate evidence). A path exists via material, but this is a "
    "generic/common node (path score=0.103, providing weak discriminative evidence). (GNN prediction score: 0.4312)"
)
PAIRS = [("ZnO", "gas sensor"), ("LiCoO2", "cathode"), ("Bi2Te3", "thermoelectric generator"),
         ("TiO2", "photocatalysis"), ("graphene", "supercapacitor"), ("Fe3O4", "drug delivery"),
         ("CsPbI3", "solar cell"), ("SiC", "power electronics"), ("MoS2", "transistor"), ("Al2O3", "gate dielectric")]


def bench_embedded(n: int, threads: int) -> None:
    cfg = OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "llm" / "embedded.yaml"), resolve=True)
    try:
        t0 = time.perf_counter()
        path = resolve_model(cfg["embedded"]["model"])
        print(f"\nembedded model {path.name}: ready in {time.perf_counter() - t0:.1f} s (assembly/verification)")
    except ModelUnavailable as e:
        print(f"\nembedded 1.5B skipped: {e}")
        return
    cfg["embedded"]["threads"] = threads
    reqs = [ReviewRequest(f"The material {m} can be effectively used for {a}.", EVIDENCE.format(m=m, a=a))
            for m, a in (PAIRS * (n // len(PAIRS) + 1))[:n]]
    with tempfile.TemporaryDirectory() as tmp, ReviewClient(cfg, Path(tmp) / "llm.db", progress=False) as client:
        t0 = time.perf_counter()
        client.review_many([ReviewRequest("The material Cu can be effectively used for wiring.", EVIDENCE.format(m="Cu", a="wiring"))])
        print(f"server start + first (cold-prefix) review: {time.perf_counter() - t0:.1f} s")
        results = []
        for r in reqs:  # one at a time: per-review latency as the pipeline sees it with concurrency 1
            results.extend(client.review_many([r]))
    ok = [r for r in results if r.ok]
    print(f"{len(ok)}/{len(results)} parsed; sources {sorted({r.confidence_source for r in ok})}; "
          f"failures {[r.failure for r in results if not r.ok]}")
    med = statistics.median
    print(f"median s/review {med(r.latency for r in results):.2f} (min {min(r.latency for r in results):.2f}, "
          f"max {max(r.latency for r in results):.2f}); threads={threads}")
    print(f"median prompt tokens {med(r.prompt_tokens for r in results):.0f}, new prompt tokens "
          f"{med(r.new_prompt_tokens for r in results):.0f}, completion tokens {med(r.completion_tokens for r in results):.0f}")
    for r in results[:3]:
        print(f"  {r.review} conf={r.confidence:.3f} ({r.confidence_source}) raw={r.raw[:140]!r}" if r.ok
              else f"  FAIL {r.failure}: {r.raw[:140]!r}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedded-n", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip-embedded", action="store_true")
    args = ap.parse_args()
    bench_throughput()
    if not args.skip_embedded:
        bench_embedded(args.embedded_n, args.threads)


if __name__ == "__main__":
    main()

"""One list of the whole-space retrospective: scores in walk order -> the list and its tie groups.

    python bench/bench_sort_keys.py            # 57,198,348 scores (whole HPO at 2015)
    python bench/bench_sort_keys.py --n 5000000

Times ``retro._sorted_keys`` (one in-place sort of uint64 keys, plus reading the list back) against
the stable argsort it replaced (ab8dc25), on one thread, for random float32 logits, float64 counts
(exact in float32) and continuous float64 scores (re-sorted by the exact score within float32 groups),
and checks both give the same list. Prints seconds and the ratio.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from hygrail.discovery import retro


def argsort_list(s: np.ndarray, tie_order: np.ndarray) -> np.ndarray:
    """The list and its sorted scores (the tie groups), as ab8dc25's parent computed them."""
    t = s[tie_order]
    np.negative(t, out=t)
    order = tie_order[np.argsort(t, kind="stable")]
    t.sort()
    return order


def keys_list(s: np.ndarray, tie_order: np.ndarray) -> np.ndarray:
    """The list and its tie groups as ``retro.retrospective`` computes them now."""
    key = retro._sorted_keys(s, tie_order)
    order = retro._chunked(len(s), tie_order.dtype, lambda i: tie_order[(key[i] & retro._LOW).astype(np.intp)])
    key >>= np.uint64(32)
    return order


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=57_198_348)
    n = ap.parse_args().n
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    tie_order = rng.permutation(n).astype(np.int32)
    cases = {"float32 logits": rng.standard_normal(n).astype(np.float32),
             "float64 counts": rng.integers(0, 2000, n).astype(np.float64),
             "float64 continuous": rng.standard_normal(n)}
    print(f"{'scores':<20} {'argsort s':>10} {'keys s':>8} {'ratio':>6}")
    for name, s in cases.items():
        t0 = time.perf_counter()
        a = argsort_list(s, tie_order)
        t1 = time.perf_counter()
        b = keys_list(s, tie_order)
        t2 = time.perf_counter()
        if not np.array_equal(a, b):
            raise SystemExit(f"{name}: the two lists differ")
        del a, b
        print(f"{name:<20} {t1 - t0:>10.1f} {t2 - t1:>8.1f} {(t1 - t0) / (t2 - t1):>6.1f}", flush=True)


if __name__ == "__main__":
    main()

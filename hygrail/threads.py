"""How many threads a job computes on (``threads`` in conf/config.yaml, issue #48).

Why: a newcomer's first ``make discover`` trained for 25 minutes on one core of two, because every
job ran at one thread. ``threads: auto`` takes the cores this process may run on
(``os.sched_getaffinity``) less the load already on them (the 1-minute load average's whole part), at
least one: on an idle 2-core laptop both cores, beside another job one. A number sets it;
``HYGRAIL_THREADS`` (read by the config) overrides it without editing a file: the test suite and CI
set 1, as DESIGN.md asks (with two threads and any other load on a 2-core box, epochs got 10-100x
slower). The count is read once per config (the resolver caches it) and pinned by the sweep's
``main`` before the job starts: read again after minutes of work, the load average would count the
job itself and halve its threads.

A model trained at another thread count differs in its last bits (weights by ~3e-7 after 3 epochs at
1 vs 2 threads, experiments/discovery.md), so a cached model is reused whatever the count it was
trained at: the triage cache key does not name it.
"""

from __future__ import annotations

import os

from omegaconf import OmegaConf


def resolve(value) -> int:
    """``auto`` (module docstring) or a positive whole number, as an int; else a one-line ValueError."""
    if str(value).strip().lower() == "auto":
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        # whole cores busy: a job beside us keeps the load at >= 1; a start-up's or a finished job's
        # fraction does not take a core (rounded, a load of 0.5 put a cold make discover on one thread)
        busy = int(os.getloadavg()[0]) if hasattr(os, "getloadavg") else 0
        return max(1, cores - busy)
    try:
        n = int(str(value))
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"threads={value!r}: expected auto or a whole number >= 1")
    return n


if not OmegaConf.has_resolver("hygrail_threads"):
    OmegaConf.register_new_resolver("hygrail_threads", resolve, use_cache=True)

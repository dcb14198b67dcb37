"""A newcomer's commands, timed (issue #48): wall, peak RSS and the cores used by ``make discover``,
``make run`` and ``make test``, cold (an empty outputs folder and name-vector cache: no model, stack, name vectors or
MLflow store; the venv and the downloaded weights stay) and warm (the same folder again).

    python bench/bench_make.py                          # make discover, cold then warm
    python bench/bench_make.py --targets discover,run   # each cold then warm
    python bench/bench_make.py --targets test --clone   # make test on a fresh clone beside ../shared, venv included

Each command runs in a process group of its own with ``HYGRAIL_OUTPUTS`` set to a fresh folder
(kept, and printed, for a look afterwards). Every 0.5 s the RSS of every process of the group is
summed (make, Python, the judge's server): the peak is that sum's largest value, which is what a
laptop's memory must hold; the line the command printed last before it says where it happened. Cores = CPU seconds of the finished children (``getrusage``) / wall. For
``make discover`` the time of the first answer (the line ``discover.first_answer`` prints when the
stack-without-GNN lists are on the page) is printed too. Targets (issue #48): make discover cold
<= 15 min with a first answer <= 5 min, make test <= 6 min on a fresh clone, every peak <= 4 GB.
A figure taken beside other work says so: the load average at the start and the end is printed.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
FIRST_ANSWER = "first answer ("  # hygrail/discovery/run.py prints it once the first page is written


def group_rss(pgid: int) -> int:
    total = 0
    for p in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(p.pid) == pgid:
                total += p.memory_info().rss
        except (psutil.Error, ProcessLookupError, PermissionError):
            continue
    return total


def settle(limit_s: float = 240.0) -> None:
    """Wait (up to ``limit_s``) for the 1-minute load average to fall below 0.5: ``threads: auto``
    counts the cores less that load when the command starts, and a job that just ended still
    counts in it for a minute or two."""
    t0 = time.perf_counter()
    while os.getloadavg()[0] >= 0.5 and time.perf_counter() - t0 < limit_s:
        time.sleep(5)


def timed(cmd: list[str], cwd: Path, env: dict, log: Path) -> dict:
    """Run ``cmd``; wall, peak group RSS, cores, first-answer seconds, exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    first = None
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        peak, done, last, at_peak = 0, threading.Event(), [""], ""

        def sample():
            nonlocal peak, at_peak
            while not done.is_set():
                rss = group_rss(proc.pid)
                if rss > peak:  # where the peak happens: the last line printed before it
                    peak, at_peak = rss, f"{time.perf_counter() - t0:.0f} s: {last[0][:120]}"
                done.wait(0.5)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            buf = ""
            while chunk := proc.stdout.read1(65536).decode(errors="replace"):  # tqdm ends its lines with \r
                out.write(chunk)
                out.flush()
                buf += chunk
                *lines, buf = re.split(r"[\r\n]", buf)
                for line in lines:
                    if line.strip():
                        last[0] = line.strip()
                    if first is None and FIRST_ANSWER in line:
                        first = time.perf_counter() - t0
            rc = proc.wait()
        except KeyboardInterrupt:
            os.killpg(proc.pid, signal.SIGTERM)
            raise
        finally:
            done.set()
            sampler.join()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return dict(wall=wall, peak_gb=peak / 2**30, at_peak=at_peak, cores=cpu / wall, first=first, rc=rc,
                load=f"{load0:.1f} -> {os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--targets", default="discover", help="make targets, comma-separated (discover, run, test, ...)")
    ap.add_argument("--clone", action="store_true",
                    help="run in a fresh git clone beside this checkout (so ../shared is found), venv included")
    ap.add_argument("--make-args", default="", help="extra make arguments, e.g. DATA=synthesis_recipes")
    ap.add_argument("--cold-only", action="store_true", help="skip the warm rerun")
    args = ap.parse_args()
    cwd = ROOT
    if args.clone:
        cwd = Path(tempfile.mkdtemp(prefix="bench-clone-", dir=ROOT.parent))
        subprocess.run(["git", "clone", "-q", str(ROOT), str(cwd)], check=True)
    rows = []
    for target in args.targets.split(","):
        outputs = Path(tempfile.mkdtemp(prefix=f"bench-make-{target}-"))
        # unbuffered: the first answer's line is seen when printed, not when the pipe's buffer fills
        # and a fresh name-vector cache (~/.cache/hygrail/names otherwise: a machine's first run fills it)
        env = {**os.environ, "HYGRAIL_OUTPUTS": str(outputs), "PYTHONUNBUFFERED": "1",
               "HYGRAIL_NAMES_CACHE": str(outputs / "names")}
        for phase in ("cold",) if args.cold_only else ("cold", "warm"):
            log = outputs.parent / f"{outputs.name}-{phase}.log"
            cmd = ["make", target, *args.make_args.split()]
            settle()
            print(f"== {' '.join(cmd)} ({phase}; outputs {outputs}, log {log}, in {cwd})", flush=True)
            r = timed(cmd, cwd, env, log)
            rows.append((f"make {target} {args.make_args}".strip(), phase, r))
            first = f"{r['first']:.0f} s" if r["first"] is not None else "-"
            print(f"   wall {r['wall']:.0f} s, peak {r['peak_gb']:.2f} GB, cores {r['cores']:.2f}, first answer {first}, "
                  f"exit {r['rc']}, load {r['load']}\n   peak at {r['at_peak']}", flush=True)
    print("\n| command | run | wall | first answer | peak RSS | cores used | exit | load (start -> end) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, phase, r in rows:
        first = f"{r['first']:.0f} s" if r["first"] is not None else ""
        print(f"| `{name}` | {phase}{' (fresh clone)' if args.clone else ''} | {r['wall']:.0f} s | {first} | "
              f"{r['peak_gb']:.2f} GB | {r['cores']:.2f} | {r['rc']} | {r['load']} |")


if __name__ == "__main__":
    main()

"""A newcomer's commands, timed on a fresh clone (issues #48, #57).

Wall, peak RSS and the cores used by ``make test``, ``make discover`` and ``make run``, cold (an empty outputs
folder and name-vector cache: no model, stack, name vectors or MLflow store) and warm (the same folder again).

    python bench/bench_make.py --clone                  # issue #57's table: make test (venv + tests), make discover
                                                        # cold and warm, make run cold and warm, in a fresh clone
    python bench/bench_make.py --targets discover       # make discover in this checkout, cold then warm
    python bench/bench_make.py --clone --targets test   # make test on a fresh clone only

With ``--clone`` the commands run in a fresh git clone beside this checkout (so ../shared is found) with an
empty uv cache (``UV_CACHE_DIR``, removed at the end; a newcomer's machine has none; ``--uv-cache`` keeps the
machine's): ``make
setup`` is timed first, as the venv row, and ``make test``'s row is the venv's and the tests' walls summed (its
issue's figure). Each command runs in a process group of its own with ``HYGRAIL_OUTPUTS`` set to a fresh folder
(kept, and printed, for a look afterwards). Every 0.5 s the RSS of every process of the group is summed (make,
Python, the test workers, the judge's server): the peak is that sum's largest value, which is what a laptop's
memory must hold; the line the command printed last before it says where it happened. Cores = CPU seconds of
the finished children (``getrusage``) / wall. For ``make discover`` the time of the first answer (the line
``discover.first_answer`` prints when the stack-without-GNN lists are on the page) is printed too. The goals
(issue #57) stand beside each row. A figure taken beside other work says so: the load average at the start and
the end is printed, and each command waits (up to 4 min) for the load to fall below 0.5 first.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
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


# Issue #57's goals on a fresh clone, 2 idle cores (every peak <= 4 GB).
GOALS = {("test", "venv + tests"): "<= 300 s", ("discover", "cold"): "<= 900 s, first answer <= 180 s",
         ("discover", "warm"): "<= 30 s"}
PEAK_GOAL_GB = 4.0


def row(name: str, phase: str, r: dict, target: str) -> str:
    first = f"{r['first']:.0f} s" if r.get("first") is not None else ""
    goal = "; ".join(g for g in (GOALS.get((target, phase)), f"<= {PEAK_GOAL_GB:.0f} GB" if r.get("peak_gb") else None) if g)
    peak = f"{r['peak_gb']:.2f} GB" if r.get("peak_gb") else ""
    cores = f"{r['cores']:.2f}" if r.get("cores") is not None else ""
    return (f"| `{name}` | {phase} | {r['wall']:.0f} s | {first} | {peak} | {cores} | {r.get('rc', '')} | "
            f"{r.get('load', '')} | {goal} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--targets", default="test,discover,run",
                    help="make targets, comma-separated (test, discover, run, ...); test runs once (a fresh clone is its cold run)")
    ap.add_argument("--clone", action="store_true",
                    help="run in a fresh git clone beside this checkout (so ../shared is found), venv included")
    ap.add_argument("--uv-cache", action="store_true", help="with --clone: keep the machine's uv cache (default: an empty one)")
    ap.add_argument("--make-args", default="", help="extra make arguments, e.g. DATA=synthesis_recipes")
    ap.add_argument("--cold-only", action="store_true", help="skip the warm reruns")
    ap.add_argument("--no-wait", action="store_true", help="start each command at once, not when the load is below 0.5")
    args = ap.parse_args()
    wait = (lambda: None) if args.no_wait else settle
    cwd, base_env = ROOT, dict(os.environ)
    rows = []
    if args.clone:
        cwd = Path(tempfile.mkdtemp(prefix="bench-clone-", dir=ROOT.parent))
        subprocess.run(["git", "clone", "-q", str(ROOT), str(cwd)], check=True)
        if not args.uv_cache:
            base_env["UV_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-uv-cache-", dir=ROOT.parent)  # same disk: uv links
        wait()
        log = cwd.parent / f"{cwd.name}-setup.log"
        print(f"== make setup (fresh clone {cwd}, log {log})", flush=True)
        r = timed(["make", "setup"], cwd, base_env, log)
        print(f"   wall {r['wall']:.0f} s, peak {r['peak_gb']:.2f} GB, exit {r['rc']}, load {r['load']}", flush=True)
        rows.append(("make setup", "venv", r, "setup"))
        if r["rc"]:
            raise SystemExit(f"make setup failed (exit {r['rc']}): {log}")
    for target in args.targets.split(","):
        outputs = Path(tempfile.mkdtemp(prefix=f"bench-make-{target}-"))
        # unbuffered: the first answer's line is seen when printed, not when the pipe's buffer fills
        # and a fresh name-vector cache (~/.cache/hygrail/names otherwise: a machine's first run fills it)
        env = {**base_env, "HYGRAIL_OUTPUTS": str(outputs), "PYTHONUNBUFFERED": "1",
               "HYGRAIL_NAMES_CACHE": str(outputs / "names")}
        phases = ("tests",) if target == "test" else ("cold",) if args.cold_only else ("cold", "warm")
        for phase in phases:
            log = outputs.parent / f"{outputs.name}-{phase}.log"
            cmd = ["make", target, *args.make_args.split()]
            wait()
            print(f"== {' '.join(cmd)} ({phase}; outputs {outputs}, log {log}, in {cwd})", flush=True)
            r = timed(cmd, cwd, env, log)
            name = f"make {target} {args.make_args}".strip()
            rows.append((name, phase, r, target))
            first = f"{r['first']:.0f} s" if r["first"] is not None else "-"
            print(f"   wall {r['wall']:.0f} s, peak {r['peak_gb']:.2f} GB, cores {r['cores']:.2f}, first answer {first}, "
                  f"exit {r['rc']}, load {r['load']}\n   peak at {r['at_peak']}", flush=True)
            if target == "test" and args.clone:  # the figure: a newcomer's make test builds the venv first
                venv = rows[0][2]
                both = {"wall": venv["wall"] + r["wall"], "rc": r["rc"] or venv["rc"], "peak_gb": max(venv["peak_gb"], r["peak_gb"])}
                rows.append((name, "venv + tests", both, "test"))
    where = f"fresh clone of {subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=cwd, capture_output=True, text=True).stdout.strip()}" \
        if args.clone else "this checkout"
    uv = "an empty uv cache" if args.clone and not args.uv_cache else "the machine's uv cache"
    print(f"\n{where}, {os.cpu_count()} cores, {uv}")
    print("| command | run | wall | first answer | peak RSS | cores used | exit | load (start -> end) | goal |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, phase, r, target in rows:
        print(row(name, phase, r, target))
    if args.clone and not args.uv_cache:
        shutil.rmtree(base_env["UV_CACHE_DIR"], ignore_errors=True)  # the venv's files are links: they stay


if __name__ == "__main__":
    main()

"""He et al.'s benchmark on a temporal split (issue #47): top-k success by exact set match.

He et al. (Sci. Adv. 9, eadg8180, 2023; ``_05_recommendation_benchmark.py`` of
CederGroupHub/SynthesisSimilarity) propose ranked precursor sets for each test target; top-k
succeeds when one of the first k equals a set recorded for the target (``library``'s module
docstring says what "equal" is here). Their test set: the reactions of the last 10% of publication
years, every reaction sharing a DOI, a target composition or a structure prototype with an earlier
reaction moved to the earlier part, so each of their 2,654 test targets is unseen.

Here (``benchmark``), at each cutoff C: every proposal reads the library of the recipes dated at or
before C (``Library.build``; ``past``); the test targets are ``library.after(table, C, horizon)``:
materials first recorded within (C, C + horizon] (answers: every set recorded for them there) and
materials recorded by C that get a new set there (answers: those new sets; their own earlier sets
are neither answers nor proposed). Success@k per target, mean ± SE (sample sd / sqrt(n)) over
targets; for the set ranker against each other row, the paired difference of the per-target
success indicators, mean ± SE. Undated recipes (ACS, APS, ECS DOIs) are neither library nor
answers.

Besides success, each row's precision at k (``Cell.found``): the share of its first k sets that are
answers, over k (a list of fewer than k sets is short of k); the page's trust figures read both
(``trust``).

The ceiling (``ceiling``): a target can be met only if some answer set obeys the rules and uses
precursors the library holds; the share of such targets bounds every row. The set ranker's
candidates' recall (``evaluate``'s ``reach``): the share of targets with an answer among its
candidates, which bounds any reordering of them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import polars as pl

from hygrail.kg import NO_YEAR
from hygrail.recipes import baselines
from hygrail.recipes.library import Library, Target, after
from hygrail.recipes.ranker import SetRanker, own_sets, recorded_as

KS = (1, 3, 5, 10)
RANKER = "Set ranker"
Proposer = Callable[[Library, Target, int, frozenset], list[tuple[str, ...]]]


def past(table: pl.DataFrame, cutoff: int) -> pl.DataFrame:
    """The recipes a proposal at ``cutoff`` may read: dated at or before it."""
    return table.filter((pl.col("year") != NO_YEAR) & (pl.col("year") <= cutoff))


@dataclass
class Cell:
    """One cutoff's results: per method, a targets x ks success matrix; the targets; facts."""

    cutoff: int
    targets: list[Target]
    success: dict[str, np.ndarray]
    facts: dict = field(default_factory=dict)
    found: dict[str, np.ndarray] = field(default_factory=dict)  # per method, targets x ks: answers among the first k


def proposers(ranker: SetRanker, scores: Mapping[str, Mapping[str, float]] | None = None,
              label: str = "Stack composed", same_first: bool = True) -> dict[str, Proposer]:
    """The rows: the set ranker (``same_first``: the sets recorded for the target's own composition
    first, as on the page), He et al., per-element popularity and, given ``scores`` (material ->
    precursor -> probability), those scores composed (a material without a row gets no set)."""
    def first(lib: Library, t: Target) -> frozenset:
        return recorded_as(lib, t.composition) if same_first else frozenset()

    rows: dict[str, Proposer] = {  # the set ranker returns every candidate: ``evaluate``'s reach
        RANKER: lambda lib, t, k, ex: [p.precursors for p in ranker.ranked(lib, t.elements, ex, first=first(lib, t))],
        "He et al. (element similarity)": lambda lib, t, k, ex: baselines.he_et_al(lib, t.elements, k, ex),
        "Per-element popularity": lambda lib, t, k, ex: baselines.popularity(lib, t.elements, k, ex),
    }
    if scores is not None:
        rows[label] = lambda lib, t, k, ex: (baselines.composed(lib, t.elements, lambda p: scores[t.material].get(p, 0.0),
                                                                k, ex) if t.material in scores else [])
    return rows


def evaluate(lib: Library, targets: Sequence[Target], rows: Mapping[str, Proposer], ks: Sequence[int] = KS,
             reach: dict[str, np.ndarray] | None = None, found: dict[str, np.ndarray] | None = None
             ) -> dict[str, np.ndarray]:
    """Per row, the targets x ks matrix of top-k exact-match success; ``reach``, if given, gets per row
    whether an answer is anywhere in what it returned (the set ranker returns every candidate, so for
    it that is its candidates' recall: what any ordering of them could reach at most); ``found``, if
    given, per row the targets x ks counts of answers among the first k."""
    out = {name: np.zeros((len(targets), len(ks)), dtype=bool) for name in rows}
    anywhere = {name: np.zeros(len(targets), dtype=bool) for name in rows}
    counts = {name: np.zeros((len(targets), len(ks)), dtype=np.int64) for name in rows}
    for i, t in enumerate(targets):
        exclude = own_sets(lib, t.material)
        for name, propose in rows.items():
            sets = propose(lib, t, max(ks), exclude)
            hit = [s in t.answers for s in sets]
            counts[name][i] = [sum(hit[:k]) for k in ks]
            out[name][i] = counts[name][i] > 0
            anywhere[name][i] = any(hit)
    if reach is not None:
        reach.update(anywhere)
    if found is not None:
        found.update(counts)
    return out


def ceiling(lib: Library, targets: Sequence[Target]) -> float:
    """The share of targets with an answer set that obeys the rules and uses library precursors only."""
    ok = [any(all(p in lib.precursor_elements for p in a) and lib.valid(a, t.elements) for a in t.answers)
          for t in targets]
    return float(np.mean(ok)) if ok else float("nan")


def scored(cutoff: int, lib: Library, targets: Sequence[Target], rows: Mapping[str, Proposer],
           ks: Sequence[int] = KS) -> Cell:
    """Every row's success on ``targets``, proposing from ``lib``, with the facts every split reports:
    the library's size, the ceiling, the set ranker's candidates' recall and the proposals' seconds."""
    t0 = time.perf_counter()
    reach: dict[str, np.ndarray] = {}
    found: dict[str, np.ndarray] = {}
    success = evaluate(lib, targets, rows, ks, reach, found)
    facts = {"library recipes": lib.recipes, "library materials": len(lib.names), "targets": len(targets),
             "ceiling": ceiling(lib, targets),
             "ranker recall": float(reach[RANKER].mean()) if targets else float("nan"),
             "proposal seconds": time.perf_counter() - t0}
    return Cell(cutoff, list(targets), success, facts, found)


def benchmark(table: pl.DataFrame, cutoff: int, horizon: int, volatile, free, ranker: SetRanker,
              scores: Mapping[str, Mapping[str, float]] | None = None, ks: Sequence[int] = KS) -> Cell:
    """One cutoff of the benchmark (module docstring): the ranker fit and every row proposing from
    ``past(table, cutoff)`` only; ``scores``: a per-precursor model's probabilities (material ->
    precursor -> probability) for the composed row."""
    t0 = time.perf_counter()
    before = past(table, cutoff)
    ranker.fit(before, cutoff, volatile, free)
    fit_seconds = time.perf_counter() - t0
    targets = after(table, cutoff, horizon)
    cell = scored(cutoff, Library.build(before, cutoff, volatile, free), targets, proposers(ranker, scores), ks)
    known = np.array([t.known for t in targets])
    cell.facts |= {"new targets": int((~known).sum()), "known targets with a new set": int(known.sum()),
                   "new targets with an unseen composition": sum(t.unseen for t in targets),
                   "targets with more than one answer set": sum(len(t.answers) > 1 for t in targets),
                   "answer years": f"{cutoff + 1}-{cutoff + horizon}",
                   "ranker fit rows": ranker.fit_rows, "ranker fit positives": ranker.fit_positives,
                   "ranker fit seconds": fit_seconds}
    return cell


def mean_se(x: np.ndarray) -> tuple[float, float]:
    x = np.asarray(x, dtype=np.float64)
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")


WHICH = ("all", "new", "known", "unseen", "seen", "numeric", "written")


def population(cell: Cell, which: str) -> np.ndarray:
    """The mask of ``which`` targets (``WHICH``): all; new or known (recorded by the cutoff, a new set);
    unseen (new, with a composition no library material has: He et al.'s kind) or seen (new, another
    name of a library composition); numeric (a numeric composition) or written (a written name only)."""
    t = cell.targets
    masks = {"all": [True] * len(t), "new": [not x.known for x in t], "known": [x.known for x in t],
             "unseen": [x.unseen for x in t], "seen": [x.seen for x in t], "numeric": [x.numeric for x in t],
             "written": [not x.numeric for x in t]}
    return np.array(masks[which], dtype=bool)


def table_of(cell: Cell, ks: Sequence[int] = KS, which: str = "all") -> pl.DataFrame:
    """One row per method: success@k mean and SE over ``which`` targets (``population``)."""
    mask = population(cell, which)
    rows = []
    for name, s in cell.success.items():
        row = {"method": name, "targets": int(mask.sum())}
        for j, k in enumerate(ks):
            row[f"success_at_{k}"], row[f"success_at_{k}_se"] = mean_se(s[mask, j])
        rows.append(row)
    return pl.DataFrame(rows)


def paired(cell: Cell, ks: Sequence[int] = KS, against: str = RANKER, which: str = "all") -> pl.DataFrame:
    """``against`` minus each other row, target by target over ``which`` targets (``population``): mean
    and SE of the success difference at each k."""
    mask = population(cell, which)
    rows = []
    for name, s in cell.success.items():
        if name == against:
            continue
        row = {"difference": f"{against} - {name}"}
        for j, k in enumerate(ks):
            row[f"at_{k}"], row[f"at_{k}_se"] = mean_se(cell.success[against][mask, j].astype(float) - s[mask, j])
        rows.append(row)
    return pl.DataFrame(rows)

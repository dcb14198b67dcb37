"""The reviewing stage (paper §3.2-3.4), shared by ``task=run`` and ``task=discover``: for chosen
hypotheses on one graph, an evidence mode prepares what the reviewer reads (retrieval, rendering,
optional LLM pre-stages) and the LLM reviews it, one cached call per hypothesis.

    with Reviewer(llm_cfg, mode, graph, relation, cache_path, seed, fewshot) as reviewer:
        reviewed = reviewer.review(hyps)          # [Reviewed(hypothesis, prepared, result)]
        metrics = reviewer.metrics()              # llm_* usage, per-stage tokens, evidence_* summary

``history``: a tuned reviewer's training rows (``hygrail.review.tuned.History``; an ``llm`` with a ``tuned``
block reviews through ``tuned.TunedClient`` instead of an LLM client).

``fewshot``: solved training pairs (``hygrail.review.fewshot.choose``) whose evidence, rendered by the
same mode, forms the prompt's few-shot block: built once, identical for every review of the cell.

``evidence_seconds`` is the wall time the mode's ``prepare`` spent outside its LLM calls (retrieval,
embeddings, rendering): what a mode costs beyond the LLM usage counted per stage.

``choose_gamma`` and ``decide`` apply ``hygrail.review.calibrate``'s rule (``llm.decision``) to what this returns,
with the hypotheses a mode decided without review (``Prepared.skip``) at their fixed decisions;
which hypotheses are reviewed (routing, budgets) is the caller's business.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from hygrail.evidence.mode import SKIPS, EvidenceMode, Hypothesis, Prepared
from hygrail.kg import KG, Relation
from hygrail.review.contract import Example, LLMCallError, ReviewRequest, ReviewResult, commonest_failure

# Usage counters split by stage: what the mode's pre-stages cost vs the reviews themselves.
STAGE_COUNTS = ("calls", "requests", "prompt_tokens", "completion_tokens")


@dataclass
class Reviewed:
    hypothesis: Hypothesis
    prepared: Prepared
    result: ReviewResult | None  # None: the mode decided it without review (prepared.skip)


class Reviewer:
    """Evidence mode -> text -> LLM review for hypotheses of one relation on one graph."""

    def __init__(self, llm_cfg: Mapping, mode: EvidenceMode, graph: KG, relation: Relation,
                 cache_path: Path | str | None, seed: int | None = None,
                 fewshot: Sequence[tuple[Hypothesis, int]] = (), history: Sequence = ()):
        if llm_cfg.get("tuned"):  # a reviewer trained on ``history`` (hygrail/review/tuned.py), no LLM
            from hygrail.review.tuned import TunedClient

            self.client = TunedClient(llm_cfg, mode, relation, history,
                                      Path(cache_path).parent / "tuned" if cache_path is not None else None)
        else:
            from hygrail.review.client import ReviewClient  # openai + aiohttp: only a stage that reviews pays

            # The cell's seed is the LLM's sampling seed: seeds re-sample the reviewer too (and key the cache).
            self.client = ReviewClient(dict(llm_cfg) | ({} if seed is None else {"seed": int(seed)}), cache_path)
        self.mode, self.graph, self.relation = mode, graph, relation
        self.stages = {stage: dict.fromkeys(STAGE_COUNTS, 0) for stage in ("prestage", "review")}
        self.prepared: list[Prepared] = []
        self.evidence_seconds = 0.0
        self.fewshot = list(fewshot)
        self._examples: list[Example] | None = None

    @property
    def examples(self) -> list[Example]:
        """The few-shot block, built on first use (an LLM evidence mode's pre-stage needs the client)."""
        if self._examples is None:
            from hygrail.review.fewshot import build

            self._examples = build(self.fewshot, self.mode, self.graph, self.relation, self.client)
        return self._examples

    @property
    def shown_examples(self) -> list[Example]:
        """The few-shot block as the reviews saw it; empty when nothing was reviewed (not built then)."""
        return self._examples or []

    def review(self, hyps: Sequence[Hypothesis]) -> list[Reviewed]:
        if not hyps:
            return []
        before, t0 = self.client.usage(), time.perf_counter()
        examples = self.examples  # first use: the examples' own evidence pre-stages book as pre-stage
        prepared = self.mode.prepare(self.graph, self.relation, hyps, self.client if self.mode.uses_llm else None)
        middle = self.client.usage()
        self.evidence_seconds += time.perf_counter() - t0 - (middle["wall_seconds"] - before["wall_seconds"])
        bad = {p.skip for p in prepared} - {None, *SKIPS}
        if bad:
            raise ValueError(f"evidence mode {self.mode.name!r} set skip={bad.pop()!r}; expected one of {SKIPS}")
        sent = [i for i, p in enumerate(prepared) if p.skip is None]
        got = self.client.review_many([ReviewRequest(prepared[i].statement, prepared[i].text) for i in sent], examples)
        results: list[ReviewResult | None] = [None] * len(prepared)
        for i, r in zip(sent, got):
            results[i] = r
        after = self.client.usage()
        for stage, (a, b) in (("prestage", (before, middle)), ("review", (middle, after))):
            for k in STAGE_COUNTS:
                self.stages[stage][k] += b[k] - a[k]
        self.prepared += prepared
        return [Reviewed(h, p, r) for h, p, r in zip(hyps, prepared, results)]

    def metrics(self) -> dict[str, float]:
        out = {f"llm_{k}": float(v) for k, v in self.client.usage().items()}
        out |= {f"llm_{stage}_{k}": float(v) for stage, counts in self.stages.items() for k, v in counts.items()}
        out |= {"llm_fewshot_n": float(len(self.fewshot)), "llm_fewshot_positives": float(sum(y for _, y in self.fewshot))}
        return out | {"evidence_seconds": self.evidence_seconds} | self.mode.summary(self.prepared)

    def close(self) -> None:
        self.client.close()  # stops an embedded llama.cpp server, closes the reply cache

    def __enter__(self) -> "Reviewer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def cache_path(self) -> Path | None:
        return self.client.cache.path if self.client.cache else None


def check_failures(results: Sequence[ReviewResult | None], max_rate: float, llm_name: str, cache: Path | None) -> float:
    """The share of reviews with no usable verdict (decided by ``method.on_failure`` instead).
    A reviewer that mostly gives none would leave the fallback's numbers under the method's name:
    over ``max_rate`` the cell stops; under it, the caller names the share beside the method
    (``fallback_note``). Hypotheses decided without review (None) do not count."""
    results = [r for r in results if r is not None]
    failed = [r.failure for r in results if not r.ok]
    if failed and len(failed) > max_rate * len(results):
        kind, n, _ = commonest_failure(failed)
        raise LLMCallError(
            f"llm {llm_name}: {len(failed)} of {len(results)} reviews gave no usable verdict ({n} {kind}), "
            f"over method.max_review_failure_rate={max_rate}; see the raw replies in the reply cache "
            f"({cache or 'none'}); raise llm.max_tokens or check the prompt")
    return len(failed) / len(results) if results else 0.0


def fallback_note(share: float) -> str:
    """What a cell's label carries when some of its reviews fell back: "12% of reviews fell back"
    ("" when none did; "<1%" rather than a rounded 0%)."""
    if share <= 0:
        return ""
    return f"{'<1%' if share < 0.005 else f'{share:.0%}'} of reviews fell back"


def _fixed(reviewed: Sequence[Reviewed], fallback: np.ndarray) -> np.ndarray:
    """Decision of each hypothesis the mode decided without review; -1 for reviewed ones."""
    skip = np.array([r.prepared.skip or "" for r in reviewed], dtype=object)
    return np.where(skip == "reject", 0, np.where(skip == "gnn", np.asarray(fallback, dtype=int), -1)).astype(int)


def _scores(reviewed: Sequence[Reviewed]) -> np.ndarray | None:
    """The reviewed hypotheses' GNN scores (what ``llm.decision=calibrated`` combines); None without them (KG-FM)."""
    scores = [r.hypothesis.score for r in reviewed]
    return None if any(s is None for s in scores) else np.array(scores, dtype=float)


def choose_gamma(reviewed: Sequence[Reviewed], labels: np.ndarray, fallback: np.ndarray, on_failure: str,
                 base_counts: tuple[int, int, int] = (0, 0, 0), rule: str = "paper", calibration: str = "platt",
                 cut: str = "max_f1"):
    """The rule's fit (``calibrate.choose_gamma``: γ, or a ``Combined``) on the reviewed hypotheses;
    those the mode decided without review count with their fixed decisions, like the GNN's decisions
    outside the band."""
    from hygrail.review import calibrate

    labels, fallback = np.asarray(labels, dtype=int), np.asarray(fallback, dtype=int)
    fixed = _fixed(reviewed, fallback)
    skipped = fixed >= 0
    tp, fp, fn = base_counts
    tp += int(((fixed == 1) & (labels == 1)).sum())
    fp += int(((fixed == 1) & (labels == 0)).sum())
    fn += int(((fixed == 0) & (labels == 1)).sum())
    kept = [r for r, s in zip(reviewed, skipped) if not s]
    return calibrate.choose_gamma([r.result for r in kept], labels[~skipped], fallback[~skipped], on_failure,
                                  base_counts=(tp, fp, fn), rule=rule, scores=_scores(kept), calibration=calibration,
                                  cut=cut)


def decide(reviewed: Sequence[Reviewed], gamma, fallback: np.ndarray, on_failure: str,
           rule: str = "paper") -> np.ndarray:
    """0/1 per hypothesis: the review rule as fit (``calibrate.decide``), or the mode's fixed decision."""
    from hygrail.review import calibrate

    fallback = np.asarray(fallback, dtype=int)
    out = _fixed(reviewed, fallback)
    sel = out < 0
    if sel.any():
        kept = [r for r, s in zip(reviewed, sel) if s]
        out[sel] = calibrate.decide([r.result for r in kept], gamma, fallback[sel], on_failure, rule, _scores(kept))
    return out.astype(np.int8)

import math

import numpy as np
import pytest

from hygrail.review.calibrate import choose_gamma, decide
from hygrail.review.contract import ReviewResult


def _r(review, conf):
    return ReviewResult(review, conf, "stated", "", "", None)


def _fail():
    return ReviewResult(None, None, None, "", "garbage", "unparseable reply: no readable review field")


# val routed: (review, confidence, label)
VAL = [("yes", 0.9, 1), ("yes", 0.8, 0), ("yes", 0.7, 1), ("no", 0.2, 1), ("yes", 0.6, 0)]


def test_choose_gamma_hand_computed():
    results = [_r(r, c) for r, c, _ in VAL]
    labels = np.array([y for *_, y in VAL])
    # positives 3. γ=0.9: tp1 fp0 fn2 -> F1 .500; 0.8: tp1 fp1 fn2 -> .400;
    # 0.7: tp2 fp1 fn1 -> .667 (best); 0.6: tp2 fp2 fn1 -> .571; inf: 0
    assert choose_gamma(results, labels) == 0.7


def test_choose_gamma_ties_and_outside_decisions():
    results = [_r("yes", 0.9), _r("yes", 0.5), _r("yes", 0.4), _r("yes", 0.3)]
    labels = np.array([1, 0, 0, 1])
    # routed only: 0.9: tp1 fp0 fn1 -> 2/3; 0.5: tp1 fp1 fn1 -> .5; 0.4: tp1 fp2 fn1 -> .4;
    # 0.3: tp2 fp2 fn0 -> 4/6 = 2/3. Tie between 0.9 and 0.3: the larger γ wins.
    assert choose_gamma(results, labels) == 0.9
    # GNN outside the band has 3 FP: 0.9: tp1 fp3 fn1 -> 2/6 = .333; 0.3: tp2 fp5 -> 4/9 = .444
    assert choose_gamma(results, labels, base_counts=(0, 3, 0)) == 0.3
    # GNN outside has 10 TP: 0.9: tp11 fn1 -> 22/23 = .957; 0.3: tp12 fp2 -> 24/26 = .923
    assert choose_gamma(results, labels, base_counts=(10, 0, 0)) == 0.9


def test_choose_gamma_failures_follow_the_decision_rule():
    results = [_r(r, c) for r, c, _ in VAL] + [_fail(), _fail()]
    labels = np.array([y for *_, y in VAL] + [1, 0])
    # failures left out without a fallback: same as the clean case
    assert choose_gamma(results, labels) == 0.7
    # on_failure=accept: failures add tp1 fp1. 0.9: tp2 fp1 fn2 -> 4/7=.571; 0.8: tp2 fp2 fn2 -> .5;
    # 0.7: tp3 fp2 fn1 -> 6/9=.667; 0.6: tp3 fp3 fn1 -> .6; inf: tp1 fp1 fn3 -> .333
    assert choose_gamma(results, labels, on_failure="accept") == 0.7
    # fallback decisions [1, 0]: failure 1 accepted (tp), failure 2 rejected (tn)
    fb = np.array([0, 0, 0, 0, 0, 1, 0])
    # 0.9: tp2 fp0 fn2 -> .667; 0.7: tp3 fp1 fn1 -> .75 (best)
    assert choose_gamma(results, labels, fallback=fb) == 0.7


def test_choose_gamma_prefers_accepting_none_when_llm_never_helps():
    results = [_r("yes", 0.9), _r("yes", 0.4), _r("no", 0.1)]
    assert choose_gamma(results, np.array([0, 0, 0])) == math.inf
    assert choose_gamma([_r("no", 0.9)], np.array([1])) == math.inf


def test_choose_gamma_picks_the_low_threshold_when_recall_matters():
    results = [_r("yes", 0.9), _r("yes", 0.5), _r("yes", 0.4)]
    # 0.9: tp1 fn2 -> .5; 0.5: tp2 fn1 -> .8; 0.4: tp3 -> 1.0
    assert choose_gamma(results, np.array([1, 1, 1])) == 0.4


def test_decide_with_failures():
    results = [_r("yes", 0.9), _r("no", 0.9), _r("yes", 0.4), _fail(), _fail()]
    fallback = np.array([0, 0, 0, 1, 0])
    assert decide(results, 0.5, fallback).tolist() == [1, 0, 0, 1, 0]
    assert decide(results, 0.5, fallback, on_failure="reject").tolist() == [1, 0, 0, 0, 0]
    assert decide(results, 0.5, on_failure="accept").tolist() == [1, 0, 0, 1, 1]
    assert decide(results, 0.4, fallback).tolist() == [1, 0, 1, 1, 0]  # conf >= γ is inclusive
    assert decide(results[:3], math.inf).tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="no fallback"):
        decide(results, 0.5)
    with pytest.raises(ValueError, match="on_failure"):
        decide(results, 0.5, fallback, on_failure="no")
    with pytest.raises(ValueError, match="shape"):
        decide(results, 0.5, np.array([0, 1]))


def _p(p_yes):
    """A probability judge's review: the verdict is P(yes) rounded at 0.5, the confidence P(yes)."""
    return ReviewResult("yes" if p_yes >= 0.5 else "no", p_yes, "logprob", "", "", None)


def test_probability_rule_gamma_hand_computed():
    # P(yes) from logprobs, all below 0.5: the paper's rule can accept nothing ...
    p_yes = [0.29, 0.27, 0.25, 0.22, 0.21, 0.20]
    labels = np.array([1, 0, 1, 0, 0, 0])
    results = [_p(p) for p in p_yes]
    assert choose_gamma(results, labels) == math.inf
    assert decide(results, 0.0).tolist() == [0] * 6  # every verdict is "no"
    # ... the probability rule ranks by P(yes). Positives 2. γ=.29: tp1 fp0 fn1 -> 2/3; .27: tp1 fp1 fn1
    # -> .5; .25: tp2 fp1 fn0 -> 4/5 = .8 (best); .22: tp2 fp2 -> 4/6; .21: 4/7; .20: 4/8; inf: 0
    gamma = choose_gamma(results, labels, rule="probability")
    assert gamma == 0.25
    assert decide(results, gamma, rule="probability").tolist() == [1, 1, 1, 0, 0, 0]
    # with the GNN's fixed decisions outside the reviewed set (2 TP, 0 FP, 1 FN there):
    # .29: tp3 fp0 fn2 -> 6/8 = .75; .25: tp4 fp1 fn1 -> 8/10 = .8; .20: tp4 fp4 fn1 -> 8/13
    assert choose_gamma(results, labels, base_counts=(2, 0, 1), rule="probability") == 0.25
    # base counts that change the answer: alone, .9 (tp1 fp0 fn1 -> 2/3) ties .3 (tp2 fp2 -> 2/3) and
    # the larger wins; with 3 FP fixed outside, .9 -> 2/6 and .3 -> 4/9 (best)
    few, few_labels = [_p(0.9), _p(0.5), _p(0.4), _p(0.3)], np.array([1, 0, 0, 1])
    assert choose_gamma(few, few_labels, rule="probability") == 0.9
    assert choose_gamma(few, few_labels, base_counts=(0, 3, 0), rule="probability") == 0.3
    # a "yes" at P(yes)=0.9 on a negative: the rule may still stop above it
    results2 = [_p(0.9), *results]
    labels2 = np.array([0, *labels])
    # .9: tp0 -> 0; .29: tp1 fp1 fn1 -> .5; .25: tp2 fp2 fn0 -> 4/6 = .667 (best); .2: 4/9
    assert choose_gamma(results2, labels2, rule="probability") == 0.25


def test_probability_rule_failures_and_bad_rule():
    results = [_p(0.4), _fail(), _p(0.1)]
    fallback = np.array([0, 1, 0])
    assert decide(results, 0.3, fallback, rule="probability").tolist() == [1, 1, 0]
    assert decide(results, 0.3, fallback, on_failure="reject", rule="probability").tolist() == [1, 0, 0]
    # failures keep their fallback decision while γ is chosen: label [1, 1, 0] -> γ .4: tp2 fp0 -> 1.0
    assert choose_gamma(results, np.array([1, 1, 0]), fallback, rule="probability") == 0.4
    with pytest.raises(ValueError, match="decision rule"):
        decide(results, 0.3, fallback, rule="vibes")
    with pytest.raises(ValueError, match="decision rule"):
        choose_gamma(results, np.array([1, 1, 0]), fallback, rule="vibes")

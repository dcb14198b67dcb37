import math
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from hygrail.review.contract import (
    Example,
    ParseError,
    ReviewRequest,
    p_yes_from_logprobs,
    parse_review,
    review_fields,
    review_schema,
    trim_logprobs,
)
from hygrail.review.prompts import review_messages, system_prompt


@pytest.mark.parametrize(
    "text, review, confidence, salvaged",
    [
        ('{"reasoning": "r", "review": "yes", "confidence": 0.83}', "yes", 0.83, False),
        ('```json\n{"reasoning": "r", "review": "no", "confidence": 0.2}\n```', "no", 0.2, False),
        ('Sure! {"review": "Yes", "confidence": 85, "reasoning": "r"} Hope this helps.', "yes", 0.85, False),
        ('{"review": "no", "confidence": "40%", "reasoning": "r"}', "no", 0.40, False),
        ('{"review": true, "confidence": 1, "reasoning": "r"}', "yes", 1.0, False),
        # a thinking model's draft inside its thinking block is ignored; the final object counts
        ('[THINK]maybe {"review": "yes", "confidence": 0.9}[/THINK]{"review": "no", "confidence": 0.3}', "no", 0.3, False),
        ('<think>hmm</think>\n{"reasoning": "r", "review": "yes", "confidence": 0.6}', "yes", 0.6, False),
        # cut off by max_tokens after the verdict (review-first order): salvaged
        ('{"review": "yes", "confidence": 0.7, "reasoning": "Because the ca', "yes", 0.7, True),
        # cut inside the confidence number ("0." of 0.85, "8" of 85): no confidence, not a wrong one
        ('{"reasoning": "r", "review": "yes", "confidence": 0.', "yes", None, True),
        ('{"reasoning": "r", "review": "yes", "confidence": 8', "yes", None, True),
        # a complete draft (thinking the server did not mark) then a cut-off answer: the answer counts
        ('draft {"review": "yes", "confidence": 0.9} so {"review": "no", "confidence": 0.2, "reas', "no", 0.2, True),
        # stated confidence missing: parsed, confidence left to the logprob source (or a failure)
        ('{"review": "no", "reasoning": "r"}', "no", None, False),
    ],
)
def test_parse_review_variants(text, review, confidence, salvaged):
    parsed = parse_review(text)
    assert parsed.review == review
    assert parsed.salvaged is salvaged
    if confidence is None:
        assert parsed.confidence is None
    else:
        assert parsed.confidence == pytest.approx(confidence)


def test_parse_salvaged_reasoning_is_unescaped():
    parsed = parse_review('{"review": "no", "confidence": 0.1, "reasoning": "a \\"quoted\\" word')
    assert parsed.reasoning == 'a "quoted" word'


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "empty reply"),
        ("I think the hypothesis is plausible.", "no readable review field"),
        ('{"reasoning": "Because the material is wid', "no readable review field"),  # cut before verdict
        ('{"review": "maybe", "confidence": 0.5}', "no readable review field"),
        ("<think>still thinking when max_tokens hit", "empty reply"),
    ],
)
def test_parse_failures_name_the_reason(text, reason):
    with pytest.raises(ParseError, match=reason):
        parse_review(text)


def test_confidence_out_of_range_is_unreadable():
    assert parse_review('{"review": "yes", "confidence": 250}').confidence is None
    assert parse_review('{"review": "yes", "confidence": -0.1}').confidence is None


def _entry(token, logprob, alts):
    return {"token": token, "logprob": logprob, "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in alts]}


def test_p_yes_from_logprobs_at_the_verdict_token():
    entries = [
        _entry('{"', -0.1, [('{"', 1.0)]),
        _entry("review", -0.1, [("review", 1.0)]),
        _entry('":', -0.1, [('":', 1.0)]),
        _entry(' "', -0.1, [(' "', 1.0)]),
        _entry("yes", math.log(0.6), [("yes", 0.6), ("no", 0.3), ("maybe", 0.1)]),
        _entry('",', -0.1, [('",', 1.0)]),
    ]
    assert p_yes_from_logprobs(entries) == pytest.approx(0.6 / 0.9)
    assert [e["token"] for e in trim_logprobs(entries)] == ['{"', "review", '":', ' "', "yes"]


def test_p_yes_when_the_quote_is_fused_into_the_verdict_token():
    # tokens '{"review":' + ' "no' + '"}': alternatives share the ' "' prefix; ' "' alone is no answer
    entries = [
        _entry('{"review":', -0.1, []),
        _entry(' "no', math.log(0.6), [(' "no', 0.6), (' "yes', 0.2), (' "', 0.2)]),
        _entry('"}', -0.1, []),
    ]
    assert p_yes_from_logprobs(entries) == pytest.approx(0.25)


def test_p_yes_counts_prefix_tokens_and_skips_the_code_fence():
    # llama.cpp may sample a ```json fence before the object; "y"/"n" pieces count as yes/no
    entries = [_entry(t, -0.1, []) for t in ["```", "json", "\n", '{"', "review", '":"']]
    entries.append(_entry("y", math.log(0.5), [("y", 0.5), ("n", 0.25), ("no", 0.25)]))
    assert p_yes_from_logprobs(entries) == pytest.approx(0.5)


def test_p_yes_absent_without_a_review_field():
    assert p_yes_from_logprobs([_entry("Hello", -0.1, [("Hello", 1.0)])]) is None
    assert p_yes_from_logprobs([]) is None
    assert trim_logprobs([_entry("Hello", -0.1, [])]) == []


def test_schema_orders_fields_and_bounds_reasoning():
    first = review_schema(review_fields(review_first=True), reasoning_max_chars=120)
    assert list(first["properties"]) == ["review", "confidence", "reasoning"]
    assert first["properties"]["reasoning"]["maxLength"] == 120
    paper = review_schema(review_fields(review_first=False))
    assert list(paper["properties"]) == ["reasoning", "review", "confidence"]  # B.2 contract order
    assert paper["properties"]["review"]["enum"] == ["yes", "no"]
    assert "maxLength" not in paper["properties"]["reasoning"] and "pattern" not in paper["properties"]["reasoning"]


def test_latin_reasoning_pattern_keeps_formulas_and_drops_other_scripts_and_json_breakers():
    import re

    pattern = review_schema(("review", "reasoning"), 80, "latin")["properties"]["reasoning"]["pattern"]
    ok = re.compile(pattern).fullmatch
    assert ok("Ba1-xKxFe2As2 is a known catalyst (β-phase, 10⁻³ S/cm; 300 °C) — well studied.")
    assert ok("")
    for bad in ("used as a catalyst in various化学", 'a "quoted" word', "back\\slash", "[1]", "x" * 81):
        assert not ok(bad), bad
    assert review_schema(("reasoning",), None, "latin")["properties"]["reasoning"]["pattern"].endswith("]*$")


def test_fields_for_a_probability_judge_and_the_reasoning_switch():
    # a logprob judge is asked for no stated confidence; reasoning none leaves the verdict alone
    assert review_fields(True, "none", stated_confidence=False) == ("review",)
    assert review_fields(True, "clause", stated_confidence=False) == ("review", "reasoning")
    assert review_fields(False, "none") == ("review", "confidence")
    verdict = review_schema(("review",))
    assert verdict["required"] == ["review"] and verdict["additionalProperties"] is False
    with pytest.raises(ValueError, match="reasoning"):
        review_fields(True, "essay")
    # the prompt states exactly the fields the schema asks for, in that order
    sys = system_prompt(True, "compact", ("review",), "none")
    assert '{"review":"yes"|"no"}' in sys and "confidence" not in sys and "reasoning" not in sys
    clause = system_prompt(True, "compact", ("review", "reasoning"), "clause")
    assert clause.index('"review"') < clause.index('"reasoning":"a few words"')
    full = system_prompt(True, "full", ("review", "reasoning"), "clause")
    assert '"reasoning": "one short clause"' in full and ">= 0.5" not in full  # no stated confidence to tie to


def test_paper_prompt_is_unchanged_by_the_new_options():
    """Served models keep the paper's prompt: default fields and no examples give B.2's text."""
    text = system_prompt(True, "full")
    assert text.endswith('{"reasoning": "2-4 sentences", "review": "yes" or "no", "confidence": a number between 0 '
                         'and 1}. confidence is your probability that the hypothesis is true, and review is "yes" '
                         'exactly when confidence >= 0.5.')
    assert "Solved examples" not in text


def test_the_schemas_domain_names_the_reviewers_field_and_no_domain_is_the_papers_wording():
    """HPO's judge was told to judge "a materials-science hypothesis"; the schema's domain replaces it.
    Without one, B.2's wording stays word for word (MatKG's requests and cached replies unchanged)."""
    assert system_prompt(False, "full").startswith(
        "You are an expert materials scientist reviewing candidate hypotheses proposed by a link predictor over a "
        "materials-science knowledge graph mined from the literature. Judge from your own scientific knowledge "
        "whether the hypothesis is true: whether the relationship is established or strongly expected from known "
        "chemistry, physics and materials science. Be sceptical of vague or generic links, and do not assume a link "
        "holds merely because both entities are common.")
    assert system_prompt(False, "compact", ("review",), "none") == (
        'Judge if a materials-science hypothesis is true. Reply only with JSON: {"review":"yes"|"no"}.')
    hpo = OmegaConf.to_container(OmegaConf.load(Path(__file__).parents[1] / "conf/data/schema/hpo.yaml"))["domain"]
    compact = system_prompt(False, "compact", ("review",), "none", domain=hpo)
    assert compact == 'Judge if a clinical-genetics hypothesis is true. Reply only with JSON: {"review":"yes"|"no"}.'
    full = system_prompt(False, "full", domain=hpo)
    assert full.startswith("You are an expert clinical geneticist reviewing candidate hypotheses proposed by a link "
                           "predictor over the Human Phenotype Ontology's curated disease annotations.")
    assert "known clinical genetics and medicine" in full and "materials" not in full
    assert system_prompt(False, "full", domain={"expert": "an expert pharmacologist"}).startswith(
        "You are an expert pharmacologist reviewing")  # keys left out keep the paper's words
    with pytest.raises(ValueError, match=r"llm.domain keys \['role'\]"):
        system_prompt(False, "full", domain={"role": "x"})


def test_prompts_share_a_fixed_prefix_and_put_the_variable_part_last():
    fields = review_fields(True)
    a = review_messages(ReviewRequest("H1 text", "E1 text"), "compact", fields)
    b = review_messages(ReviewRequest("H2 other", "E2 other"), "compact", fields)
    assert a[0] == b[0]  # identical system message: the reusable prefix
    assert a[1]["content"] == "Hypothesis: H1 text\nEvidence:\nE1 text"
    none = review_messages(ReviewRequest("H1 text"), "full")
    assert "Evidence" not in none[1]["content"]
    assert "own scientific knowledge" in none[0]["content"]  # the no-evidence prompt elicits the prior
    assert "evidence extracted from the knowledge graph" in system_prompt(True, "full")
    # the stated output order follows the schema order
    paper = system_prompt(True, "full", review_fields(False))
    assert paper.index('"reasoning"') < paper.index('"review"')
    assert len(system_prompt(True, "compact", fields)) < len(system_prompt(True, "full", fields)) / 3
    with pytest.raises(ValueError, match="prompt style"):
        system_prompt(True, "verbose")


def test_fewshot_block_sits_in_the_system_prefix_after_the_instructions():
    shots = [Example(ReviewRequest("The material A can be effectively used for X.", "Hypothesis: The material A "
                                   "can be effectively used for X.\nEvidence: A is linked to X-ish."), "yes"),
             Example(ReviewRequest("The material B can be effectively used for Y.", "B has no paths."), "no")]
    fields = review_fields(True, "none", stated_confidence=False)
    a = review_messages(ReviewRequest("H1", "E1"), "compact", fields, "none", shots)
    b = review_messages(ReviewRequest("H2", "E2"), "compact", fields, "none", shots)
    assert a[0] == b[0] and a[1]["content"] == "Hypothesis: H1\nEvidence:\nE1"
    sys = a[0]["content"]
    assert sys.startswith(system_prompt(True, "compact", fields, "none"))  # instructions first, then the block
    assert sys.index("Example 1:") < sys.index("Verdict: yes") < sys.index("Example 2:") < sys.index("Verdict: no")
    # an example reads exactly like a review's user message
    assert "Example 2:\nHypothesis: The material B can be effectively used for Y.\nEvidence:\nB has no paths.\n" in sys
    assert sys.count("Hypothesis: The material A") == 1  # Table 9 text already opens with it


def test_table9_evidence_is_not_prefixed_with_the_hypothesis_twice():
    from hygrail.review.prompts import review_messages

    full = "Hypothesis: The material TiO2 can be effectively used for Photocatalysis.\nEvidence: The following ..."
    user = review_messages(ReviewRequest("The material TiO2 can be effectively used for Photocatalysis.", full))[1]["content"]
    assert user == full
    other = review_messages(ReviewRequest("H.", "Knowledge graph context: x"))[1]["content"]
    assert other == "Hypothesis: H.\nEvidence:\nKnowledge graph context: x"

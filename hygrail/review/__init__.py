"""LLM hypothesis review (paper §3.4, App. B.2): prompts, the JSON review contract, an
OpenAI-compatible client with cache and accounting, γ calibration, and the embedded reviewer."""

from hygrail.review.calibrate import choose_gamma, decide
from hygrail.review.client import LLMCallError, ReviewClient
from hygrail.review.contract import ReviewRequest, ReviewResult

__all__ = ["ReviewClient", "ReviewRequest", "ReviewResult", "LLMCallError", "choose_gamma", "decide"]

"""LLM hypothesis review (paper §3.4, App. B.2): prompts, the JSON review contract, an
OpenAI-compatible client with cache and accounting, γ calibration, and the embedded reviewer.

Nothing is imported here: `hygrail.review.contract` is light, `hygrail.review.client` pulls in
openai and aiohttp (~1.3 s), and only a cell that reviews should pay for that."""

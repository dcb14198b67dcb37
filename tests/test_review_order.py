"""Which routed hypotheses a review budget keeps (method.review_order, hygrail/stages.py)."""

import numpy as np
import pytest

from hygrail.kg import DataError
from hygrail.stages import review_order


def test_random_order_is_a_seeded_sample_of_the_band_not_its_most_ambiguous_end():
    scores = np.linspace(0.0, 1.0, 200)
    band = (scores > 0.2) & (scores < 0.6)  # 80 routed; threshold 0.7 lies above the band
    closest = review_order(scores, band, 0.7, 20, seed=1)
    assert len(closest) == 20 and band[closest].all() and (scores[closest] > 0.5).all()  # ambiguous: the band's top slice
    picks = [review_order(scores, band, 0.7, 20, seed=s, order="random") for s in range(10)]
    for p in picks:
        assert len(p) == 20 and band[p].all() and (np.diff(p) > 0).all()
    assert np.mean([scores[p].mean() for p in picks]) == pytest.approx(0.4, abs=0.03)  # the band's middle
    assert (review_order(scores, band, 0.7, 20, seed=3, order="random") == picks[3]).all()  # seeded
    assert len({tuple(p) for p in picks}) == 10
    assert (review_order(scores, band, 0.7, None, seed=1, order="random") == np.flatnonzero(band)).all()
    with pytest.raises(DataError, match="method.review_order"):
        review_order(scores, band, 0.7, 20, seed=1, order="best")

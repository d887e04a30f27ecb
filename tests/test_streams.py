import itertools

import numpy as np
import pytest

from pseudopost._streams import record_uniforms


@pytest.mark.parametrize("k", [1, 3, 4, 5, 9])
def test_chunking_does_not_change_values(k):
    whole = record_uniforms(7, 2, 0, 1000, k)
    cuts = [0, 1, 13, 400, 401, 999, 1000]
    parts = [record_uniforms(7, 2, a, b - a, k) for a, b in itertools.pairwise(cuts)]
    np.testing.assert_array_equal(np.concatenate(parts), whole)
    assert whole.shape == (1000, k)
    assert np.all((whole > 0) & (whole < 1))


def test_streams_and_seeds_differ_and_are_uniform():
    a = record_uniforms(7, 0, 0, 20000)
    b = record_uniforms(7, 1, 0, 20000)
    c = record_uniforms(8, 0, 0, 20000)
    assert not np.array_equal(a, b) and not np.array_equal(a, c)
    from scipy import stats

    assert stats.kstest(a.ravel(), "uniform").pvalue > 1e-3
    assert abs(np.corrcoef(a.ravel(), b.ravel())[0, 1]) < 0.05


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_bad_arguments(bad):
    with pytest.raises(ValueError, match="non-negative integer"):
        record_uniforms(bad, 0, 0, 3)

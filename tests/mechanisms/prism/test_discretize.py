"""Column coding: public and DP bins, categorical levels, round trips."""

import numpy as np
import pandas as pd
import pytest

from pseudopost.mechanisms.prism.discretize import dp_quantile_edges, fit_encoding


def test_dp_quantile_edges_near_true_quantiles(rng):
    x = rng.normal(0.0, 1.0, 20000)
    edges = dp_quantile_edges(x, 4, (-4.0, 4.0), epsilon=5.0, integer=False, seed=1)
    assert edges[0] == -4.0 and edges[-1] == 4.0 and np.all(np.diff(edges) > 0)
    np.testing.assert_allclose(edges[1:-1], np.quantile(x, [0.25, 0.5, 0.75]), atol=0.06)


def test_dp_bins_collapse_an_atom():
    x = np.r_[np.zeros(900), np.arange(1, 101)]
    edges = dp_quantile_edges(x, 8, (0, 100), epsilon=10.0, integer=True, seed=0)
    assert edges[:2] == (0.0, 1.0)  # the zero atom is its own bin
    assert len(edges) - 1 < 8


def test_encoding_round_trip_and_types(small_frame):
    enc, dp = fit_encoding(
        small_frame,
        list(small_frame.columns),
        bins={"Z": 5},
        bounds={"Z": (0.0, 100.0)},
        epsilon=1.0,
        seed=0,
    )
    assert dp == ["Z"]
    codes = enc.encode(small_frame)
    assert all(codes[c].min() >= 0 and codes[c].max() < enc.sizes[c] for c in codes)
    back = enc.decode(codes, seed=1)
    pd.testing.assert_series_equal(back["C"], small_frame["C"], check_dtype=False)
    assert (back["A"] == small_frame["A"]).all()
    e = np.asarray(enc["Z"].edges)
    z_codes = codes["Z"]
    assert np.all((back["Z"] >= e[z_codes]) & (back["Z"] <= e[z_codes + 1]))
    assert enc["C"].source == "data (assumed public)"


def test_encoding_errors(small_frame):
    with pytest.raises(ValueError, match="bounds"):
        fit_encoding(small_frame, list(small_frame.columns), bins={"Z": 4}, epsilon=1.0)
    enc, _ = fit_encoding(small_frame, ["C"], domain={"C": ["no"]})
    with pytest.raises(ValueError, match="outside its declared domain"):
        enc.encode(small_frame)
    with pytest.raises(ValueError, match="max_levels"):
        fit_encoding(small_frame, list(small_frame.columns))
    bad = small_frame.assign(A=small_frame["A"].astype(float))
    bad.loc[0, "A"] = np.nan
    with pytest.raises(ValueError, match="missing"):
        fit_encoding(bad, ["A"])

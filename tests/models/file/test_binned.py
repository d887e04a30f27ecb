"""Declared bins: a numeric column as a histogram density over public bins (the binned part).
Bins and their checks, the part's log-likelihood as the bin's log mass log P(bin) by hand with
SciPy (its density log P(bin) - log width on request),
the record log-likelihood (status + binned value) and the accountant against brute force,
synthetic values inside their drawn bins and never a code, a small fit, and bad declarations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from pseudopost.models.file import Declarations, FileModel, make_plan
from pseudopost.models.file.bins import Bins
from pseudopost.models.parts import GroupedData, PartData, make_part
from pseudopost.privacy.kernels.parts import PartAccountant

from .test_synthesis import _synth

N = 250
EDGES = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]


def test_bins_index_draw_and_checks():
    b = Bins.parse(EDGES, "x")
    assert b.n_bins == 6 and b.describe() == "6 bins from 1 to 100"
    np.testing.assert_array_equal(b.index([1.0, 1.99, 2.0, 49.9, 100.0]), [0, 0, 1, 4, 5])
    np.testing.assert_allclose(b.log_widths, np.log(np.diff(EDGES)))
    np.testing.assert_allclose(b.draw(np.array([0, 5]), np.array([0.5, 0.25])), [1.5, 62.5])
    for bad in ([1, 2], [1, 3, 2], [0, float("nan"), 2], ["a", "b", "c"], [True, 2, 3]):
        with pytest.raises(ValueError, match=r"at least 3 finite, strictly increasing"):
            Bins.parse(bad, "x")
    with pytest.raises(TypeError, match=r"list of increasing edges"):
        Bins.parse("0-10", "x")


def test_binned_part_is_the_bins_log_mass_and_its_density_on_request():
    rng = np.random.default_rng(3)
    n, k = 200, len(EDGES) - 1
    X = rng.integers(0, 2, (n, 1)).astype(float)
    y = rng.integers(0, k, n).astype(float)
    lw = tuple(np.log(np.diff(EDGES)).tolist())
    part = make_part("binned", "y", ["a"], n_levels=k, log_widths=lw)
    cum = make_part("cumulative", "y", ["a"], n_levels=k)
    data = PartData(y, X, np.ones(n, bool))
    w = rng.uniform(0, 1, n)
    x = part.initial_point(0) + rng.normal(scale=0.3, size=part.layout.size)
    v, g = part.log_density(part.statistics(data, w)).logp_grad(x)
    vc, gc = cum.log_density(cum.statistics(data, w)).logp_grad(x)
    # the mass: the cumulative part's log density exactly (the widths, constants of the data,
    # are not in the likelihood, the risk or the accountant's bound)
    assert v == pytest.approx(vc, rel=1e-12)
    np.testing.assert_allclose(g, gc, rtol=1e-12)
    draws = part.layout.unpack(x[None, :])
    c = np.concatenate([[-np.inf], draws["cutpoints"][0], [np.inf]])
    eta = X[:, 0] * draws["beta"][0, 0]
    j = y.astype(int)
    ref = np.log(stats.logistic.cdf(c[j + 1] - eta) - stats.logistic.cdf(c[j] - eta))
    ll = part.loglik(draws, data)[0]
    np.testing.assert_allclose(ll, ref, rtol=1e-11)
    assert np.all(ll <= 0.0)
    np.testing.assert_allclose(part.log_density_values(ll, y), ref - np.asarray(lw)[j], rtol=1e-11)
    with pytest.raises(ValueError, match=r"'log_widths' must hold 6 finite numbers"):
        make_part("binned", "y", (), n_levels=k, log_widths=(0.0,))


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(23)
    a = rng.choice(["x", "y"], N).astype(object)
    v = np.round(np.exp(rng.normal(2.5, 0.8, N)), 1).clip(1, 100)
    v[rng.random(N) < 0.1] = np.nan
    v[rng.random(N) < 0.05] = -9.0  # a code
    frame = pd.DataFrame({"a": pd.array(a, dtype=object), "v": v})
    model = FileModel(bins={"v": EDGES}, missing_codes={"v": [-9]})
    prepared = model.prepare(frame)
    parts, data = model.parts(prepared), model.part_data(prepared)
    draws = {}
    for part in parts:
        x = part.initial_point(1) + rng.normal(scale=0.3, size=(4, part.layout.size))
        draws.update({f"{part.name}::{k}": d for k, d in part.layout.unpack(x).items()})
    return frame, model, prepared, parts, data, draws


def _by_hand(frame, draws, m):
    p = {k: d[m] for k, d in draws.items()}
    a = frame.a.to_numpy(dtype=object)
    f = np.log(p["a::p"][(a == "y").astype(int)])
    Xa = (a == "y").astype(float)[:, None]
    v = frame.v.to_numpy()
    obs = ~np.isnan(v) & (v != -9)
    status = np.select([obs, np.isnan(v)], [0, 1], 2)
    logits = np.column_stack([np.zeros(N), p["v.status::intercept"] + Xa @ p["v.status::beta"]])
    f += special.log_softmax(logits, axis=1)[np.arange(N), status]
    j = np.clip(np.searchsorted(EDGES, np.where(obs, v, 3.0), side="right") - 1, 0, 5)
    c = np.concatenate([[-np.inf], p["v.value::cutpoints"], [np.inf]])
    eta = Xa[:, 0] * p["v.value::beta"][0]
    s = np.exp(-Xa[:, 0] * p["v.value::gamma"][0])  # location-scale (the default)
    lv = np.log(stats.logistic.cdf((c[j + 1] - eta) * s) - stats.logistic.cdf((c[j] - eta) * s))
    return f + np.where(obs, lv, 0.0)


def test_plan_record_loglik_and_accountant(setup):
    frame, _, prepared, parts, data, draws = setup
    assert [p.name for p in parts] == ["a", "v.status", "v.value"]
    assert parts[2].family == "binned" and parts[2].n_levels == 6
    row = prepared.plan.choices().set_index("column").loc["v"]
    assert row["model"] == "binned" and "6 bins from 1 to 100 (declared)" in row["reason"]
    F = PartAccountant(parts, data)(draws)
    for m in range(4):
        np.testing.assert_allclose(F[m], _by_hand(frame, draws, m), rtol=1e-10, atol=1e-10)
    grouped = [GroupedData.of(p, d) for p, d in zip(parts, data, strict=True)]
    c = np.random.default_rng(4).uniform(0, 1, N)
    red = PartAccountant(parts, grouped).reduce_abs(draws, c)
    Fb = np.array([_by_hand(frame, draws, m) for m in range(4)])
    np.testing.assert_allclose(red.per_record, np.abs(Fb).max(axis=0), rtol=1e-10)


def test_synthetic_values_lie_in_their_bins_and_codes_stay_codes(setup):
    frame, model, _, _, _, _ = setup
    seen = False
    for syn in _synth(model, frame, np.random.default_rng(5), m=3, scale=2.0):
        v = syn.v.dropna().to_numpy()
        seen |= bool((v == -9).any())
        values = v[v != -9]
        assert values.size and (values >= 1).all() and (values <= 100).all()
    assert seen


def test_bad_bin_declarations(frame):
    with pytest.raises(ValueError, match=r"'binned' of column 'wage' needs declared bins"):
        make_plan(frame, Declarations.from_arguments(models={"wage": "binned"},
                                                     missing_codes={"wage": [-9]}))  # fmt: skip
    decl = Declarations.from_arguments(bins={"wage": [5, 10, 100]}, missing_codes={"wage": [-9]})
    with pytest.raises(ValueError, match=r"Column 'wage' holds the value .*outside its declared "
                                         r"bins \[5, 100\]"):  # fmt: skip
        make_plan(frame, decl)
    decl = Declarations.from_arguments(bins={"region": [0, 1, 2]})
    with pytest.raises(ValueError, match=r"Bins are declared for column 'region'"):
        make_plan(frame, decl)
    with pytest.raises(ValueError, match=r"declare bins and a bounded grid"):
        Declarations.from_arguments(bins={"age": [0, 50, 100]},
                                    grid={"age": {"step": 1, "bounds": [0, 100]}})  # fmt: skip
    decl = Declarations.from_arguments(bins={"age": [0, 50, 100]}, models={"age": "normal"})
    with pytest.raises(ValueError, match=r"'age' declares bins but its model is 'normal'"):
        make_plan(frame, decl)


def test_a_small_fit_follows_a_bimodal_column():
    """Two well separated modes that no log-normal follows: the synthetic share of each half is
    the real one within Monte Carlo error (4 sd of both samples)."""
    from pseudopost.synthesis import synthesize

    rng = np.random.default_rng(9)
    n = 500
    x = np.where(rng.random(n) < 0.3, rng.normal(10, 1, n), rng.normal(60, 5, n)).clip(1, 99)
    frame = pd.DataFrame({"g": rng.choice(["a", "b"], n), "x": np.round(x, 1)})
    out = synthesize(frame, bins={"x": np.linspace(0, 100, 41).tolist()}, draws=100, tune=100,
                     chains=1, seed=3, progress=False)  # fmt: skip
    syn = pd.concat([out.synthesize(seed=s, weighted=False) for s in range(3)])
    real_low, syn_low = (frame.x < 35).mean(), (syn.x < 35).mean()
    sd = np.sqrt(real_low * (1 - real_low) * (1 / n + 1 / len(syn)))
    assert abs(syn_low - real_low) < 4 * sd + 0.02
    # the gap between the modes stays nearly empty: its 8 empty bins keep only what the prior
    # and the ordering give them (about 1/n each), where one log-normal would put ~20 % there
    assert ((syn.x > 20) & (syn.x < 40)).mean() < 0.05
    assert out.epsilon < out.unweighted_epsilon

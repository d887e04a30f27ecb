"""A record's log-likelihood under a whole-file model is the sum of its parts, computed here by
hand with SciPy from the raw frame (records with and without missing cells, a code, a spike and
a rule-fixed cell), and the fused per-column accountant equals brute force on it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from pseudopost.models.file import FileModel
from pseudopost.models.parts import GroupedData
from pseudopost.privacy.kernels.parts import PartAccountant

N = 240


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(3)
    a = rng.choice(["x", "y", "z"], N).astype(object)
    a[rng.random(N) < 0.15] = None
    b = np.round(rng.lognormal(1.0, 0.7, N), 3)
    u = rng.random(N)
    b[u < 0.1] = np.nan
    b[(u >= 0.1) & (u < 0.2)] = -8.0
    b[(u >= 0.2) & (u < 0.35)] = 0.0
    c = rng.poisson(2.0, N).astype(np.int64)
    c[pd.isna(a)] = 0  # the rule below
    frame = pd.DataFrame({"a": pd.array(a, dtype=object), "b": b, "c": c})
    model = FileModel(
        models={"b": "lognormal", "c": "poisson"},
        missing_codes={"b": [-8]},
        spikes={"b": [0]},
        rules=["c == 0 when a is missing"],
    )
    prepared = model.prepare(frame)
    parts = model.parts(prepared)
    data = model.part_data(prepared)
    draws = {}
    for part in parts:
        x = part.initial_point(1) + rng.normal(scale=0.5, size=(6, part.layout.size))
        draws.update({f"{part.name}::{k}": v for k, v in part.layout.unpack(x).items()})
    return frame, model, prepared, parts, data, draws


def _by_hand(frame: pd.DataFrame, draws: dict, m: int) -> np.ndarray:
    """sum_k f_k(x_ik) for every record under draw m, from the raw columns (SciPy)."""
    p = {k: v[m] for k, v in draws.items()}
    a = frame.a.to_numpy(dtype=object)
    a_miss = pd.isna(frame.a).to_numpy()
    level = np.select([a_miss, a == "x", a == "y", a == "z"], [3, 0, 1, 2])
    Xa = np.column_stack([a == "y", a == "z", a_miss]).astype(float)
    f = np.log(p["a::p"][level])  # Dirichlet-categorical over x, y, z, missing
    b = frame.b.to_numpy()
    b_miss, b_code, b_zero = np.isnan(b), b == -8.0, b == 0.0
    obs = ~(b_miss | b_code | b_zero)
    status = np.select([obs, b_miss, b_code, b_zero], [0, 1, 2, 3])
    logits = np.column_stack([np.zeros(N), p["b.status::intercept"] + Xa @ p["b.status::beta"]])
    f += special.log_softmax(logits, axis=1)[np.arange(N), status]
    eta = p["b.value::intercept"] + Xa @ p["b.value::beta"]
    lb = stats.lognorm.logpdf(np.where(obs, b, 1.0), s=p["b.value::sigma"], scale=np.exp(eta))
    f += np.where(obs, lb, 0.0)
    # c's records are those with a observed ("c == 0 when a is missing" fixes the others), so
    # the indicator "a missing" is constant (0) on them: left out of c.value (aliased column)
    Xc = np.column_stack(
        [Xa[:, :2], b_miss, b_code, b_zero, np.where(obs, np.log(np.where(obs, b, 1)), 0)]
    )
    mu = np.exp(p["c.value::intercept"] + Xc @ p["c.value::beta"])
    fixed = a_miss  # "c == 0 when a is missing": those records carry no term for c
    f += np.where(fixed, 0.0, stats.poisson.logpmf(frame.c.to_numpy(), mu))
    return f


def test_parts_and_their_records(setup):
    frame, _, _, parts, data, _ = setup
    assert [p.name for p in parts] == ["a", "b.status", "b.value", "c.value"]
    assert [p.family for p in parts] == [
        "dirichlet_categorical",
        "categorical",
        "lognormal",
        "poisson",
    ]
    b = frame.b.to_numpy()
    observed = ~np.isnan(b) & (b != -8) & (b != 0)
    np.testing.assert_array_equal(data[2].active, observed)
    np.testing.assert_array_equal(data[3].active, ~pd.isna(frame.a).to_numpy())
    # "a missing" is 0 on every record of c.value: left out (its coefficient would be prior-only)
    assert "a:missing" in parts[1].predictors and "a:missing" in parts[2].predictors
    assert "a:missing" not in parts[3].predictors
    assert data[3].X.shape[1] == len(parts[3].predictors) == 6


def test_record_loglik_is_the_sum_of_its_parts_by_hand(setup):
    frame, _, _, parts, data, draws = setup
    F = PartAccountant(parts, data)(draws)
    for m in range(F.shape[0]):
        np.testing.assert_allclose(F[m], _by_hand(frame, draws, m), rtol=1e-11, atol=1e-11)
    # records with missing cells are among them, and contribute finite terms
    assert np.isfinite(F).all()


@pytest.mark.parametrize("dense", [True, False], ids=["numpy", "numba"])
@pytest.mark.parametrize("grouped", [False, True], ids=["records", "grouped"])
def test_accountant_equals_brute_force(setup, dense, grouped):
    frame, _, _, parts, data, draws = setup
    if grouped:
        data = [
            GroupedData.of(p, d) if p.kind != "gauss" else d
            for p, d in zip(parts, data, strict=True)
        ]
    F = np.array([_by_hand(frame, draws, m) for m in range(6)])
    c = np.random.default_rng(4).uniform(0, 1, N)
    acc = PartAccountant(parts, data, dense=dense)
    red = acc.reduce_abs(draws, c)
    np.testing.assert_allclose(red.per_record, np.abs(F).max(axis=0), rtol=1e-11)
    np.testing.assert_allclose(red.per_draw, np.abs(c * F).max(axis=1), rtol=1e-11)
    np.testing.assert_allclose(acc.reduce_sum(draws, c), F @ c, rtol=1e-10)


def test_grouped_statistics_equal_the_records(setup):
    _, _, _, parts, data, _ = setup
    w = np.random.default_rng(5).uniform(0, 1, N)
    for part, d in zip(parts, data, strict=True):
        g = GroupedData.of(part, d)
        assert g.n_groups <= int(d.active.sum())
        x = part.initial_point(2)
        a = part.log_density(g.statistics(part, w)).logp_grad(x)
        b = part.log_density(part.statistics(d, w)).logp_grad(x)
        assert a[0] == pytest.approx(b[0], rel=1e-12)
        np.testing.assert_allclose(a[1], b[1], rtol=1e-10, atol=1e-10)
        np.testing.assert_array_equal(g.expand().active, d.active)


def test_only_unrestricted_and_per_part_censored_accounting(setup):
    from pseudopost.privacy.decomposition import Censored, PartsCensored, Unrestricted
    from pseudopost.privacy.kernels.parts import CensoredPartAccountant

    _, _, _, parts, data, _ = setup
    acc = PartAccountant(parts, data)
    assert acc.with_decomposition(Unrestricted()) is acc
    with pytest.raises(ValueError, match="plain weighted pseudo posterior and the per-part"):
        acc.with_decomposition(Censored(1.0))
    bounds = {p.name: 1.0 / len(parts) for p in parts}
    censored = acc.with_decomposition(PartsCensored(1.0, part_bounds=bounds))
    assert isinstance(censored, CensoredPartAccountant) and censored.extra_names == ["alpha"]
    with pytest.raises(ValueError, match="'part_bounds' must name every part"):
        acc.with_decomposition(PartsCensored(1.0, part_bounds={}))

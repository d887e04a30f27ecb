"""The parts' written-out log densities: equal to PyMC's reference model and to an ungrouped
SciPy computation, value and gradient; grouped statistics add over blocks."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from pseudopost.fitting.sufficient import block_statistics
from pseudopost.models import LogNormalRegression, NormalRegression
from pseudopost.models.parts import CategoricalPart, PartData, Stats, make_part

from ..._reference.part_models import pymc_model

_COMPILED: dict = {}


def _points(part, rng, k=8):
    """Random unconstrained points around the priors' support point."""
    base = part.initial_point(0)
    return [base + rng.normal(scale=0.8, size=part.layout.size) for _ in range(k)]


def _pymc_functions(name, case):
    if name not in _COMPILED:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = pymc_model(case.part, case.data, case.weights)
            _COMPILED[name] = (
                model,
                model.compile_logp(mode="FAST_COMPILE"),
                model.compile_dlogp(mode="FAST_COMPILE"),
            )
    return _COMPILED[name]


def _pymc_point(model, part, x):
    """PyMC's value variables at the part's unconstrained x (matched by name)."""
    ip = model.initial_point()
    sl = part.layout.slices
    return {p.value_name: x[sl[p.name]].reshape(ip[p.value_name].shape) for p in part.layout.params}


def _pymc_grad(model, part, g):
    """PyMC's gradient (value-variable order) in the part's layout order."""
    ip = model.initial_point()
    names = [v.name for v in model.value_vars]
    sizes = [int(np.prod(ip[k].shape)) for k in names]
    pieces = dict(zip(names, np.split(g, np.cumsum(sizes)[:-1]), strict=True))
    return np.concatenate([pieces[p.value_name] for p in part.layout.params])


def test_logp_grad_equals_pymc(case, request):
    """Weighted (random weights in [0, 1], some 0) with inactive records, at random points."""
    part = case.part
    model, logp, dlogp = _pymc_functions(request.node.callspec.id, case)
    assert sorted(v.name for v in model.value_vars) == sorted(
        p.value_name for p in part.layout.params
    )
    density = part.log_density(part.statistics(case.data, case.weights))
    rng = np.random.default_rng(3)
    xs = _points(part, rng)
    ours = [density.logp_grad(x) for x in xs]
    theirs = [
        (float(logp(_pymc_point(model, part, x))), dlogp(_pymc_point(model, part, x))) for x in xs
    ]
    for (v, g), (rv, rg) in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(g, _pymc_grad(model, part, rg), rtol=1e-10, atol=1e-10)
        # PyMC's normal and half-normal constants carry a float32 rounding (3e-8 per
        # coefficient): compare values absolutely to 1e-6 and their differences to 1e-10
        assert v == pytest.approx(rv, abs=1e-6)
    for (v, _), (rv, _) in zip(ours[1:], theirs[1:], strict=True):
        assert v - ours[0][0] == pytest.approx(rv - theirs[0][0], rel=1e-10, abs=1e-9)


def test_grouped_equals_ungrouped_scipy_value_and_gradient(case, reference):
    """The grouped density equals the record-by-record SciPy log density (priors and Jacobian
    from SciPy and by hand); its gradient equals central differences of that reference."""
    part, data, w = case.part, case.data, case.weights
    density = part.log_density(part.statistics(data, w))
    for x in _points(part, np.random.default_rng(4), k=4):
        value, grad = density.logp_grad(x)
        assert value == pytest.approx(reference["log_density"](part, data, w, x), rel=1e-11)
        h = 1e-5
        fd = [
            (reference["log_density"](part, data, w, x + h * e)
             - reference["log_density"](part, data, w, x - h * e)) / (2 * h)
            for e in np.eye(x.size)
        ]  # fmt: skip
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(fd).max()))


def test_gradient_matches_its_own_finite_differences_far_from_the_mode(case):
    part = case.part
    density = part.log_density(part.statistics(case.data, case.weights))
    x = part.initial_point(0) + np.random.default_rng(5).normal(scale=2.0, size=part.layout.size)
    _, grad = density.logp_grad(x)
    h = 1e-6
    fd = np.array(
        [(density.logp_grad(x + h * e)[0] - density.logp_grad(x - h * e)[0]) / (2 * h)
         for e in np.eye(x.size)]
    )  # fmt: skip
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(fd).max()))


def _split(data: PartData, idx) -> PartData:
    return data.take(np.asarray(idx))


def test_statistics_of_blocks_add(case):
    """stats(A) + stats(B) = stats(A u B): same arrays (to rounding), same density, whatever
    the split and the record order."""
    part, data, w = case.part, case.data, case.weights
    whole = part.statistics(data, w)
    rng = np.random.default_rng(6)
    perm = rng.permutation(data.n)
    a, b, c = np.split(perm, [30, 71])
    parts = [part.statistics(_split(data, i), w[i]) for i in (a, b, c)]
    summed = parts[0] + parts[1] + parts[2]
    assert set(summed.arrays) == set(whole.arrays)
    for k in whole.arrays:
        np.testing.assert_allclose(summed.arrays[k], whole.arrays[k], rtol=1e-13, atol=1e-12)
    x = part.initial_point(1)
    v1, g1 = part.log_density(whole).logp_grad(x)
    v2, g2 = part.log_density(summed).logp_grad(x)
    assert v1 == pytest.approx(v2, rel=1e-13)
    np.testing.assert_allclose(g1, g2, rtol=1e-12, atol=1e-12)
    empty = part.empty_statistics()
    for k, v in (whole + empty).arrays.items():
        np.testing.assert_allclose(v, whole.arrays[k], rtol=0, atol=0)


def test_inactive_and_zero_weight_records_contribute_nothing(case):
    """Inactive records may hold anything (NaN, out of support); active records of weight 0
    may hold any valid value: the statistics do not change."""
    part, data, w = case.part, case.data, case.weights
    act = data.active
    zero = act & (w == 0)
    assert zero.any() and (~act).any()
    valid = data.y[np.flatnonzero(act & (w > 0))[0]]
    y = np.where(act, data.y, 1e300)
    y[zero] = valid
    X = np.where(act[:, None], data.X, np.nan)
    X[zero] = 5.0
    w2 = np.where(act, w, 7.0)  # weights of inactive records are irrelevant too
    a, b = part.statistics(data, w), part.statistics(PartData(y, X, act), w2)
    for k in a.arrays:
        np.testing.assert_array_equal(a.arrays[k], b.arrays[k])


def test_statistics_cost_follows_the_patterns(case):
    part, data, w = case.part, case.data, case.weights
    stats = part.statistics(data, w)
    if "rows" not in stats.arrays:
        pytest.skip("no design rows")
    keep = data.active & (w > 0)
    X = data.X[keep]
    expected = len({tuple(r) for r in X}) if X.shape[1] else 1
    assert stats.n_patterns == expected
    assert stats.arrays["rows"].shape == (expected, part.p)


def test_empty_statistics_give_the_prior(case, reference):
    part = case.part
    x = part.initial_point(2)
    value, _ = part.log_density(part.empty_statistics()).logp_grad(x)
    assert value == pytest.approx(reference["prior"](part, x), rel=1e-12)


@pytest.mark.parametrize(
    "family,model", [("normal", NormalRegression), ("lognormal", LogNormalRegression)]
)
def test_gaussian_statistics_are_the_sufficient_paths(family, model, reference):
    """Normal and log-normal parts use fitting.sufficient's exact Z'WZ statistics."""
    case = reference["build_case"](family)
    data, w = case.data, case.weights
    act = data.active
    arrays = {f"z{j}": data.X[act, j] for j in range(case.part.p)}
    arrays["y"] = data.y[act]
    ready = model("y", list(arrays)[:-1])
    expected = block_statistics(ready, arrays, w[act])
    got = case.part.statistics(data, w).arrays
    for k, v in expected.items():
        np.testing.assert_allclose(got[k], v, rtol=1e-14, atol=1e-12)


def test_layout_round_trip_and_initial_point(case):
    part = case.part
    layout = part.layout
    x = part.initial_point(3)
    values = layout.unpack(x)
    assert list(values) == layout.names
    for p in layout.params:
        assert values[p.name].shape == p.shape
    np.testing.assert_allclose(layout.pack(values), x, rtol=1e-12, atol=1e-12)
    batch = np.stack([x, x + 0.1])
    packed = layout.unpack(batch)
    for p in layout.params:
        assert packed[p.name].shape == (2, *p.shape)
    np.testing.assert_array_equal(part.initial_point(3), x)
    assert not np.array_equal(part.initial_point(4), x)
    if "cutpoints" in values:
        assert np.all(np.diff(values["cutpoints"]) > 0)
    if "p" in values:
        assert values["p"].sum() == pytest.approx(1.0)


def test_merging_statistics_of_different_parts_is_an_error():
    rng = np.random.default_rng(0)
    n = 10
    X = rng.integers(0, 2, (n, 1)).astype(float)
    a = CategoricalPart("y", ("x",), n_levels=3)
    data = PartData(rng.integers(0, 3, n).astype(float), X, np.ones(n, bool))
    poisson = make_part("poisson", "y", ["x"]).statistics(data, np.ones(n))
    with pytest.raises(ValueError, match="Cannot add statistics"):
        a.statistics(data, np.ones(n)) + poisson
    with pytest.raises(ValueError, match="needs 'categorical' statistics"):
        a.log_density(poisson)
    assert isinstance(a.statistics(data, np.ones(n)), Stats)


@pytest.mark.parametrize("hurdle", ["negative_binomial", "lognormal"])
def test_a_hurdle_model_is_the_sum_of_its_status_and_value_parts(hurdle):
    """The factorisation behind per-column fitting, on a ready model: the weighted log density
    of HurdleNegativeBinomial (HurdleLogNormal) equals a bernoulli status part (x > 0) plus a
    zero-truncated negative binomial (log-normal) value part active where x > 0, value and
    gradient, with the hurdle's priors."""
    from pseudopost.models import HurdleLogNormal, HurdleNegativeBinomial
    from pseudopost.models.base import Prepared
    from pseudopost.models.weighting import weighted_model

    rng = np.random.default_rng(21)
    n = 150
    X = np.column_stack([rng.integers(0, 3, n), rng.normal(size=n).round(1)]).astype(float)
    positive = rng.random(n) < 0.6
    if hurdle == "negative_binomial":
        x = np.where(positive, rng.poisson(2.0, n) + 1.0, 0.0)
        ready = HurdleNegativeBinomial("y", ["a", "b"])
        value = make_part("zero_truncated_negative_binomial", "y", ["a", "b"])
    else:
        x = np.where(positive, rng.lognormal(0.5, 1.0, n), 0.0)
        ready = HurdleLogNormal("y", ["a", "b"])
        value = make_part("lognormal", "y", ["a", "b"])
    status = make_part("bernoulli", "y", ["a", "b"], name="y:status")
    w = rng.uniform(0.0, 1.0, n)
    prepared = Prepared({"a": X[:, 0], "b": X[:, 1], "y": x}, n, pd.RangeIndex(n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = weighted_model(ready.build(prepared), weights=w)
        logp, dlogp = (
            model.compile_logp(mode="FAST_COMPILE"),
            model.compile_dlogp(mode="FAST_COMPILE"),
        )
    s_density = status.log_density(
        status.statistics(PartData(positive.astype(float), X, np.ones(n, bool)), w)
    )
    v_density = value.log_density(
        value.statistics(PartData(np.where(positive, x, np.nan), X, positive), w)
    )
    ip = model.initial_point()
    names = [v.name for v in model.value_vars]
    sizes = [int(np.prod(ip[k].shape)) for k in names]
    rename = {"psi_intercept": "intercept", "psi_beta": "beta"}
    values = []
    for _ in range(5):
        xs = s_density.initial_point(0) + rng.normal(scale=0.5, size=status.layout.size)
        xv = v_density.initial_point(0) + rng.normal(scale=0.5, size=value.layout.size)
        point = {}
        for part, xx, names_of in ((status, xs, rename), (value, xv, {})):
            sl = part.layout.slices
            inverse = {v: k for k, v in names_of.items()}
            for p in part.layout.params:
                name = inverse.get(p.name, p.name) if part is status else p.name
                key = p.value_name.replace(p.name, name, 1)
                point[key] = xx[sl[p.name]].reshape(ip[key].shape)
        (vs, gs), (vv, gv) = s_density.logp_grad(xs), v_density.logp_grad(xv)
        ref_g = dict(zip(names, np.split(dlogp(point), np.cumsum(sizes)[:-1]), strict=True))
        np.testing.assert_allclose(
            np.concatenate([ref_g["psi_intercept"], ref_g["psi_beta"]]), gs, rtol=1e-10, atol=1e-10
        )
        theirs = np.concatenate([ref_g[p.value_name] for p in value.layout.params])
        np.testing.assert_allclose(gv, theirs, rtol=1e-10, atol=1e-10)
        values.append((vs + vv, float(logp(point))))
    for v, rv in values:
        assert v == pytest.approx(rv, abs=1e-6)  # PyMC's float32-rounded normal constants
    for v, rv in values[1:]:
        assert v - values[0][0] == pytest.approx(rv - values[0][1], rel=1e-10, abs=1e-9)


@pytest.mark.parametrize("family", ["normal", "lognormal", "poisson"])
def test_written_out_densities_equal_the_generic_path(family, reference):
    """The normal, log-normal and Poisson parts write their log density out for speed (the
    sufficient-statistics path); it must be the generic per-parameter path's, at random points
    far from the mode too."""
    from pseudopost.models.parts.base import Part

    case = reference["build_case"](family)
    part = case.part
    density = part.log_density(part.statistics(case.data, case.weights))
    rng = np.random.default_rng(11)
    for _ in range(25):
        x = part.initial_point(0) + rng.normal(scale=2.0, size=part.layout.size)
        v, g = part.logp_grad(x, density.arrays)
        rv, rg = Part.logp_grad(part, x, density.arrays)
        assert v == pytest.approx(rv, rel=1e-12, abs=1e-9)
        np.testing.assert_allclose(g, rg, rtol=1e-11, atol=1e-9)
    assert type(part).logp_grad is not Part.logp_grad  # the written-out path is the one tested

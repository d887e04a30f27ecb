"""Sequential (whole-record) model: joint log-likelihood, synthesis order, dtypes, bad input.

Most checks use hand-made posterior draws (no MCMC): the record log-likelihood is compared with
SciPy column by column, and synthesis is checked under known parameters.
"""

import numpy as np
import pandas as pd
import pytensor
import pytest
import xarray as xr
from scipy import stats

from pseudopost.models import (
    LogNormalRegression,
    NegativeBinomialRegression,
    NormalRegression,
    RecordFunction,
)

from .._reference.sequential import SequentialModel

M = 4


def _posterior(base, values: dict[str, np.ndarray]) -> xr.Dataset:
    """A one-chain posterior Dataset with the model's dims from flat (M, ...) arrays."""
    data = {}
    for name, v in values.items():
        dims = base.named_vars_to_dims.get(name, ())
        data[name] = (("chain", "draw", *dims), np.asarray(v, float)[None])
    return xr.Dataset(data)


def _random_draws(base, rng, m=M) -> dict[str, np.ndarray]:
    out, shapes = {}, base.eval_rv_shapes()
    for rv in base.free_RVs:
        shape = tuple(shapes[rv.name])
        v = rng.normal(0.0, 0.3, size=(m, *shape))
        if rv.name.endswith(("sigma", "phi")):
            v = rng.uniform(0.5, 2.0, size=(m, *shape))
        out[rv.name] = v
    return out


@pytest.fixture
def mixed(rng):
    n = 60
    z = rng.choice(["a", "b", "c"], n)
    x = rng.normal(size=n) + (z == "b")
    y = np.exp(0.5 * x + rng.normal(0, 0.3, n))
    k = rng.poisson(3, n).astype(np.int64)
    return pd.DataFrame({"z": z, "x": x, "y": y, "k": k})


def _model():
    return SequentialModel(
        ["x", "y", "k"],
        {"x": NormalRegression, "y": "lognormal", "k": NegativeBinomialRegression},
        transforms={"y": "log1p"},
    )


def test_record_loglik_is_sum_over_columns(mixed, rng):
    model = _model()
    prep = model.prepare(mixed)
    base = model.build(prep)
    draws = _random_draws(base, rng)
    with pytensor.config.change_flags(mode="FAST_COMPILE"):
        got = RecordFunction(base, model.observed)(draws)  # (M, n)

    zb = (mixed.z == "b").to_numpy(float)  # reference level 'a'
    zc = (mixed.z == "c").to_numpy(float)
    x, y, k = (mixed[c].to_numpy(float) for c in ("x", "y", "k"))
    for m in range(M):
        d = {key: v[m] for key, v in draws.items()}
        eta_x = d["x__intercept"] + d["x__beta"] @ np.vstack([zb, zc])
        eta_y = d["y__intercept"] + d["y__beta"] @ np.vstack([zb, zc, x])
        eta_k = d["k__intercept"] + d["k__beta"] @ np.vstack([zb, zc, x, np.log1p(y)])
        phi, mu = d["k__phi"], np.exp(eta_k)
        want = (
            stats.norm.logpdf(x, eta_x, d["x__sigma"])
            + stats.lognorm.logpdf(y, s=d["y__sigma"], scale=np.exp(eta_y))
            + stats.nbinom.logpmf(k, phi, phi / (phi + mu))
        )
        np.testing.assert_allclose(got[m], want, rtol=1e-9, atol=1e-9)


def test_one_weight_per_record_multiplies_the_record_sum(mixed, rng):
    """Weighted joint log density - unweighted = sum_i (alpha_i - 1) * sum_columns logp_ij."""
    import pymc as pm

    from pseudopost.models import weighted_model

    model = _model()
    base = model.build(model.prepare(mixed))
    weighted = weighted_model(base, model.observed)
    assert {rv.name for rv in weighted.observed_RVs} == {"x", "y", "k"}
    alpha = rng.uniform(0, 1, len(mixed))
    pm.set_data({"alpha": alpha}, model=weighted)
    draws = _random_draws(base, rng, 1)
    point = base.initial_point()
    for rv in base.free_RVs:
        value = base.rvs_to_values[rv]
        tr = base.rvs_to_transforms.get(rv)
        v = draws[rv.name][0]
        point[value.name] = tr.forward(v).eval() if tr is not None else v
    record = RecordFunction(base, model.observed)({k: v for k, v in draws.items()})[0]
    with pytensor.config.change_flags(mode="FAST_COMPILE"):
        diff = weighted.compile_logp()(point) - base.compile_logp()(point)
    np.testing.assert_allclose(diff, np.sum((alpha - 1) * record), rtol=1e-9)


def test_repr_names_everything_that_shapes_the_model(mixed):
    a, b = _model(), _model()
    assert repr(a) == repr(b)
    c = SequentialModel(["x", "y", "k"], {"x": "normal", "y": "lognormal", "k": "poisson"})
    assert repr(c) != repr(a)
    a.prepare(mixed)
    other = mixed.assign(z=np.where(mixed.z == "c", "a", mixed.z))  # one level fewer
    b.prepare(other)
    assert repr(a) != repr(b)  # levels shape the design: the compile cache must tell them apart


@pytest.fixture
def typed(rng):
    n = 80
    cat = pd.Categorical(
        rng.choice(["lo", "mid", "hi"], n), categories=["lo", "mid", "hi", "unused"]
    )
    return pd.DataFrame(
        {
            "g": cat,
            "s": pd.Series(rng.choice(["p", "q"], n), dtype="string"),
            "flag": rng.random(n) < 0.4,
            "x": rng.normal(size=n),
            "k": rng.poisson(2, n).astype(np.int32),
            "w": rng.lognormal(size=n).astype(np.float32),
        }
    )


def _fake_fit(model, frame, rng, m=3):
    prep = model.prepare(frame)
    base = model.build(prep)
    return prep, base, _posterior(base, _random_draws(base, rng, m))


def test_synthetic_frames_keep_dtypes_categories_and_levels(typed, rng):
    model = SequentialModel(
        ["x", "k", "w"],
        {"x": "normal", "k": "poisson", "w": LogNormalRegression},
        transforms={"k": "log1p", "w": "log"},
    )
    prep, base, post = _fake_fit(model, typed, rng)
    frames = model.simulate(prep, base, post, np.array([0, 2]), seed=3)
    assert len(frames) == 2
    for f in frames:
        assert list(f.columns) == list(typed.columns)
        assert (f.dtypes == typed.dtypes).all(), (f.dtypes, typed.dtypes)
        assert f.index.equals(typed.index)
        assert list(f["g"].cat.categories) == ["lo", "mid", "hi", "unused"]
        for c in ("g", "s", "flag"):  # kept as given
            pd.testing.assert_series_equal(f[c], typed[c])
        assert not f["x"].equals(typed["x"])
        assert f.attrs["synthetic_columns"] == ["x", "k", "w"]
        assert f.attrs["kept_columns"] == ["g", "s", "flag"]


def test_same_seed_same_frames(typed, rng):
    model = SequentialModel(["x", "k"], {"x": "normal", "k": "poisson"})
    prep, base, post = _fake_fit(model, typed, rng)
    a = model.simulate(prep, base, post, np.array([1]), seed=11)[0]
    b = model.simulate(prep, base, post, np.array([1]), seed=11)[0]
    c = model.simulate(prep, base, post, np.array([1]), seed=12)[0]
    pd.testing.assert_frame_equal(a, b)
    assert not a["x"].equals(c["x"])


def test_simulate_conditions_on_synthetic_not_real_columns(rng):
    """y = 2 x exactly (tiny sigma): y* must follow the *synthetic* x*, not the real x."""
    n = 300
    x = rng.normal(size=n)
    frame = pd.DataFrame({"x": x, "y": 2 * x + rng.normal(0, 1e-3, n)})
    model = SequentialModel(["x", "y"], {"x": "normal", "y": "normal"})
    prep = model.prepare(frame)
    base = model.build(prep)
    post = _posterior(
        base,
        {
            "x__intercept": np.zeros(1),
            "x__sigma": np.ones(1),
            "y__intercept": np.zeros(1),
            "y__beta": np.full((1, 1), 2.0),
            "y__sigma": np.full(1, 1e-6),
        },
    )
    syn = model.simulate(prep, base, post, np.array([0]), seed=5)[0]
    np.testing.assert_allclose(syn["y"], 2 * syn["x"], atol=1e-4)
    assert abs(np.corrcoef(syn["y"], frame["x"])[0, 1]) < 0.25  # independent of the real x


def test_partially_synthetic_keeps_unmodelled_as_predictors(typed, rng):
    """unmodelled='keep': the real kept column drives the outcome."""
    frame = typed[["x"]].assign(v=3 * typed["x"])
    model = SequentialModel(["v"], {"v": "normal"})
    prep = model.prepare(frame)
    base = model.build(prep)
    post = _posterior(
        base,
        {
            "v__intercept": np.zeros(1),
            "v__beta": np.full((1, 1), 3.0),
            "v__sigma": np.full(1, 1e-6),
        },
    )
    syn = model.simulate(prep, base, post, np.array([0]), seed=1)[0]
    np.testing.assert_allclose(syn["v"], 3 * typed["x"], atol=1e-4)
    assert syn.attrs["kept_columns"] == ["x"]


def test_instance_spec_uses_its_own_predictors(mixed):
    model = SequentialModel(
        ["x", "y"], {"x": "normal", "y": LogNormalRegression("y", ["x"], prior_scale=3.0)}
    )
    prep = model.prepare(mixed)
    cm = model.column_models(prep)
    assert cm["y"].predictors == ("x",)  # not z
    assert cm["y"].prior_scale == 3.0
    assert cm["x"].predictors == ("z[b]", "z[c]", "k")  # kept columns condition


# ------------------------------------------------------------------------------------------
# Bad input: clear errors before any work
# ------------------------------------------------------------------------------------------


def test_missing_order_column(mixed):
    with pytest.raises(ValueError, match=r"Unknown column\(s\) \['nope'\]"):
        SequentialModel(["x", "nope"], {"x": "normal", "nope": "normal"}).prepare(mixed)


def test_model_support_excludes_observed_values(mixed):
    bad = mixed.assign(y=mixed.y.where(mixed.index != 7, 0.0))
    with pytest.raises(ValueError, match=r"Column 'y' must be strictly positive.*row 7 has .*0\.0"):
        SequentialModel(["x", "y"], {"x": "normal", "y": "lognormal"}).prepare(bad)


def test_count_model_on_non_integers(mixed):
    with pytest.raises(ValueError, match=r"Column 'x' must be a non-negative integer count"):
        SequentialModel(["x"], {"x": "poisson"}).prepare(mixed)


def test_single_level_categorical_is_refused(mixed):
    frame = mixed.assign(one="only")
    with pytest.raises(ValueError, match=r"Column 'one' has a single level 'only'"):
        SequentialModel(["x"], {"x": "normal"}, unmodelled="marginal").prepare(frame)


def test_missing_values_named(mixed):
    frame = mixed.assign(z=mixed.z.where(mixed.index != 3, None))
    with pytest.raises(ValueError, match=r"Column 'z' has missing values \(row 3"):
        SequentialModel(["x"], {"x": "normal"}).prepare(frame)


def test_empty_frame(mixed):
    with pytest.raises(ValueError, match=r"at least 2 rows. Got 0"):
        SequentialModel(["x"], {"x": "normal"}).prepare(mixed.iloc[:0])


def test_model_conditioning_on_a_later_column(mixed):
    model = SequentialModel(["x", "y"], {"x": NormalRegression("x", ["y"]), "y": "lognormal"})
    with pytest.raises(ValueError, match=r"column 'x' conditions on \['y'\]"):
        model.prepare(mixed)


def test_constructor_errors():
    with pytest.raises(ValueError, match=r"No model given for column\(s\) \['y'\]"):
        SequentialModel(["x", "y"], {"x": "normal"})
    with pytest.raises(ValueError, match=r"Unknown model name 'gamma' for column 'x'"):
        SequentialModel(["x"], {"x": "gamma"})
    with pytest.raises(ValueError, match=r"outcome must be 'x'"):
        SequentialModel(["x"], {"x": NormalRegression("y")})
    with pytest.raises(ValueError, match=r"in both 'order' and 'keep'"):
        SequentialModel(["x"], {"x": "normal"}, keep=["x"])
    with pytest.raises(TypeError, match=r"not the string 'x'"):
        SequentialModel("x", {"x": "normal"})
    with pytest.raises(ValueError, match=r"transform of column 'x'"):
        SequentialModel(["x"], {"x": "normal"}, transforms={"x": "sqrt"})


def test_transform_domain_checked(mixed):
    frame = mixed.assign(x=mixed.x - 10)
    with pytest.raises(ValueError, match=r"Transform 'log' of column 'x' needs values > 0"):
        SequentialModel(
            ["x", "y"], {"x": "normal", "y": "lognormal"}, transforms={"x": "log"}
        ).prepare(frame)


def test_input_frame_is_not_modified(mixed):
    before = mixed.copy()
    _model().prepare(mixed)
    pd.testing.assert_frame_equal(mixed, before)


def test_record_loglik_equals_sum_of_standalone_column_models(rng):
    """Every ready family inside the joint model: the joint per-record log-likelihood equals the
    sum of each column model built and evaluated on its own (unprefixed parameters)."""
    n = 50
    edu = pd.Categorical(
        rng.choice(["low", "mid", "high"], n), categories=["low", "mid", "high"], ordered=True
    )
    frame = pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], n),
            "race": rng.choice(["a", "b", "c"], n),
            "edu": edu,
            "gain": np.where(rng.random(n) < 0.6, 0.0, rng.lognormal(5, 1, n)),
            "hours": rng.normal(40, 8, n),
            "y": rng.lognormal(1, 0.5, n),
        }
    )
    model = SequentialModel(
        ["sex", "race", "edu", "gain", "hours", "y"],
        {
            "sex": "dirichlet_categorical",
            "race": "categorical",
            "edu": "ordinal",
            "gain": "hurdle_lognormal",
            "hours": "mixture",
            "y": "lognormal",
        },
        transforms={"gain": "log1p", "edu": "codes", "hours": (40.0, 10.0)},
    )
    prep = model.prepare(frame)
    base = model.build(prep)
    draws = _random_draws(base, rng)
    for name, v in list(draws.items()):  # valid values for constrained parameters
        if name.endswith("__p") or name.endswith("__w"):
            draws[name] = rng.dirichlet(np.ones(v.shape[-1]), size=v.shape[0])
        if name.endswith("cutpoints"):
            draws[name] = np.sort(v, axis=-1)
        if name == "hours__mu":
            draws[name] = np.sort(rng.normal(0.0, 5.0, v.shape), axis=-1) + 40.0
        if name == "hours__sigma":
            draws[name] = rng.uniform(5.0, 10.0, v.shape)
    with pytensor.config.change_flags(mode="FAST_COMPILE"):  # small n: skip numba compilation
        joint = RecordFunction(base, model.observed)(draws)
    total = np.zeros_like(joint)
    own = model.column_prepared(prep)
    for col, cm in model.column_models(prep).items():
        alone = cm.build(own[col])
        prefix = f"{col}__"
        sub = {k[len(prefix) :]: v for k, v in draws.items() if k.startswith(prefix)}
        with pytensor.config.change_flags(mode="FAST_COMPILE"):
            part = RecordFunction(alone, [col])(sub)
        assert np.all(np.isfinite(part)), col
        total += part
    np.testing.assert_allclose(joint, total, rtol=1e-10, atol=1e-10)
    syn = model.simulate(prep, base, _posterior(base, draws), np.array([0]), seed=2)[0]
    assert (syn.dtypes == frame.dtypes).all()
    assert list(syn["edu"].cat.categories) == ["low", "mid", "high"]
    assert set(syn["race"]) <= {"a", "b", "c"}
    assert (syn["gain"] >= 0).all()


def test_marginal_mode_synthesizes_unmodelled_columns_first(mixed, rng):
    """unmodelled='marginal': z gets a Dirichlet-categorical, is drawn first, and x is
    conditioned on the synthetic z."""
    model = SequentialModel(["x"], {"x": "normal"}, keep=["k"], unmodelled="marginal")
    frame = mixed[["z", "x", "k"]]
    prep = model.prepare(frame)
    assert model.observed == ("z", "x")
    assert model.roles(prep) == {"z": "marginal", "x": "synthetic", "k": "kept"}
    assert type(model.column_models(prep)["z"]).__name__ == "DirichletCategorical"
    assert model.column_models(prep)["x"].predictors == ("k", "z[b]", "z[c]")
    base = model.build(prep)
    post = _posterior(
        base,
        {
            "z__p": np.array([[0.0, 0.0, 1.0]]),  # every synthetic z is 'c'
            "x__intercept": np.zeros(1),
            "x__beta": np.array([[0.0, 0.0, 100.0]]),  # predictors k, z[b], z[c]
            "x__sigma": np.full(1, 1e-6),
        },
    )
    syn = model.simulate(prep, base, post, np.array([0]), seed=4)[0]
    assert (syn["z"] == "c").all()
    np.testing.assert_allclose(syn["x"], 100.0, atol=1e-3)  # follows the synthetic z
    pd.testing.assert_series_equal(syn["k"], frame["k"])
    assert syn.attrs["synthetic_columns"] == ["z", "x"]
    assert syn.attrs["kept_columns"] == ["k"]


def test_integer_and_bool_columns_as_levels_keep_their_dtype(rng):
    """A low-cardinality integer modelled as categorical and a bool modelled by logistic
    regression come back as int / bool holding only observed values."""
    n = 60
    frame = pd.DataFrame(
        {
            "kids": rng.choice([0, 1, 3], n).astype(np.int64),  # 2 never occurs
            "flag": rng.random(n) < 0.5,
        }
    )
    model = SequentialModel(["kids", "flag"], {"kids": "categorical", "flag": "logistic"})
    prep, base, post = _fake_fit(model, frame, rng, m=2)
    assert prep.dtypes["kids"].levels == (0, 1, 3)
    assert model.column_models(prep)["flag"].predictors == ("kids[1]", "kids[3]")
    syn = model.simulate(prep, base, post, np.array([0, 1]), seed=8)
    for f in syn:
        assert (f.dtypes == frame.dtypes).all()
        assert set(f["kids"]) <= {0, 1, 3}
        assert f["flag"].dtype == bool

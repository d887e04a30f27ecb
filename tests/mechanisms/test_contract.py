"""One contract for every lighter mechanism (scikit-learn's ``check_estimator`` habit).

Each case fits (or releases) on small data and is held to the same checks:

* fit, then sample: frame outputs keep the input's columns and dtypes;
* ``privacy_statement`` is present and equals, exactly, the figures the mechanism reports itself
  (``epsilon_``/``delta_``, ``privacy_report()``, ``stages()``, or the release's own fields);
* the same seed gives the same release and the same samples, another seed another output;
* the input is not modified;
* bad input (a bad epsilon, a missing column, a wrong dtype) raises a ``ValueError`` or
  ``TypeError`` naming the argument and the value, before any noise is drawn (a tripwire on the
  shared noise samplers fails the test otherwise).

The two non-private baselines instead refuse to state a guarantee, naming themselves.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pseudopost.mechanisms import (
    MST,
    PRISM,
    AllFeaturesUniform,
    CorrelationTopK,
    EntropyHistogram,
    IndependenceOnly,
    JointHistogramRelease,
    PrivacyTestSynthesizer,
    ResampleProposal,
    WienerMean,
    make_method,
    synthetic_counts,
)
from pseudopost.privacy import PrivacyStatement
from pseudopost.privacy import noise as noise_module

N = 240
EDGES = {"x": [-4.0, -1.0, 0.0, 1.0, 4.0]}


def _frame(seed: int = 3) -> pd.DataFrame:
    """Mixed dtypes: float, int32, bool, str, pandas categorical and an int64 label."""
    rng = np.random.default_rng(seed)
    k = rng.integers(0, 5, N)
    y = (rng.random(N) < 0.25 + 0.12 * k).astype(np.int64)
    return pd.DataFrame(
        {
            "x": rng.normal(y, 1.0),
            "k": k.astype(np.int32),
            "b": rng.random(N) < 0.4,
            "c": rng.choice(["u", "v", "w"], N),
            "g": pd.Categorical(rng.choice(["p", "q"], N)),
            "y": y,
        }
    )


def _codes(seed: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.integers(0, 2, size=(40, 3)), columns=["a", "b", "c"])


def _paths(seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.normal(0.0, np.sqrt(1 / 12), size=(30, 12)), axis=1)


PROPOSAL = ResampleProposal((np.array([0.6, 0.4]), np.array([0.5, 0.5]), np.array([0.7, 0.3])), 1)


@dataclass(frozen=True)
class Case:
    """How one mechanism is built, fitted, sampled and read (see the module docstring)."""

    name: str
    data: Callable[[], Any]
    make: Callable[[int], Any]
    fit: Callable[[Any, Any, int], Any]
    draw: Callable[[Any, int | None], Any]
    figures: Callable[[Any], tuple[float, float]]
    bad_epsilon: Callable[[], Any]
    missing: Callable[[Any], Any]
    missing_names: tuple[str, ...]
    wrong_dtype: Callable[[Any], Any]
    dtype_names: tuple[str, ...]
    #: the output is the release itself (no sampling step with its own seed)
    output_is_release: bool = False


def _reps(method: str) -> Case:
    return Case(
        f"reps/{method}",
        _frame,
        lambda s: make_method(method, 2.0, seed=s),
        lambda m, d, s: m.fit(d, "y"),
        lambda f, s: f.sample(60, seed=s),
        lambda f: (f.epsilon_, f.delta_),
        lambda: make_method(method, -1.0),
        lambda d: make_method(method, 2.0).fit(d, "nope"),
        ("nope",),
        lambda d: make_method(method, 2.0).fit(d.assign(x=pd.Timestamp("2024-01-01")), "y"),
        ("'x'", "datetime64"),
    )


def _report(f) -> tuple[float, float]:
    rep = f.privacy_report()
    return rep["epsilon"], rep["delta"]


def _marginal(name: str, make: Callable[..., Any], fit: Callable[[Any, Any], Any]) -> Case:
    return Case(
        name,
        _frame,
        lambda s: make(1.0, bins=EDGES, seed=s),
        lambda m, d, s: fit(m, d),
        lambda f, s: f.sample(60, seed=s),
        _report,
        lambda: make(-1.0),
        lambda d: fit(make(1.0, bins={**EDGES, "nope": [0, 1]}), d),
        ("nope",),
        lambda d: fit(make(1.0, bins={**EDGES, "c": [0.0, 1.0]}), d),
        ("'c'", "str"),
    )


def _prism(cls):
    def make(eps, **kw):
        extra = {"parents": ["k"]} if cls is PRISM else {}
        return cls(eps, target="y", backend="naive_bayes", **extra, **kw)

    return make


def _joint(eps: float) -> JointHistogramRelease:
    return JointHistogramRelease(
        eps, None, ("x", "k", "b", "g", "y"), bins=EDGES, entropy_share=0.2
    )


def _joint_missing(d):
    return JointHistogramRelease(1.0, None, ("x", "nope"), bins=EDGES).fit(d, seed=0)


def _joint_dtype(d):
    return JointHistogramRelease(1.0, None, ("x", "c"), bins={**EDGES, "c": [0, 1, 2]}).fit(d)


CASES = [
    _reps("reps"),
    _reps("dp_uniform"),
    _reps("dp_uniform_split"),
    _reps("random_downweight"),
    _reps("hard_removal"),
    _marginal("prism", _prism(PRISM), lambda m, d: m.fit(d)),
    _marginal("all_features_uniform", _prism(AllFeaturesUniform), lambda m, d: m.fit(d)),
    _marginal("independence", IndependenceOnly, lambda m, d: m.fit(d)),
    _marginal("mst", lambda eps, **kw: MST(eps, iters=30, **kw), lambda m, d: m.fit(d)),
    Case(
        "joint_histogram",
        _frame,
        lambda s: _joint(1.0),
        lambda m, d, s: m.fit(d, seed=s),
        lambda f, s: f.sample(60, seed=s),
        lambda f: (sum(s["epsilon"] for s in f.stages()), sum(s["delta"] for s in f.stages())),
        lambda: _joint(-1.0),
        _joint_missing,
        ("nope",),
        _joint_dtype,
        ("'c'", "str"),
    ),
    Case(
        "entropy_histogram",
        lambda: _frame()["k"].to_numpy(),
        lambda s: EntropyHistogram(1.0, bins=5),
        lambda m, d, s: m.release(d, seed=s),
        lambda f, s: synthetic_counts(f, 60, seed=s),
        lambda f: (f.epsilon, f.delta),
        lambda: EntropyHistogram(-1.0, bins=5),
        lambda d: EntropyHistogram(1.0, bins=5).release(np.c_[d, d], seed=0),
        ("'data'", "1-D", "(240, 2)"),
        lambda d: EntropyHistogram(1.0, bins=5).release(d.astype(str), seed=0),
        ("'data'", "numeric", "<U"),
    ),
    Case(
        "wiener_mean",
        _paths,
        lambda s: WienerMean(1.0, 1e-4, rho=0.01, norm_bound=2.0),
        lambda m, d, s: m.release(d, seed=s),
        lambda f, s: f.mean,
        lambda f: (f.epsilon, f.delta),
        lambda: WienerMean(-1.0, 1e-4, rho=0.01, norm_bound=2.0),
        lambda d: WienerMean(
            1.0, 1e-4, rho=0.01, norm_bound=2.0, grid=np.arange(1, 11) / 10
        ).release(d, seed=0),
        ("'grid'", "12", "10"),
        lambda d: WienerMean(1.0, 1e-4, rho=0.01, norm_bound=2.0).release(d.astype(str), seed=0),
        ("'paths'", "numeric", "<U"),
        output_is_release=True,
    ),
    Case(
        "privacy_test",
        _codes,
        lambda s: PrivacyTestSynthesizer(4, 1, 2.0, 1.0, PROPOSAL),
        lambda m, d, s: m.sample(d, 50, seed=s),
        lambda f, s: f.records,
        lambda f: (f.epsilon_total, f.delta_total),
        lambda: PrivacyTestSynthesizer(4, 1, 2.0, -1.0, PROPOSAL),
        lambda d: PrivacyTestSynthesizer(4, 1, 2.0, 1.0, PROPOSAL).sample(d[["a", "b"]], 5, 0),
        ("2 columns", "3 attributes"),
        lambda d: PrivacyTestSynthesizer(4, 1, 2.0, 1.0, PROPOSAL).sample(d + 0.5, 5, 0),
        ("'data'", "integer", "float64"),
        output_is_release=True,
    ),
]
IDS = [c.name for c in CASES]


@pytest.fixture(scope="module")
def fitted():
    """Each case fitted twice with seed 0 (and its input), shared by the checks."""
    out = {}
    for case in CASES:
        data = case.data()
        before = data.copy()
        a = case.fit(case.make(0), data, 0)
        b = case.fit(case.make(0), data, 0)
        out[case.name] = (data, before, a, b)
    return out


def _equal(x, y) -> bool:
    if isinstance(x, pd.DataFrame):
        return x.equals(y) and list(x.dtypes) == list(y.dtypes)
    return np.array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_fit_then_sample_keeps_columns_and_dtypes(case, fitted):
    data, _, a, _ = fitted[case.name]
    out = case.draw(a, 1)
    if isinstance(data, pd.DataFrame) and case.name != "privacy_test":
        assert len(out) == 60
        assert list(out.columns) == [c for c in data.columns if c in out.columns]
        assert out.dtypes.to_dict() == data[out.columns].dtypes.to_dict()
        assert isinstance(out.index, pd.RangeIndex)
    elif case.name == "privacy_test":
        assert list(out.columns) == list(data.columns) and (out.dtypes == np.int64).all()
    else:
        assert np.isfinite(np.asarray(out, dtype=float)).all()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_privacy_statement_equals_the_mechanisms_own_figures(case, fitted):
    _, _, a, _ = fitted[case.name]
    stmt = a.privacy_statement
    assert isinstance(stmt, PrivacyStatement)
    assert (stmt.epsilon, stmt.delta) == case.figures(a)  # exactly, not approximately
    assert stmt.unit == "release" and stmt.epsilon > 0
    assert stmt.neighbouring and stmt.source and stmt.mechanism
    assert PrivacyStatement.from_dict(stmt.as_dict()) == stmt


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_same_seed_same_output_other_seed_other_output(case, fitted):
    data, _, a, b = fitted[case.name]
    assert _equal(case.draw(a, 7), case.draw(b, 7))
    other = case.fit(case.make(1), data, 1) if case.output_is_release else a
    assert not _equal(case.draw(a, 7), case.draw(other, 8))
    if case.name.startswith(("reps", "prism", "all_features", "independence", "mst")):
        # seed=None continues the fit seed's stream: the same for the same fit seed
        assert _equal(case.draw(a, None), case.draw(b, None))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_input_is_not_modified(case, fitted):
    data, before, a, _ = fitted[case.name]
    case.draw(a, 2)
    if isinstance(data, pd.DataFrame):
        pd.testing.assert_frame_equal(data, before)
    else:
        np.testing.assert_array_equal(data, before)


@pytest.fixture
def noise_tripwire(monkeypatch):
    """Any draw from the shared Laplace/Gaussian samplers fails the test."""
    originals = {noise_module.gaussian_noise, noise_module.laplace_noise}

    def tripwire(*args, **kwargs):
        raise AssertionError("noise was drawn before the bad input was refused")

    for name, module in list(sys.modules.items()):
        if not name.startswith("pseudopost"):
            continue
        for attr in ("gaussian_noise", "laplace_noise"):
            if getattr(module, attr, None) in originals:
                monkeypatch.setattr(module, attr, tripwire)


def _refused(call, names: tuple[str, ...]) -> None:
    with pytest.raises((ValueError, TypeError)) as err:
        call()
    for name in names:
        assert name in str(err.value), f"{name!r} not named in: {err.value}"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_bad_input_is_refused_before_any_work(case, noise_tripwire):
    data = case.data()
    before = data.copy()
    epsilon_name = "'epsilon0'" if case.name == "privacy_test" else "'epsilon'"
    _refused(case.bad_epsilon, (epsilon_name, "-1"))
    _refused(lambda: case.missing(data), case.missing_names)
    _refused(lambda: case.wrong_dtype(data), case.dtype_names)
    if isinstance(data, pd.DataFrame):
        pd.testing.assert_frame_equal(data, before)


def test_the_tripwire_fires_on_a_valid_fit(noise_tripwire):
    """The tripwire above can fail: a valid fit does draw noise through it."""
    with pytest.raises(AssertionError, match="noise was drawn"):
        make_method("reps", 2.0, seed=0).fit(_frame(), "y")


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (
            lambda: make_method("non_private", 1.0, seed=0).fit(_frame(), "y"),
            "NonPrivateNaiveBayes",
        ),
        (
            lambda: CorrelationTopK(
                1.0, target="y", k=2, backend="naive_bayes", bins=EDGES, seed=0
            ).fit(_frame()),
            "CorrelationTopK",
        ),
    ],
    ids=["non_private", "correlation_top_k"],
)
def test_non_private_baselines_state_no_guarantee(build, name):
    est = build()
    out = est.sample(30, seed=0)
    assert len(out) == 30 and out.dtypes.to_dict() == _frame()[out.columns].dtypes.to_dict()
    with pytest.raises(RuntimeError, match=f"{name}.*no privacy statement"):
        _ = est.privacy_statement


def _released(fitted_mechanism):
    """The released record of a fitted mechanism (the estimators keep it as ``release_``)."""
    for name in ("release_", "histogram_"):
        rel = getattr(fitted_mechanism, name, None)
        if rel is not None:
            return rel
    return fitted_mechanism


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_release_cards_are_short_and_state_the_guarantee(case, fitted):
    """``repr`` and ``_repr_html_`` of every lighter mechanism's release: a short card named by
    its class that states the epsilon (not the dataclass dump of its arrays)."""
    a = fitted[case.name][2]
    rel = _released(a)
    name = type(rel).__name__
    eps = a.privacy_statement.epsilon  # the mechanism's own statement
    if case.name == "joint_histogram":  # the counts' own share of the release's budget
        eps = a.histogram_.epsilon
    text, page = repr(rel), rel._repr_html_()
    assert len(text) < 2000 and text.startswith(f"<{name}>")
    assert any(format(float(eps), f) in text for f in (".4g", ".6g")), text
    assert page.startswith("<div class='pseudopost-card'>") and name in page
    assert "DP" in text or "epsilon" in text

"""``synthesize(censor_epsilon=...)``: global DP for a whole file by censoring each part (issue
30 item 2). The sampled density is the censored one exactly for every part family that can be
censored; each part's censored term stays within its B_k on the draws and the accountant's
bound equals brute force; the statement's scope, epsilon and split; the refusals; one seed one
file. The empirical audit is ``tests/privacy/test_audit_file.py``."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from pseudopost import PseudoPosterior
from pseudopost.fitting.censored import CensoredDensity, split_bound
from pseudopost.fitting.columns import file_part_data
from pseudopost.models.file import FileModel
from pseudopost.models.parts import SEP
from pseudopost.synthesis import synthesize

EPS = 6.0


def _small(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "a": pd.Categorical(rng.choice(["n", "y"], n), categories=["n", "y"]),
        "b": pd.Categorical(rng.choice(["p", "q", "r"], n), categories=["p", "q", "r"]),
    })  # fmt: skip


def _survey(n=120, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.integers(16, 80, n)
    employed = np.where(age < 18, "no", rng.choice(["yes", "no"], n, p=[0.7, 0.3]))
    wage = np.where(employed == "no", np.nan, np.round(rng.lognormal(2.5, 0.5, n), 2))
    wage = np.where((employed == "yes") & (rng.random(n) < 0.1), -9.0, wage)
    return pd.DataFrame({
        "sex": rng.choice(["F", "M"], n),
        "region": rng.choice(["north", "south", "east"], n),
        "age": age,
        "employed": employed,
        "wage": wage,
        "gains": np.where(rng.random(n) < 0.6, 0.0, np.round(rng.lognormal(7, 1, n))),
        "score": rng.normal(size=n),
        "kids": rng.negative_binomial(2, 0.3, n) * 3,
        "health": pd.Categorical(rng.choice(["poor", "fair", "good"], n),
                                 categories=["poor", "fair", "good"], ordered=True),
    })  # fmt: skip


def test_censored_density_is_exact_for_every_censorable_family():
    """logp = sum_i clip(w_i f_i, -B, B) + log prior + log-Jacobian (brute force from the
    part's per-record log-likelihood) and its gradient (central differences), for the
    families of a survey-like file: Dirichlet-categorical, categorical, masked categorical,
    Bernoulli status, cumulative grid, log-normal, normal, negative binomial, ordinal."""
    model = FileModel(
        missing_codes={"wage": [-9]}, rules=["wage is missing when employed == 'no'"],
        structural_zeros=["employed == 'yes' and age < 18"], spikes={"gains": [0.0]},
        grid={"age": {"step": 1, "bounds": [16, 80]}},
        models={"wage": "lognormal", "kids": "negative_binomial"},
    )  # fmt: skip
    prepared = model.prepare(_survey())
    parts, data = file_part_data(model, prepared)
    rng = np.random.default_rng(1)
    families = set()
    for part, d in zip(parts, data, strict=True):
        dens = CensoredDensity(part, d, rng.uniform(0.2, 1.0, prepared.n), 0.7)
        x = 0.3 * part.initial_point(1)
        lp, grad = dens.logp_grad(x)
        terms = dens.contributions(part.layout.unpack(x))
        empty = part.empty_statistics()
        prior = part.logp_grad(x, {**empty.arrays, **part.derived(empty.arrays)})[0]
        assert lp == pytest.approx(terms.sum() + prior, abs=1e-9), part.name
        assert np.abs(terms).max() <= 0.7
        h = 1e-6
        fd = [(dens.logp_grad(x + h * e)[0] - dens.logp_grad(x - h * e)[0]) / (2 * h)
              for e in np.eye(x.size)]  # fmt: skip
        np.testing.assert_allclose(grad, fd, atol=1e-5, err_msg=part.name)
        families.add(part.family)
    assert {"dirichlet_categorical", "categorical", "masked_categorical", "bernoulli",
            "cumulative", "lognormal", "normal", "negative_binomial",
            "ordinal"} <= families  # fmt: skip


def _run(shift=0.0, seed=1, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a small file's diagnostics
        return synthesize(_small(), censor_epsilon=EPS, shift=shift, seed=seed, draws=100,
                          **kw)  # fmt: skip


@pytest.fixture(scope="module")
def ones():
    return _run(shift=1.0)


@pytest.fixture(scope="module")
def risk():
    return _run()


def _brute(out):
    """Per record and draw, sum_k clip(alpha_i r_ik f_ik, -B_k, B_k) from the parts' own
    log-likelihoods on the draws; and each part's clipped terms."""
    res = out.result
    parts, data = file_part_data(out.model, res.prepared)
    bounds = json.loads(res.datatree["privacy"].attrs["censor_bounds"])
    post = res.posterior
    alpha = res.alpha.to_numpy()
    w = res.datatree["weights"]
    factors = ({k: w["part_factor"].sel(raked_part=k).to_numpy()
                for k in w["raked_part"].to_numpy()} if "part_factor" in w else {})  # fmt: skip
    total, each = 0.0, {}
    for part, d in zip(parts, data, strict=True):
        draws = {q: post[f"{part.name}{SEP}{q}"].stack(s=("chain", "draw")).transpose("s", ...)
                 .to_numpy() for q in part.layout.names}  # fmt: skip
        f = part.loglik(draws, d.expand() if hasattr(d, "expand") else d)
        wk = alpha * factors.get(part.name, 1.0)
        each[part.name] = np.clip(wk * f, -bounds[part.name], bounds[part.name])
        total = total + each[part.name]
    return total, each, bounds


@pytest.mark.parametrize("name", ["ones", "risk"])
def test_each_part_within_its_bound_and_the_accountant_is_brute_force(name, request):
    out = request.getfixturevalue(name)
    total, each, bounds = _brute(out)
    assert set(bounds) == {"a", "b"} and sum(bounds.values()) == pytest.approx(EPS / 2)
    assert bounds["a"] == bounds["b"]  # the equal split
    for k, terms in each.items():
        assert np.abs(terms).max() <= bounds[k] + 1e-12
    lip = out.result.lipschitz.to_numpy()
    np.testing.assert_allclose(lip, np.abs(total).max(axis=0), rtol=1e-12, atol=1e-12)
    assert out.epsilon <= EPS + 1e-12  # the local reading never exceeds the global bound


def test_statement_scope_epsilon_and_split(ones, risk):
    for out, origin in ((ones, "ones"), (risk, "risk")):
        attrs = out.result.datatree["privacy"].attrs
        st = out.privacy_statement
        assert out.global_epsilon == EPS and st.epsilon == EPS
        assert out.total_epsilon == pytest.approx(out.structure_epsilon + EPS)
        assert st.charge(2)[0] == pytest.approx(2 * EPS + out.structure_epsilon)
        # conditional on the model plan (levels read from the data), whatever the weights
        assert st.scope == "global given the weights" and not st.is_global
        assert any("model plan" in a for a in st.assumptions)
        assert attrs["weights_origin"] == origin and attrs["censor_split"] == "equal"
        assert "model plan" in attrs["guarantee"]
        assert set(json.loads(out.result.datatree["sample_stats"].attrs["samplers"]).values()) \
            == {"nuts censored"}  # fmt: skip
        assert "censored" in repr(out)
    # every weight 1: no floor or raking ran, so the weights are exactly the ones fixed before
    assert (ones.alpha.to_numpy() == 1.0).all()
    assert "part_factor" not in ones.result.datatree["weights"]
    assert (risk.alpha.to_numpy() < 1.0).any()


def test_same_seed_same_file(ones):
    again = _run(shift=1.0)
    pd.testing.assert_frame_equal(ones.synthetic, again.synthetic)


def test_refusals_name_the_argument_and_value():
    frame = _small()
    with pytest.raises(ValueError, match=r"censor_epsilon=2.0 .*structure_epsilon=None"):
        synthesize(frame, censor_epsilon=2.0, structure_epsilon=None)
    with pytest.raises(ValueError, match=r"'censor_epsilon'"):
        synthesize(frame, censor_epsilon=-1.0)
    with pytest.raises(ValueError, match=r"'censor_epsilon' sets a global epsilon"):
        synthesize(frame, censor_epsilon=2.0, target_epsilon=1.0)
    with pytest.raises(ValueError, match=r"censor_epsilon=2.0 with reweight=True"):
        PseudoPosterior(FileModel(), censor_epsilon=2.0, reweight=True)
    rng = np.random.default_rng(0)
    binned = pd.DataFrame({"x": np.round(rng.uniform(0, 10, 40), 0), "a": frame["a"]})
    with pytest.raises(ValueError, match=r"censor_epsilon=2.0: part\(s\) \['x.points'\]"):
        PseudoPosterior(FileModel(bins={"x": [0, 5, 10]}, grid={"x": {"step": 1}}),
                        censor_epsilon=2.0).fit(binned, draws=10, tune=10, seed=0)  # fmt: skip


def test_split_bound_reads_only_the_parts():
    parts, _ = file_part_data(FileModel(), FileModel().prepare(_small()))
    assert split_bound(parts, 1.5) == {"a": 0.75, "b": 0.75}
    with pytest.raises(ValueError, match=r"'censor_split' must be one of \('equal',\)"):
        split_bound(parts, 1.5, "levels")


def test_the_plan_reads_the_levels_so_the_scope_stays_given_it():
    """Why a censored whole file is "global given the weights" even with every weight 1: a
    level that only the added record holds changes the model plan (here b's part has 3 levels
    with the record, 2 without it), and no synthetic record of the neighbour can take it."""
    rows = [("n", "p")] * 8 + [("y", "q")] * 2
    frame = pd.DataFrame(
        {
            "a": pd.Categorical([r[0] for r in rows], categories=["n", "y"]),
            "b": pd.Categorical([r[1] for r in rows], categories=["p", "q", "r"]),
        }
    )
    with_r = pd.concat([frame, frame.iloc[:1].assign(a="y", b="r")], ignore_index=True)
    model = FileModel()
    level_counts = [
        {p.name: getattr(p, "n_levels", 2) for p in model.parts(model.prepare(f))}["b"]
        for f in (frame, with_r)
    ]
    assert level_counts == [2, 3]

"""Per-column fitting of a whole file: the paired per-part posteriors agree with the joint model
(SequentialModel, the reference in tests/_reference/sequential.py: one PyMC model) within Monte
Carlo error; the same seed gives the same draws whatever the number of workers (threads or
Dask); conjugate parts are drawn exactly."""

from __future__ import annotations

import warnings

import arviz_stats as azs
import numpy as np
import pandas as pd
import pytest

from pseudopost.fitting.columns import (
    ColumnSampler,
    part_samplers,
    part_seed,
    samplers_table,
    samplers_text,
    statistics_data,
)
from pseudopost.fitting.parts import EXACT, IMH, NUTS
from pseudopost.models.file import FileModel
from pseudopost.models.parts import GroupedData


def _three_columns(n=300, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.choice(["u", "v", "w"], n, p=[0.5, 0.3, 0.2])
    b = 1.0 + 0.8 * (a == "v") - 0.5 * (a == "w") + rng.normal(0, 1.0, n)
    eta = -0.3 + 0.9 * b - 0.7 * (a == "w")
    c = np.where(rng.random(n) < 1 / (1 + np.exp(-eta)), "yes", "no")
    return pd.DataFrame({"a": a, "b": np.round(b, 3), "c": c})


def _fit_columns(frame, draws, tune, chains, seed, workers=1, weights=None, start=None):
    model = FileModel(models={"b": "normal"})
    prepared = model.prepare(frame)
    parts = model.parts(prepared)
    data = [GroupedData.of(p, d) for p, d in zip(parts, model.part_data(prepared), strict=True)]
    sampler = ColumnSampler(parts, workers=workers)
    w = np.ones(len(frame)) if weights is None else weights
    stats = statistics_data(parts, data, w)
    if start is None:
        return sampler.sample(stats, draws=draws, tune=tune, chains=chains, seed=seed)
    return sampler.sample_with_modes(stats, draws=draws, tune=tune, chains=chains, seed=seed,
                                     start=start)  # fmt: skip


def _fit_joint(frame, draws, tune, chains, seed):
    import nutpie

    from .._reference.sequential import SequentialModel

    model = SequentialModel(
        ["a", "b", "c"], {"a": "dirichlet_categorical", "b": "normal", "c": "logistic"}
    )
    built = model.build(model.prepare(frame))
    compiled = nutpie.compile_pymc_model(built, backend="jax", gradient_backend="jax")
    return nutpie.sample(
        compiled, draws=draws, tune=tune, chains=chains, seed=seed, progress_bar=False
    )


# (per-column name, joint name, index into the flattened parameter)
PAIRS = [
    ("a::p", "a__p", None),
    ("b.value::intercept", "b__intercept", None),
    ("b.value::beta", "b__beta", None),
    ("b.value::sigma", "b__sigma", None),
    ("c::intercept", "c__intercept", None),
    ("c::beta", "c__beta", None),
]


def _summary(post, name):
    da = post[name]
    flat = da.stack(sample=("chain", "draw")).transpose("sample", ...).to_numpy()
    flat = flat.reshape(flat.shape[0], -1)
    ess = np.atleast_1d(azs.ess(da, method="bulk").to_numpy()).ravel()
    return flat.mean(axis=0), flat.std(axis=0), ess


def test_per_column_and_joint_fits_agree():
    frame = _three_columns()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cols = _fit_columns(frame, 600, 600, 2, 1)["posterior"]
        joint = _fit_joint(frame, 600, 600, 2, 2)["posterior"]
    assert list(cols["c::beta"].coords[cols["c::beta"].dims[-1]].values) == [
        "a=v", "a=w", "b",
    ]  # fmt: skip
    assert list(joint["c__beta"].coords[joint["c__beta"].dims[-1]].values) == [
        "a[v]", "a[w]", "b",
    ]  # fmt: skip
    for mine, theirs, _ in PAIRS:
        m1, s1, e1 = _summary(cols, mine)
        m2, s2, e2 = _summary(joint, theirs)
        se = np.sqrt(s1**2 / e1 + s2**2 / e2)
        assert np.all(np.abs(m1 - m2) < 4.5 * se), (mine, m1, m2, se)
        rel = np.sqrt(1 / (2 * e1) + 1 / (2 * e2))
        assert np.all(np.abs(s1 / s2 - 1) < 4.5 * rel + 0.02), (mine, s1, s2)


@pytest.mark.parametrize("fused", [False, True])
def test_same_seed_same_draws_whatever_the_workers(fused, monkeypatch):
    """On the NumPy densities and on the fused Numba kernels (forced here; they run above a
    size threshold): the kernels are sequential, so threads never change a sum."""
    from pseudopost.models.parts import _fused

    if fused:
        monkeypatch.setattr(_fused, "FUSED_MIN", 0)
    frame = _three_columns(n=150, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = _fit_columns(frame, 50, 50, 2, 7, workers=1)["posterior"]
        three = _fit_columns(frame, 50, 50, 2, 7, workers=3)["posterior"]
        other = _fit_columns(frame, 50, 50, 2, 8, workers=1)["posterior"]
    for v in one.data_vars:
        np.testing.assert_array_equal(one[v].to_numpy(), three[v].to_numpy())
    assert not np.array_equal(one["b.value::beta"].to_numpy(), other["b.value::beta"].to_numpy())
    # a part's seed depends on the fit seed and its position only
    assert part_seed(7, 2) == part_seed(7, 2) != part_seed(7, 3)


@pytest.mark.parametrize("workers", [1, 2])
def test_blas_on_one_thread_throughout_every_fit(workers, monkeypatch):
    """The densities' matrix products round alike on any schedule: BLAS runs on one thread for
    the whole of every part's fit, not only while another part computes its preconditioner
    (the process-wide limit would otherwise depend on the schedule)."""
    from threadpoolctl import threadpool_info

    from pseudopost.fitting import parts as fitting_parts

    seen = []
    sample = fitting_parts.PartSampler.sample_with_mode

    def spy(self, stats, **kw):
        seen.append({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
        return sample(self, stats, **kw)

    monkeypatch.setattr(fitting_parts.PartSampler, "sample_with_mode", spy)
    frame = _three_columns(n=150, seed=3)
    before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _fit_columns(frame, 20, 20, 1, 7, workers=workers)
    assert len(seen) == 3 and all(s == {1} for s in seen), seen
    # the limits are restored once no part is fitting
    assert [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"] == before


def test_same_seed_same_draws_on_dask():
    distributed = pytest.importorskip("distributed")
    frame = _three_columns(n=150, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        local = _fit_columns(frame, 40, 40, 1, 5)["posterior"]
        with distributed.Client(processes=False, n_workers=2, threads_per_worker=1,
                                dashboard_address=None):  # fmt: skip
            remote = _fit_columns(frame, 40, 40, 1, 5)["posterior"]
    for v in local.data_vars:
        np.testing.assert_array_equal(local[v].to_numpy(), remote[v].to_numpy())


def test_a_refit_from_given_modes_is_the_same_on_threads_and_dask():
    """A weighted refit whose parts start their mode searches at the unweighted fit's modes
    (passed explicitly, as the mechanism does) gives the same draws on threads, whatever their
    number, and on Dask; the modes come back for every preconditioned part."""
    distributed = pytest.importorskip("distributed")
    frame = _three_columns(n=150, seed=3)
    w = np.random.default_rng(0).uniform(0.2, 1.0, len(frame))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, modes = _fit_columns(frame, 20, 20, 1, 5, start={})
        assert set(modes) == {"b.value", "c"}  # "a" (no predictors) is drawn exactly
        one, m1 = _fit_columns(frame, 40, 40, 1, 6, weights=w, start=modes)
        two, _ = _fit_columns(frame, 40, 40, 1, 6, workers=2, weights=w, start=modes)
        with distributed.Client(processes=False, n_workers=2, threads_per_worker=1,
                                dashboard_address=None):  # fmt: skip
            remote, m3 = _fit_columns(frame, 40, 40, 1, 6, weights=w, start=modes)
    for v in one["posterior"].data_vars:
        a = one["posterior"][v].to_numpy()
        np.testing.assert_array_equal(a, two["posterior"][v].to_numpy())
        np.testing.assert_array_equal(a, remote["posterior"][v].to_numpy())
    for k in m1:
        np.testing.assert_array_equal(m1[k], m3[k])
        assert not np.array_equal(m1[k], modes[k])  # other weights, another mode


def test_conjugate_part_is_drawn_exactly():
    frame = _three_columns(n=400, seed=4)
    post = _fit_columns(frame, 1000, 10, 2, 9)["posterior"]
    counts = frame.a.value_counts().reindex(["u", "v", "w"]).to_numpy()
    alpha = 1.0 + counts
    p = post["a::p"].stack(s=("chain", "draw")).transpose("s", ...).to_numpy()
    mean = alpha / alpha.sum()
    sd = np.sqrt(mean * (1 - mean) / (alpha.sum() + 1))
    assert np.all(np.abs(p.mean(axis=0) - mean) < 4 * sd / np.sqrt(p.shape[0]))
    np.testing.assert_allclose(p.std(axis=0), sd, rtol=0.1)


def test_the_tree_says_how_each_part_was_drawn(tmp_path):
    """``sample_stats.attrs`` records each part's sampler and seconds: the conjugate part
    exact, the others NUTS by default and IMH where asked and accepted; the record survives a
    netCDF round trip, and the risk step's group is read the same way."""
    frame = _three_columns(n=400, seed=4)
    tree = _fit_columns(frame, 100, 50, 2, 9)
    drawn = part_samplers(tree)
    assert set(drawn) == {"a", "b.value", "c"}
    assert drawn["a"][0] == EXACT and drawn["b.value"][0] == NUTS and drawn["c"][0] == NUTS
    assert all(s is not None and s >= 0 for _, s in drawn.values())
    path = tmp_path / "fit.nc"
    tree.to_netcdf(path, engine="h5netcdf")
    import xarray as xr

    back = xr.open_datatree(path, engine="h5netcdf")
    assert part_samplers(back) == drawn
    renamed = xr.DataTree.from_dict({"risk_sample_stats": tree["sample_stats"].to_dataset()})
    assert part_samplers(renamed, "risk_sample_stats") == drawn
    assert part_samplers(renamed) == {}
    text = samplers_text(drawn)
    assert text.startswith("1 exact, 2 nuts; slowest ")
    table = samplers_table(renamed.assign({"sample_stats": renamed["risk_sample_stats"]}))
    assert set(table["part"]) == set(drawn) and table["weighted s"].is_monotonic_decreasing
    assert (table["weighted fit"] == table["risk step"]).all()
    assert samplers_table(xr.DataTree.from_dict({"posterior": tree["posterior"]})) is None
    # independence Metropolis-Hastings where the Laplace proposal is accepted
    model = FileModel(models={"b": "normal"})
    prepared = model.prepare(frame)
    parts = model.parts(prepared)
    data = [GroupedData.of(p, d) for p, d in zip(parts, model.part_data(prepared), strict=True)]
    stats = statistics_data(parts, data, np.ones(len(frame)))
    imh, _ = ColumnSampler(parts, workers=1).sample_with_modes(
        stats, draws=200, tune=50, chains=2, seed=3, independence=True
    )
    how = {k: v for k, (v, _) in part_samplers(imh).items()}
    assert how["a"] == EXACT and how["c"] == IMH
    # no part's own attributes stand for the paired fit (the first part's acceptance rate)
    assert dict(imh["posterior"].attrs) == {}
    assert set(imh["sample_stats"].attrs) == {"samplers", "seconds"}
    twice = {"c": ("nuts twice", 2.0), "a": (EXACT, 0.1), "d": ("nuts twice", None)}
    assert samplers_text(twice) == "2 nuts twice ('c', 'd'), 1 exact; slowest 'c' 2 s"


def test_parts_that_do_not_mix_in_two_runs_are_named(monkeypatch):
    """A part whose second NUTS run has not mixed either is labelled ``nuts twice unmixed``,
    and the fit's diagnostics warn, naming it: the accountant's maximum over such draws may
    understate epsilon."""
    from pseudopost.fitting import parts as fp
    from pseudopost.fitting.sampler import SamplingWarning
    from pseudopost.mechanisms.pseudo_posterior.settings import diagnose

    frame = _three_columns(n=300, seed=4)
    monkeypatch.setattr(fp, "_stuck", lambda tree: True)
    tree = _fit_columns(frame, 60, 30, 2, 9)
    how = {k: v for k, (v, _) in part_samplers(tree).items()}
    assert how == {"a": EXACT, "b.value": fp.NUTS_RERUN_UNMIXED, "c": fp.NUTS_RERUN_UNMIXED}
    with pytest.warns(SamplingWarning, match=r"part\(s\) 'b.value', 'c' did not mix in two NUTS"):
        diagnose(tree, tree)
    monkeypatch.setattr(fp, "_stuck", lambda tree: False)
    mixed = _fit_columns(frame, 60, 30, 2, 9)
    assert {v for v, _ in part_samplers(mixed).values()} == {EXACT, NUTS}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        diagnose(mixed, mixed)
    assert not any("did not mix in two NUTS" in str(w.message) for w in caught)


def test_sampler_checks_its_data():
    frame = _three_columns(n=60)
    model = FileModel(models={"b": "normal"})
    prepared = model.prepare(frame)
    parts = model.parts(prepared)
    sampler = ColumnSampler(parts)
    stats = statistics_data(parts, model.part_data(prepared), np.ones(60))
    with pytest.raises(ValueError, match=r"missing \['c::rows', 'c::w', 'c::wy'\]"):
        sampler.sample({k: v for k, v in stats.items() if not k.startswith("c::")},
                       draws=5, tune=5, chains=1, seed=1)  # fmt: skip
    with pytest.raises(ValueError, match=r"unknown \['z::w'\]"):
        sampler.sample({**stats, "z::w": np.ones(2)}, draws=5, tune=5, chains=1, seed=1)
    assert sampler.model is None and sampler.compilations == 0
    with pytest.raises(ValueError, match="needs an active distributed client"):
        ColumnSampler(parts, backend="dask").sample(stats, draws=5, tune=5, chains=1, seed=1)


@pytest.mark.parametrize("workers", [1, 2])
def test_one_progress_bar_over_the_parts(workers, monkeypatch):
    """``progress=True``: one bar over the file's parts (each part's end advances it), and no
    part's own sampler bar; the draws are those of a fit without the bar."""
    import rich.progress

    seen = []

    class Recording(rich.progress.Progress):
        def update(self, task, **kwargs):
            seen.append((self.tasks[0].description, kwargs.get("advance"), kwargs.get("last")))
            return super().update(task, **kwargs)

    monkeypatch.setattr(rich.progress, "Progress", Recording)
    bars = []
    from pseudopost.fitting import parts as parts_module

    real = parts_module.run_nutpie

    def no_part_bar(*a, progress=False, **k):
        bars.append(progress)
        return real(*a, progress=progress, **k)

    monkeypatch.setattr(parts_module, "run_nutpie", no_part_bar)
    frame = _three_columns(n=120, seed=5)
    model = FileModel(models={"b": "normal"})
    prepared = model.prepare(frame)
    parts = model.parts(prepared)
    data = [GroupedData.of(p, d) for p, d in zip(parts, model.part_data(prepared), strict=True)]
    stats = statistics_data(parts, data, np.ones(len(frame)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shown = ColumnSampler(parts, workers=workers).sample(
            stats, draws=30, tune=30, chains=1, seed=4, progress=True
        )["posterior"]
        quiet = ColumnSampler(parts, workers=workers).sample(
            stats, draws=30, tune=30, chains=1, seed=4, progress=False
        )["posterior"]
    assert len(seen) == len(parts) >= 2
    assert all(d == f"fitting {len(parts)} parts (NUTS)" and a == 1 for d, a, _ in seen)
    assert sorted(last for *_, last in seen) == sorted(f"{p.name} done" for p in parts)
    assert bars and not any(bars)  # no part shows its own bar
    for v in shown.data_vars:
        np.testing.assert_array_equal(shown[v].to_numpy(), quiet[v].to_numpy())

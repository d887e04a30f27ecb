"""Declared heaps (digit preference): the heap label of a grid value, snapping to a drawn heap
(the nearest grid point with that label: Hypothesis against brute force), the heap part and its
records, a record's log-likelihood as the sum of status, heap and value parts by hand with SciPy,
the accountant against brute force, synthesis honouring drawn labels, and bad declarations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from pseudopost.models.file import Declarations, FileModel, make_plan
from pseudopost.models.file.grid import Grid
from pseudopost.models.file.heaps import Heaps
from pseudopost.models.parts import GroupedData
from pseudopost.privacy.kernels.parts import PartAccountant

from .test_synthesis import _synth

LB = Grid(0.4536, 2)
N = 260


def _pounds(rng, n, heap10=0.3, heap5=0.25) -> np.ndarray:
    """Weights in whole pounds as kg to 2 decimals, heaped at multiples of 10 and 5 lb."""
    lb = np.rint(rng.lognormal(np.log(140), 0.2, n))
    u = rng.random(n)
    lb = np.where(u < heap10, np.rint(lb / 10) * 10, lb)
    lb = np.where((u >= heap10) & (u < heap10 + heap5), np.rint(lb / 5) * 5, lb)
    return np.round(lb * 0.4536, 2)


def test_labels():
    h = Heaps(LB, (10, 5))
    x = np.round(np.array([140, 145, 141, 150, 0]) * 0.4536, 2)
    np.testing.assert_array_equal(h.labels(x), [1, 2, 0, 1, 1])
    assert h.names == ("off the heaps", "multiple of 10 steps", "multiple of 5 steps")


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.floats(-300.0, 300.0), min_size=1, max_size=15).map(np.array),
    st.lists(st.sampled_from([2, 3, 4, 5, 10]), min_size=1, max_size=2, unique=True),
    st.floats(0.01, 3.0),
    st.floats(-20.0, 20.0),
    st.data(),
)
def test_snap_to_a_heap_is_the_nearest_point_with_that_label(y, multiples, step, low, data):
    heaps = Heaps(Grid(step), tuple(sorted(multiples, reverse=True)))
    labels = np.array(data.draw(st.lists(st.integers(0, len(multiples)), min_size=y.size,
                                         max_size=y.size)))  # fmt: skip
    out = heaps.snap(y, labels, low)
    np.testing.assert_array_equal(heaps.labels(out), labels)  # the drawn label, recovered
    assert (out >= low).all()
    for yi, li, oi in zip(y, labels, out, strict=True):
        k0 = float(heaps.grid.index(np.array([max(yi, low)]))[0])
        ks = np.arange(k0 - 400, k0 + 401)
        g = heaps.grid.point(ks)
        g = g[(heaps.label_of_index(ks) == li) & (g >= low)]
        d = np.abs(g - yi)
        assert oi == g[d == d.min()].min()


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.floats(4.0, 39.8), min_size=1, max_size=15).map(np.array),
    st.lists(st.floats(4.1, 39.7), min_size=1, max_size=6, unique=True).map(np.sort),
    st.data(),
)
def test_snap_inside_the_drawn_bin_when_it_holds_the_label(y, inner, data):
    """With the bins, a value goes to the nearest point of its label inside its bin when the
    bin holds one (brute force), else to the nearest anywhere; SLID's years of schooling in
    tenths, heaps at whole and half years."""
    heaps = Heaps(Grid(0.1, 1), (10, 5))
    edges = np.r_[4.0, inner, 39.8]
    b = np.clip(np.searchsorted(edges, y, side="right") - 1, 0, edges.size - 2)
    labels = np.array(data.draw(st.lists(st.integers(0, 2), min_size=y.size, max_size=y.size)))
    out = heaps.snap(y, labels, 4.0, 39.8, bins=(edges, b))
    free = heaps.snap(y, labels, 4.0, 39.8)
    np.testing.assert_array_equal(heaps.labels(out), labels)
    g = np.round(np.arange(40, 399) * 0.1, 1)
    for yi, li, bi, oi, fi in zip(y, labels, b, out, free, strict=True):
        top = g <= edges[bi + 1] if bi == edges.size - 2 else g < edges[bi + 1]
        cand = g[(heaps.labels(g) == li) & (g >= edges[bi]) & top]
        if cand.size:
            d = np.abs(cand - yi)
            assert oi == cand[d == d.min()].min()
        else:
            assert oi == fi


def test_snap_keeps_a_whole_year_in_its_bin():
    heaps = Heaps(Grid(0.1, 1), (10, 5))
    edges = np.array([4.0, 17.75, 20.75, 21.75, 39.8])
    y = np.array([20.6, 20.7, 21.2])
    out = heaps.snap(y, np.array([1, 1, 1]), 4.0, 39.8, bins=(edges, np.array([1, 1, 2])))
    np.testing.assert_array_equal(out, [20.0, 20.0, 21.0])
    np.testing.assert_array_equal(heaps.snap(y, np.array([1, 1, 1]), 4.0, 39.8), [21.0, 21.0, 21.0])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(4.05, 39.75), min_size=1, max_size=8, unique=True).map(np.sort),
    st.sampled_from([(10, 5), (50, 10), (10,), (5,)]),
)
def test_bin_labels_against_enumeration(inner, multiples):
    """A bin holds a label exactly when one of its grid points carries it (every grid point
    of the support enumerated; bins [e_j, e_j+1), the last closed)."""
    heaps = Heaps(Grid(0.1, 1), multiples)
    edges = np.r_[4.0, inner, 39.8]
    got = heaps.bin_labels(edges)
    g = np.round(np.arange(40, 399) * 0.1, 1)
    j = np.clip(np.searchsorted(edges, g, side="right") - 1, 0, edges.size - 2)
    want = np.zeros_like(got)
    want[j, heaps.labels(g)] = True
    np.testing.assert_array_equal(got, want)


def test_binned_heap_part_is_masked_by_the_bins_labels():
    """Years of schooling in tenths heaped on whole and half years, as a binned column: its
    heap part is a categorical over the labels the value's bin holds, so every synthetic value
    carries a label its bin holds, whatever the parameters (without the mask, a draw labelled
    "whole year" in a bin holding only 12.5's catchment went to 12 or 13, out of its bin)."""
    rng = np.random.default_rng(3)
    n = 800
    whole = rng.integers(8, 18, size=n).astype(float)
    u = rng.random(n)
    edu = np.where(u < 0.7, whole, np.where(u < 0.85, whole + 0.5,
                   np.round(whole + rng.choice([0.2, 0.3, 0.7, 0.8], size=n), 1)))  # fmt: skip
    frame = pd.DataFrame({"sex": rng.choice(["f", "m"], size=n), "edu": edu})
    edges = np.array([8.0, 11.45, 11.95, 12.45, 12.95, 14.45, 17.8])
    model = FileModel(grid={"edu": {"step": 0.1, "digits": 1}}, heaps={"edu": [10, 5]},
                      bins={"edu": edges.tolist()})  # fmt: skip
    parts = {p.name: p for p in model.parts(model.prepare(frame))}
    assert parts["edu.heap"].family == "masked_categorical"
    heaps = Heaps(Grid(0.1, 1), (10, 5))
    holds = heaps.bin_labels(edges)
    assert not holds.all()  # some bins lack a label: the mask bites
    # "whole year" (label 1) near certain wherever a bin holds one: the bins of 11.5-11.9 and
    # 12.5-12.9 hold none, so their draws are half years or off the heaps and stay in them
    # (unmasked, they were snapped to 11, 12 or 13, and the bins emptied)
    fix = {"edu.heap::intercept": np.array([8.0, 0.0]),
           "edu.heap::beta": np.zeros(parts["edu.heap"].layout["beta"].shape)}  # fmt: skip
    for syn in _synth(model, frame, rng, m=3, fix=fix):
        x = syn.edu.to_numpy()
        j = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, edges.size - 2)
        assert holds[j, heaps.labels(x)].all()
        assert np.isin(np.round(x, 1), np.round(np.arange(80, 179) * 0.1, 1)).all()
        assert np.mean(j == 3) > 0.02
        assert np.all(heaps.labels(x[~holds[j, 1]]) != 1)
        assert np.mean(heaps.labels(x[holds[j, 1]]) == 1) > 0.99


def test_bad_heaps(frame):
    with pytest.raises(ValueError, match=r"declare heaps but no 'grid'"):
        Declarations.from_arguments(heaps={"wage": [10]})
    with pytest.raises(ValueError, match=r"whole numbers of grid steps >= 2. Got 1"):
        Declarations.from_arguments(heaps={"wage": [10, 1]}, grid={"wage": {"digits": 2}})
    with pytest.raises(TypeError, match=r"non-empty list"):
        Declarations.from_arguments(heaps={"wage": 10}, grid={"wage": {"digits": 2}})
    with pytest.raises(ValueError, match=r"list a multiple twice"):
        Declarations.from_arguments(heaps={"wage": [5, 5]}, grid={"wage": {"digits": 2}})
    decl = Declarations.from_arguments(heaps={"age": [5]}, grid={"age": {"step": 1}},
                                       models={"age": "categorical"})  # fmt: skip
    with pytest.raises(ValueError, match=r"'age' declares heaps but is modelled categorical"):
        make_plan(frame, decl)


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(7)
    a = rng.choice(["x", "y", "z"], N).astype(object)
    a[rng.random(N) < 0.1] = None
    w = _pounds(rng, N)
    w[rng.random(N) < 0.15] = np.nan
    frame = pd.DataFrame({"a": pd.array(a, dtype=object), "w": w})
    model = FileModel(models={"w": "normal"}, grid={"w": {"step": 0.4536, "digits": 2}},
                      heaps={"w": [5, 10]})  # fmt: skip
    prepared = model.prepare(frame)
    parts = model.parts(prepared)
    data = model.part_data(prepared)
    draws = {}
    for part in parts:
        x = part.initial_point(1) + rng.normal(scale=0.5, size=(5, part.layout.size))
        draws.update({f"{part.name}::{k}": v for k, v in part.layout.unpack(x).items()})
    draws["w.value::intercept"] = draws["w.value::intercept"] + 60.0  # near the data
    draws["w.value::sigma"] = draws["w.value::sigma"] * 10.0
    return frame, model, prepared, parts, data, draws


def _by_hand(frame: pd.DataFrame, draws: dict, m: int) -> np.ndarray:
    p = {k: v[m] for k, v in draws.items()}
    a = frame.a.to_numpy(dtype=object)
    a_miss = pd.isna(frame.a).to_numpy()
    f = np.log(p["a::p"][np.select([a_miss, a == "x", a == "y", a == "z"], [3, 0, 1, 2])])
    Xa = np.column_stack([a == "y", a == "z", a_miss]).astype(float)
    w = frame.w.to_numpy()
    obs = ~np.isnan(w)
    # status (observed, missing): a Bernoulli on "missing"
    eta = p["w.status::intercept"] + Xa @ p["w.status::beta"]
    f += np.where(obs, -np.logaddexp(0, eta), eta - np.logaddexp(0, eta))
    # heap label from the pounds: 10 lb first, then 5 lb, else off the heaps
    lb = np.rint(np.where(obs, w, 0) / 0.4536)
    label = np.select([lb % 10 == 0, lb % 5 == 0], [1, 2], 0)
    logits = np.column_stack([np.zeros(N), p["w.heap::intercept"] + Xa @ p["w.heap::beta"]])
    lh = special.log_softmax(logits, axis=1)[np.arange(N), label]
    lv = stats.norm.logpdf(np.where(obs, w, 0), p["w.value::intercept"] + Xa @ p["w.value::beta"],
                           p["w.value::sigma"])  # fmt: skip
    return f + np.where(obs, lh + lv, 0.0)


def test_heap_part_and_its_records(setup):
    frame, _, prepared, parts, data, _ = setup
    assert [p.name for p in parts] == ["a", "w.status", "w.heap", "w.value"]
    assert parts[2].family == "categorical" and parts[2].n_levels == 3
    obs = frame.w.notna().to_numpy()
    np.testing.assert_array_equal(data[2].active, obs)
    np.testing.assert_array_equal(data[3].active, obs)  # the value part: every observed value
    lb = np.rint(frame.w.to_numpy()[obs] / 0.4536)
    np.testing.assert_array_equal(data[2].y[obs], np.select([lb % 10 == 0, lb % 5 == 0], [1, 2]))
    reason = prepared.plan.choices().set_index("column").loc["w", "reason"]
    assert "heaps at multiples of 10, 5 grid steps" in reason


def test_record_loglik_is_status_heap_and_value(setup):
    frame, _, _, parts, data, draws = setup
    F = PartAccountant(parts, data)(draws)
    for m in range(F.shape[0]):
        np.testing.assert_allclose(F[m], _by_hand(frame, draws, m), rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("grouped", [False, True], ids=["records", "grouped"])
def test_accountant_equals_brute_force_with_heaps(setup, grouped):
    frame, _, _, parts, data, draws = setup
    if grouped:
        data = [GroupedData.of(p, d) if p.kind != "gauss" else d
                for p, d in zip(parts, data, strict=True)]  # fmt: skip
    F = np.array([_by_hand(frame, draws, m) for m in range(5)])
    c = np.random.default_rng(4).uniform(0, 1, N)
    red = PartAccountant(parts, data).reduce_abs(draws, c)
    np.testing.assert_allclose(red.per_record, np.abs(F).max(axis=0), rtol=1e-11)
    np.testing.assert_allclose(red.per_draw, np.abs(c * F).max(axis=1), rtol=1e-11)


def test_synthesis_draws_the_heap_then_snaps_to_it(setup):
    frame, model, _, _, _, _ = setup
    rng = np.random.default_rng(3)
    # heap label "multiple of 5 steps" (code 2) with probability ~1, values near 60 kg
    fix = {"w.heap::intercept": np.array([-40.0, 40.0]), "w.heap::beta": 0.0,
           "w.value::intercept": 60.0, "w.value::sigma": 8.0, "w.value::beta": 0.0}  # fmt: skip
    for syn in _synth(model, frame, rng, m=2, fix=fix):
        w = syn.w.dropna().to_numpy()
        lb = np.rint(w / 0.4536)
        np.testing.assert_array_equal(np.round(lb * 0.4536, 2), w)  # on the grid
        assert (lb % 5 == 0).all() and not (lb % 10 == 0).any()
    # and off the heaps (code 0): no multiple of 5 lb at all
    fix["w.heap::intercept"] = np.array([-40.0, -40.0])
    for syn in _synth(model, frame, rng, m=2, fix=fix):
        lb = np.rint(syn.w.dropna().to_numpy() / 0.4536)
        assert len(lb) > 0 and not (lb % 5 == 0).any()


def test_fitted_heap_shares_within_monte_carlo_error():
    """A small fit: the synthetic shares of multiples of 10 and 5 lb are the real ones within
    Monte Carlo error (binomial sd of the two samples, 4 sd), where snapping to the 1-lb grid
    alone would give about 10% and 10%."""
    from pseudopost.synthesis import synthesize

    rng = np.random.default_rng(11)
    n = 600
    frame = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "w": _pounds(rng, n, 0.35, 0.25)})
    out = synthesize(frame, models={"w": "lognormal"}, grid={"w": {"step": 0.4536, "digits": 2}},
                     heaps={"w": [10, 5]}, draws=150, tune=150, chains=1, seed=5,
                     progress=False)  # fmt: skip
    real = np.rint(frame.w / 0.4536)
    syn = pd.concat([out.synthesize(seed=s, weighted=False) for s in range(3)])
    lb = np.rint(syn.w / 0.4536)
    for share_real, share_syn, m in (
        ((real % 10 == 0).mean(), (lb % 10 == 0).mean(), len(lb)),
        (((real % 5 == 0) & (real % 10 != 0)).mean(), ((lb % 5 == 0) & (lb % 10 != 0)).mean(),
         len(lb)),
    ):  # fmt: skip
        sd = math.sqrt(share_real * (1 - share_real) * (1 / n + 1 / m))
        assert abs(share_syn - share_real) < 4 * sd + 0.02, (share_real, share_syn)

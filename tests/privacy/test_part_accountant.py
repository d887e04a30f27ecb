"""The fused per-column accountant equals brute force over the (draws x records) matrix of
SciPy log densities summed over a file's parts, on the NumPy and the Numba path, with inactive
records, and its record and draw blocks combine exactly."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import special, stats

from pseudopost.models.parts import PartData, make_part
from pseudopost.privacy import reduce_abs, reduce_sum
from pseudopost.privacy.kernels.parts import PartAccountant

FAMILIES = [
    ("bernoulli", {}),
    ("categorical", {"n_levels": 3}),
    ("ordinal", {"n_levels": 4}),
    ("cumulative", {"n_levels": 6}),
    ("normal", {}),
    ("lognormal", {}),
    ("poisson", {}),
    ("negative_binomial", {}),
    ("zero_truncated_negative_binomial", {}),
    ("dirichlet_categorical", {"n_levels": 3}),
]


# -- brute force: SciPy per part, per draw, per record -------------------------------------------
def _scipy(part, p, y, X):
    fam = part.family
    if fam == "dirichlet_categorical":
        return np.log(p["p"][y.astype(int)])
    if fam in ("ordinal", "cumulative"):
        eta = X @ p["beta"] if part.p else np.zeros(len(y))
        c = np.concatenate([[-np.inf], p["cutpoints"], [np.inf]])
        k = y.astype(int)
        return np.log(special.expit(c[k + 1] - eta) - special.expit(c[k] - eta))
    if fam == "categorical":
        eta = np.tile(p["intercept"], (len(y), 1)) + (X @ p["beta"] if part.p else 0.0)
        logits = np.column_stack([np.zeros(len(y)), eta])
        return special.log_softmax(logits, axis=1)[np.arange(len(y)), y.astype(int)]
    eta = p["intercept"] + (X @ p["beta"] if part.p else 0.0)
    if fam == "bernoulli":
        return stats.bernoulli.logpmf(y, special.expit(eta))
    if fam == "normal":
        return stats.norm.logpdf(y, eta, p["sigma"])
    if fam == "lognormal":
        return stats.lognorm.logpdf(y, s=p["sigma"], scale=np.exp(eta))
    if fam == "poisson":
        return stats.poisson.logpmf(y, np.exp(eta))
    nb = stats.nbinom(p["phi"], p["phi"] / (p["phi"] + np.exp(eta)))
    return nb.logpmf(y) - (np.log(nb.sf(0)) if fam.startswith("zero") else 0.0)


def brute(parts, data, draws):
    """The (M, n) matrix of the record log-likelihood: SciPy, record by record, summed."""
    m = len(next(iter(draws.values())))
    out = np.zeros((m, data[0].n))
    for part, d in zip(parts, data, strict=True):
        act = d.active
        for j in range(m):
            p = {q: draws[f"{part.name}::{q}"][j] for q in part.layout.names}
            with np.errstate(all="ignore"):
                out[j, act] += _scipy(part, p, d.y[act], d.X[act])
    return out


def reductions(F, c):
    a = np.abs(F)
    a[np.isnan(a)] = np.inf
    with np.errstate(invalid="ignore"):
        return a.max(axis=0), np.abs(c * a).max(axis=1), F @ c


# -- a random file ---------------------------------------------------------------------------
def _assert_reduces_like(acc, draws, F, c):
    """The accountant's reductions, sums and values equal those of the brute-force record
    terms ``F`` (draws, records) with record coefficients ``c``; the reduction returned."""
    per_record, per_draw, sums = reductions(F, c)
    red = acc.reduce_abs(draws, c)
    np.testing.assert_allclose(red.per_record, per_record, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(red.per_draw, per_draw, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(acc.reduce_sum(draws, c), sums, rtol=1e-11, atol=1e-9)
    np.testing.assert_allclose(acc(draws), F, rtol=1e-12, atol=1e-12)
    return red


def random_file(seed: int, n: int = 400, m: int = 30, n_parts: int = 7):
    """Columns in order, each a part of a random family on the earlier discrete columns (and
    one continuous column); a value part is active only where its status part says
    'observed' (code 0), as the whole-file encoding does."""
    rng = np.random.default_rng(seed)
    cont = np.round(rng.normal(size=n), 1)
    columns = {"z": cont}
    parts, data = [], []
    for k in range(n_parts):
        family, options = FAMILIES[rng.integers(len(FAMILIES))] if k else FAMILIES[1]
        pool = [c for c in columns if c != "z"]
        chosen = [] if family == "dirichlet_categorical" else list(
            rng.choice(pool, size=min(len(pool), rng.integers(0, 3)), replace=False)
        ) + (["z"] if rng.random() < 0.3 and family != "dirichlet_categorical" else [])  # fmt: skip
        X = np.column_stack([columns[c] for c in chosen]) if chosen else np.zeros((n, 0))
        status = make_part("categorical", f"c{k}", chosen, n_levels=3, name=f"c{k}:status")
        codes = rng.integers(0, 3, n).astype(float)
        codes[rng.random(n) < 0.6] = 0.0
        active = codes == 0
        part = make_part(family, f"c{k}", chosen, **options)
        y = _outcome(part, rng, n)
        y[~active] = np.nan
        parts += [status, part]
        data += [PartData(codes, X, np.ones(n, bool)), PartData(y, X, active)]
        if family in ("bernoulli", "categorical", "ordinal", "poisson", "dirichlet_categorical"):
            columns[f"c{k}"] = np.where(active, y, -1.0)
    draws = {}
    for part in parts:
        for q in part.layout.params:
            x = part.initial_point(0)[part.layout.slices[q.name]]
            x = x + rng.normal(scale=0.4, size=(m, q.free_size))
            draws[f"{part.name}::{q.name}"] = q.backward(x)
    return parts, data, draws


def _outcome(part, rng, n):
    fam = part.family
    k = getattr(part, "n_levels", 2)
    if fam in ("bernoulli", "categorical", "ordinal", "cumulative", "dirichlet_categorical"):
        return rng.integers(0, k, n).astype(float)
    if fam == "normal":
        return rng.normal(1.0, 2.0, n)
    if fam == "lognormal":
        return rng.lognormal(0.5, 1.0, n)
    y = rng.poisson(2.0, n).astype(float)
    return y + 1.0 if fam.startswith("zero") else y


# -- tests -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dense", [True, False], ids=["numpy", "numba"])
@pytest.mark.parametrize("seed", range(4))
def test_fused_reductions_equal_brute_force(seed, dense):
    parts, data, draws = random_file(seed)
    F = brute(parts, data, draws)
    c = np.random.default_rng(seed).uniform(0, 2, F.shape[1])
    c[::17] = 0.0
    acc = PartAccountant(parts, data, dense=dense)
    red = _assert_reduces_like(acc, draws, F, c)
    np.testing.assert_allclose(acc(draws, slice(50, 90)), F[:, 50:90], rtol=1e-12, atol=1e-12)
    # through the package's reductions (the PerRecordFunction protocol)
    red2 = reduce_abs(acc, draws, c)
    np.testing.assert_array_equal(red2.per_record, red.per_record)
    np.testing.assert_array_equal(reduce_sum(acc, draws, c), acc.reduce_sum(draws, c))


def test_every_family_alone_and_inactive_records_are_zero():
    rng = np.random.default_rng(5)
    n, m = 150, 12
    X = rng.integers(0, 3, (n, 2)).astype(float)
    for family, options in FAMILIES:
        preds = [] if family == "dirichlet_categorical" else ["a", "b"]
        part = make_part(family, "y", preds, **options)
        active = rng.random(n) < 0.5
        y = _outcome(part, rng, n)
        d = PartData(np.where(active, y, np.nan), X[:, : part.p], active)
        draws = {f"y::{k}": v for k, v in part.layout.unpack(
            part.initial_point(1) + rng.normal(scale=0.3, size=(m, part.layout.size))).items()}  # fmt: skip
        F = brute([part], [d], draws)
        for dense in (True, False):
            acc = PartAccountant([part], [d], dense=dense)
            got = acc.reduce_abs(draws, np.ones(n))
            np.testing.assert_allclose(got.per_record, np.abs(F).max(axis=0), rtol=1e-12)
            np.testing.assert_array_equal(got.per_record[~active], 0.0)
            np.testing.assert_allclose(acc(draws), F, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("dense", [True, False], ids=["numpy", "numba"])
def test_a_part_with_no_active_record_contributes_nothing(dense):
    rng = np.random.default_rng(8)
    n = 60
    X = rng.integers(0, 2, (n, 1)).astype(float)
    parts = [
        make_part("normal", "a", ["x"]),
        make_part("poisson", "b", ["x"]),
        make_part("categorical", "c", ["x"], n_levels=3),
    ]
    nothing = np.zeros(n, bool)
    data = [
        PartData(np.full(n, np.nan), X, nothing),
        PartData(rng.poisson(2.0, n).astype(float), X, np.ones(n, bool)),
        PartData(np.full(n, np.nan), X, nothing),
    ]
    draws = {}
    for p in parts:
        x = p.initial_point(0) + rng.normal(size=(7, p.layout.size))
        draws.update({f"{p.name}::{k}": v for k, v in p.layout.unpack(x).items()})
    F = brute(parts, data, draws)
    acc = PartAccountant(parts, data, dense=dense)
    per_record, per_draw, sums = reductions(F, np.ones(n))
    red = acc.reduce_abs(draws, np.ones(n))
    np.testing.assert_allclose(red.per_record, per_record, rtol=1e-12)
    np.testing.assert_allclose(red.per_draw, per_draw, rtol=1e-12)
    np.testing.assert_allclose(acc.reduce_sum(draws, np.ones(n)), sums, rtol=1e-12)


@pytest.mark.parametrize("dense", [True, False], ids=["numpy", "numba"])
def test_record_and_draw_blocks_combine_exactly(dense):
    parts, data, draws = random_file(11, n=500, m=40)
    c = np.random.default_rng(1).uniform(0, 1, 500)
    whole = PartAccountant(parts, data, dense=dense)
    red = whole.reduce_abs(draws, c)
    sums = whole.reduce_sum(draws, c)
    spans = list(itertools.pairwise([0, 123, 124, 377, 500]))
    blocks = [
        PartAccountant(parts, [d.take(slice(a, b)) for d in data], dense=dense) for a, b in spans
    ]
    reds = [b.reduce_abs(draws, c[a:e]) for b, (a, e) in zip(blocks, spans, strict=True)]
    np.testing.assert_array_equal(np.concatenate([r.per_record for r in reds]), red.per_record)
    np.testing.assert_array_equal(np.max([r.per_draw for r in reds], axis=0), red.per_draw)
    block_sums = sum(b.reduce_sum(draws, c[a:e]) for b, (a, e) in zip(blocks, spans, strict=True))
    np.testing.assert_allclose(block_sums, sums, rtol=1e-12, atol=1e-10)
    # draw blocks: a tiny memory budget splits the draws; nothing changes
    small = PartAccountant(parts, data, dense=dense, max_bytes=8 * 2048)
    assert small._draw_block(40, dense) < 40
    red_small = small.reduce_abs(draws, c)
    np.testing.assert_array_equal(red_small.per_record, red.per_record)
    np.testing.assert_array_equal(red_small.per_draw, red.per_draw)
    np.testing.assert_array_equal(small.reduce_sum(draws, c), sums)


@pytest.mark.parametrize("dense", [True, False], ids=["numpy", "numba"])
def test_an_undefined_log_density_is_unbounded(dense):
    """A NaN draw makes f NaN: |f| counts as infinite per record; per draw it propagates (as
    the ready models' fused accountant)."""
    parts, data, draws = random_file(3, n=200, m=10)
    draws = {k: v.copy() for k, v in draws.items()}
    key = next(k for k in draws if k.startswith(parts[1].name + "::"))
    draws[key][4] = np.nan
    acc = PartAccountant(parts, data, dense=dense)
    c = np.ones(200)
    red = acc.reduce_abs(draws, c)
    F = brute(parts, data, draws)
    per_record, per_draw, _ = reductions(F, c)
    np.testing.assert_array_equal(np.isinf(red.per_record), np.isinf(per_record))
    assert np.isinf(red.per_record[data[1].active]).all()
    assert np.isnan(red.per_draw[4]) == np.isnan(per_draw[4])
    np.testing.assert_allclose(np.delete(red.per_draw, 4), np.delete(per_draw, 4), rtol=1e-12)


def test_bad_input_is_refused():
    parts, data, draws = random_file(0, n=50, m=5)
    with pytest.raises(ValueError, match="unique"):
        PartAccountant([parts[0], parts[0]], [data[0], data[0]])
    with pytest.raises(ValueError, match="one PartData per part"):
        PartAccountant(parts, data[:-1])
    with pytest.raises(ValueError, match="same records"):
        PartAccountant(parts[:2], [data[0], data[1].take(slice(0, 40))])
    with pytest.raises(ValueError, match="empty"):
        PartAccountant([], [])
    acc = PartAccountant(parts, data)
    missing = dict(draws)
    del missing[next(iter(draws))]
    with pytest.raises(ValueError, match="lack"):
        acc.reduce_abs(missing, np.ones(50))
    uneven = dict(draws)
    k = next(iter(draws))
    uneven[k] = uneven[k][:3]
    with pytest.raises(ValueError, match="draws"):
        acc.reduce_abs(uneven, np.ones(50))
    with pytest.raises(ValueError, match="non-negative"):
        acc.reduce_abs(draws, -np.ones(50))
    with pytest.raises(ValueError, match="extras"):
        acc.reduce_abs(draws, np.ones(50), lower=np.zeros(50))
    assert acc.fused and acc.n == 50
    assert set(acc.free_names) == set(draws)


def brute_parts(parts, data, draws):
    """Per part, the (M, n) matrix of its term of the record log-likelihood (0 where inactive)."""
    return {p.name: brute([p], [d], draws) for p, d in zip(parts, data, strict=True)}


@pytest.mark.parametrize("dense", [True, False], ids=["numpy", "numba"])
@pytest.mark.parametrize("seed", range(3))
def test_factors_weight_each_part_s_term(seed, dense):
    r"""With factors :math:`r_{iq}`, the record function is :math:`\sum_q r_{iq} f_q(x_i)`:
    against the parts' SciPy terms weighted by hand, on both paths; every reduction and the
    matrix itself. The accountant without factors is unchanged."""
    parts, data, draws = random_file(seed)
    n = data[0].n
    rng = np.random.default_rng(100 + seed)
    named = [p.name for p in parts[::2]] + [parts[-1].name]  # status and value parts
    factors = {k: rng.uniform(0.2, 1.0, n) for k in named}
    factors[named[0]][::5] = 1.0  # some records at exactly 1
    terms = brute_parts(parts, data, draws)
    F = sum(terms[p.name] * factors.get(p.name, 1.0) for p in parts)
    c = rng.uniform(0, 1, n)
    plain = PartAccountant(parts, data, dense=dense)
    acc = plain.with_factors(factors)
    _assert_reduces_like(acc, draws, F, c)
    # the original object keeps the plain sum; ones give it bit for bit
    F0 = brute(parts, data, draws)
    np.testing.assert_allclose(plain(draws), F0, rtol=1e-12, atol=1e-12)
    ones = plain.with_factors({k: np.ones(n) for k in named})
    np.testing.assert_array_equal(ones.reduce_abs(draws, c).per_record,
                                  plain.reduce_abs(draws, c).per_record)  # fmt: skip
    np.testing.assert_array_equal(ones.reduce_sum(draws, c), plain.reduce_sum(draws, c))
    assert set(acc.factors) == set(named) and not plain.factors


def test_factors_numpy_and_numba_paths_agree_and_bad_factors_are_refused():
    parts, data, draws = random_file(7, n=300, m=20)
    n = data[0].n
    factors = {parts[1].name: np.linspace(0.1, 1.0, n), parts[4].name: np.full(n, 0.5)}
    a = PartAccountant(parts, data, dense=True).with_factors(factors)
    b = PartAccountant(parts, data, dense=False).with_factors(factors)
    c = np.linspace(0.0, 1.0, n)
    np.testing.assert_allclose(a.reduce_abs(draws, c).per_record,
                               b.reduce_abs(draws, c).per_record, rtol=1e-13)  # fmt: skip
    np.testing.assert_allclose(a.reduce_abs(draws, c).per_draw,
                               b.reduce_abs(draws, c).per_draw, rtol=1e-13)  # fmt: skip
    acc = PartAccountant(parts, data)
    with pytest.raises(ValueError, match="does not have"):
        acc.with_factors({"nope": np.ones(n)})
    with pytest.raises(ValueError, match=f"part '{parts[1].name}'.*{n} finite values >= 0"):
        acc.with_factors({parts[1].name: np.ones(n - 1)})
    with pytest.raises(ValueError, match=">= 0"):
        acc.with_factors({parts[1].name: -np.ones(n)})

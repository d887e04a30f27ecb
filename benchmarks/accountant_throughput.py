"""Accountant throughput: record-draws per second of the per-record Lipschitz reduction
(``per_record = max_m |g|``, ``per_draw = max_i |c_i g|``) for every ready model and accountant
variant, three ways in the same run:

(a) naive SciPy: one ``scipy.stats`` log density call per draw over all records (a subset of
    draws, extrapolated);
(b) the generic path: the model's PyTensor per-record graph vectorised over draws
    (``RecordFunction``) with the abs/max reductions compiled into the graph, block by block
    within 256 MB (a subset of draws, extrapolated; compile time reported separately), and (b')
    the same graph returning the (draws, records) block reduced with NumPy (the path before the
    in-graph reductions);
(c) the fused Numba kernel (``pseudopost.privacy.fused``): M = 2000 draws where affordable;
    (c') the same g and reductions in NumPy blocks (``privacy.kernels.dense``, what the
    accountant runs up to ``DENSE_MAX`` = 2^23 record-draws), on DENSE_MAX / n draws.

Each row also checks that (b) and (c) agree on the common draws (``max_rel_diff``). Goal (issue
8): at least 3e8 record-draws/s for the regression models on a 2-core machine.

    .venv/bin/python benchmarks/accountant_throughput.py [--sizes 100000 1000000] [--draws 2000]
        [--models normal lognormal poisson negbin] [--variants weighted truncated censored]
        [--out accountant_throughput]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

import numpy as np
import pandas as pd
from _common import report
from scipy import stats

from pseudopost.models import (
    LogNormalRegression,
    NegativeBinomialRegression,
    NormalRegression,
    PoissonRegression,
    RecordFunction,
)
from pseudopost.privacy import Censored, RangeTruncated, Unrestricted, reduce_abs
from pseudopost.privacy.fused import DENSE_MAX, FusedFunction, fused_function

MODELS = {
    "normal": NormalRegression,
    "lognormal": LogNormalRegression,
    "poisson": PoissonRegression,
    "negbin": NegativeBinomialRegression,
}
TARGET = 3e8
BUDGET_S = 4.0  # per timed cell: fewer draws (extrapolated) when a full run would take longer


def simulate(family: str, n: int, m: int, rng: np.random.Generator):
    z = rng.normal(2.0, 1.0, n)
    draws = {"intercept": rng.normal(1.0, 0.02, m), "beta": rng.normal(1.0, 0.02, (m, 1))}
    if family == "normal":
        y = 1.0 + z + rng.normal(0, 1, n)
    elif family == "lognormal":
        y = rng.lognormal(1.0 + z, 1.0)
    else:
        draws["intercept"] -= 1.0
        draws["beta"] *= 0.3
        mu = np.exp(0.3 * z)
        y = rng.poisson(mu) if family == "poisson" else rng.negative_binomial(3, 3 / (3 + mu))
        y = y.astype(float)
    if family in ("normal", "lognormal"):
        draws["sigma"] = rng.uniform(0.97, 1.03, m)
    if family == "negbin":
        draws["phi"] = rng.uniform(2.8, 3.2, m)
    return pd.DataFrame({"z": z, "y": y}), draws


def decomposition(variant: str, y: np.ndarray, family: str):
    if variant == "weighted":
        return Unrestricted()
    if variant == "censored":
        return Censored(5.0)
    lo = 0.4 * y if family == "lognormal" else (y - 2.0)
    return RangeTruncated(np.floor(lo) if family in ("poisson", "negbin") else lo, 1.8 * y + 2.0)


def scipy_logpdf(family, variant, draws, m, y, z, extras, alpha):
    """The naive reference: SciPy for one draw over all records."""
    eta = draws["intercept"][m] + draws["beta"][m, 0] * z
    if family == "normal":
        s = draws["sigma"][m]
        f = stats.norm.logpdf(y, eta, s)
    elif family == "lognormal":
        s = draws["sigma"][m]
        f = stats.lognorm.logpdf(y, s, scale=np.exp(eta))
    elif family == "poisson":
        f = stats.poisson.logpmf(y, np.exp(eta))
    else:
        phi = draws["phi"][m]
        f = stats.nbinom.logpmf(y, phi, phi / (phi + np.exp(eta)))
    if variant == "truncated":
        lo, hi = extras["lower"], extras["upper"]
        if family == "normal":
            dist = stats.norm(eta, draws["sigma"][m])
        elif family == "lognormal":
            dist = stats.lognorm(draws["sigma"][m], scale=np.exp(eta))
        elif family == "poisson":
            dist = stats.poisson(np.exp(eta))
            lo = lo - 1
        else:
            phi = draws["phi"][m]
            dist = stats.nbinom(phi, phi / (phi + np.exp(eta)))
            lo = lo - 1
        a, b = dist.logcdf(lo), dist.logcdf(hi)
        with np.errstate(divide="ignore"):
            f = f - (b + np.log(-np.expm1(a - b)))
    if variant == "censored":
        f = np.clip(alpha * f, -5.0, 5.0)
    return f


def naive(family, variant, draws, y, z, extras, alpha, coef, m_used):
    per_record = np.zeros(y.size)
    per_draw = np.zeros(m_used)
    for m in range(m_used):
        a = np.abs(scipy_logpdf(family, variant, draws, m, y, z, extras, alpha))
        a[np.isnan(a)] = np.inf
        np.maximum(per_record, a, out=per_record)
        per_draw[m] = (coef * a).max()
    return per_record, per_draw


def matrix_reduce(fn, draws, coef, extras, max_bytes=256 * 2**20):
    """(b'): the (draws, records) blocks of the compiled graph, reduced with NumPy."""
    n_draws = len(next(iter(draws.values())))
    per_record, per_draw = np.zeros(fn.n), np.zeros(n_draws)
    for rec, dr in fn.blocks(n_draws, max_bytes):
        a = np.abs(fn({k: v[dr] for k, v in draws.items()}, rec, **extras))
        a = np.where(np.isnan(a), np.inf, a)
        np.maximum(per_record[rec], a.max(axis=0), out=per_record[rec])
        np.maximum(per_draw[dr], (coef[rec] * a).max(axis=1), out=per_draw[dr])
    return per_record, per_draw


def timed(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def subset(draws, m):
    return {k: v[:m] for k, v in draws.items()}


def affordable(fn, n, m_max, m_probe):
    """Draws to time so that the cell takes about BUDGET_S: probe on m_probe draws first."""
    _, t = timed(fn, m_probe)
    rate = n * m_probe / max(t, 1e-9)
    return int(min(m_max, max(m_probe, rate * BUDGET_S / n)))


def run(n: int, m_total: int, family: str, variant: str, matrix: bool, seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    df, draws = simulate(family, n, m_total, rng)
    model = MODELS[family]("y", ["z"])
    base = model.build(model.prepare(df))
    y, z = df["y"].to_numpy(), df["z"].to_numpy()
    decomp = decomposition(variant, y, family)
    alpha = rng.uniform(0.2, 1.0, n)
    coef, extras = decomp.coefficient(alpha), decomp.extras(alpha)
    row = {"model": family, "variant": variant, "n": n}

    # (c) fused: the Numba kernel (forced: the size rule would give small draw subsets to NumPy),
    # and (c') the NumPy blocks the accountant uses up to DENSE_MAX record-draws
    fused = fused_function(model, base, decomp)
    if fused is not None:
        fused.kernel = dataclasses.replace(fused.kernel, dense=False)
        dense = object.__new__(FusedFunction)
        dense.__dict__.update(fused.__dict__)
        dense.kernel = dataclasses.replace(fused.kernel, dense=True)
        m_d = max(1, min(m_total, DENSE_MAX // n))
        _, t_d = timed(reduce_abs, dense, subset(draws, m_d), coef, **extras)
        row["numpy_rd_per_s"] = n * m_d / t_d
        small = subset(draws, 2)
        _, row["fused_first_call_s"] = timed(reduce_abs, fused, small, coef, **extras)
        m_c = affordable(
            lambda m: reduce_abs(fused, subset(draws, m), coef, **extras), n, m_total, 20
        )
        _, t_c = timed(reduce_abs, fused, subset(draws, m_c), coef, **extras)
        row.update(fused_draws=m_c, fused_s=t_c, fused_rd_per_s=n * m_c / t_c)
    else:
        row.update(fused_draws=0, fused_s=np.nan, fused_rd_per_s=np.nan, fused_first_call_s=np.nan)
        row["numpy_rd_per_s"] = np.nan

    # (b) generic PyTensor graph, chunked
    generic = decomp.generic_function(model, base, RecordFunction(base, model.observed))
    # compile (and run once on one draw) the in-graph reductions the accountant uses
    _, row["generic_compile_s"] = timed(reduce_abs, generic, subset(draws, 1), coef, **extras)
    m_b = affordable(lambda m: reduce_abs(generic, subset(draws, m), coef, **extras), n, 200, 2)
    _, t_b = timed(reduce_abs, generic, subset(draws, m_b), coef, **extras)
    row.update(generic_draws=m_b, generic_rd_per_s=n * m_b / t_b)
    if matrix:
        generic.check_chunking(subset(draws, 1), **extras)
        matrix_reduce(generic, subset(draws, 1), coef, extras)  # compile the matrix function
        _, t = timed(matrix_reduce, generic, subset(draws, m_b), coef, extras)
        row["generic_matrix_rd_per_s"] = n * m_b / t

    # (a) naive SciPy loop
    m_a = affordable(
        lambda m: naive(family, variant, draws, y, z, extras, alpha, coef, m), n, 50, 1
    )
    _, t_a = timed(naive, family, variant, draws, y, z, extras, alpha, coef, m_a)
    row.update(scipy_draws=m_a, scipy_rd_per_s=n * m_a / t_a)

    if fused is not None:  # agreement of (b) and (c) on their common draws
        m = min(m_b, m_c)
        a = reduce_abs(fused, subset(draws, m), coef, **extras).per_record
        b = reduce_abs(generic, subset(draws, m), coef, **extras).per_record
        row["max_rel_diff"] = float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))
        row["speedup_vs_scipy"] = row["fused_rd_per_s"] / row["scipy_rd_per_s"]
        row["speedup_vs_generic"] = row["fused_rd_per_s"] / row["generic_rd_per_s"]
    row["fused_path"] = isinstance(fused, FusedFunction)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--variants", nargs="+", default=["weighted", "truncated", "censored"])
    parser.add_argument("--matrix", action="store_true", help="also time (b')")
    parser.add_argument("--out", default="accountant_throughput")
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        for family in args.models:
            for variant in args.variants:
                row = run(n, args.draws, family, variant, args.matrix)
                rows.append(row)
                print(
                    {k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in row.items()},
                    flush=True,
                )
    table = pd.DataFrame(rows)
    cols = [
        "model", "variant", "n", "fused_draws", "fused_rd_per_s", "numpy_rd_per_s", "generic_rd_per_s",
        "scipy_rd_per_s", "speedup_vs_scipy", "speedup_vs_generic", "fused_first_call_s",
        "generic_compile_s", "max_rel_diff", "fused_path",
    ]  # fmt: skip
    if args.matrix:
        cols.insert(6, "generic_matrix_rd_per_s")
    table = table[cols]
    continuous = table["model"].isin(["normal", "lognormal"])  # the regression models
    reg = table[table["variant"].eq("weighted") & table["fused_path"] & continuous]
    met = bool((reg["fused_rd_per_s"] >= TARGET).all())
    load = os.getloadavg()[0]
    title = (
        f"Accountant throughput (record-draws/s; M = {args.draws}; {os.cpu_count()} cores, "
        f"load average {load:.1f} at the end: timings taken on a shared machine). Goal >= "
        f"{TARGET:.0e} for the normal and log-normal regression models (weighted): "
        f"{'met' if met else 'NOT met'}. "
        "'averaged' uses the weighted kernel (same g, another coefficient); range truncation "
        "of the count models runs the generic path (no fused kernel)."
    )
    report(table, args.out, title)


if __name__ == "__main__":
    main()

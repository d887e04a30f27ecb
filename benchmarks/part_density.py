"""Column parts' densities on a real file: the fused (Numba) gradient and per-key tables against
the NumPy code, and the Laplace preconditioner with the exact Hessian against differences.

For every part of the file's whole-file model (``FileModel``; the files of
``benchmarks/_synthpop.DATA``, YRBSS by default) with at least ``--min-dim`` parameters, on its
unweighted statistics, one row with: d, the distinct design rows U, the share of non-zeros in the design, milliseconds per log density +
gradient (NumPy, the fused kernel, their ratio), the exact Hessian's milliseconds, the seconds
of the Laplace preconditioner (Newton on the exact Hessian; with ``--differences`` also the
Newton-CG + forward-difference path, which costs d + ~1,500 gradients), and the seconds of the
per-key log-likelihood tables of 100 draws (the accountant's and the risk step's work; NumPy and
Numba). Each row checks that the two gradients agree (``grad_rel_diff``) and that the two
tables agree (``table_max_diff``). The machine's load average is printed with the table (it is
shared: times scale with it).

    .venv/bin/python benchmarks/part_density.py [--file yrbss|adult] [--n 10000] [--min-dim 100]
        [--differences] [--out part_density]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import pandas as pd
from _common import report
from _synthpop import DATA

from pseudopost.fitting import laplace
from pseudopost.fitting.columns import file_part_data
from pseudopost.models.file import FileModel
from pseudopost.models.parts import GroupedData
from pseudopost.models.parts import _fused as F


def load(name: str, n: int | None) -> pd.DataFrame:
    if name == "yrbss":
        return pd.read_csv(DATA / "yrbss.csv")
    frame = pd.read_csv(DATA / "adult.csv.gz")
    return frame.sample(n, random_state=1).reset_index(drop=True) if n else frame


def per_call(fn, *, repeat: int = 20) -> float:
    """Seconds per call (after one warm-up call)."""
    fn()
    t = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t) / repeat


def row(part, stats, differences: bool) -> dict:
    rng = np.random.default_rng(0)
    d = part.layout.size
    x = rng.normal(size=d) * 0.1
    arrays = stats.arrays
    rows = arrays["rows"]
    out = {"part": part.name, "family": part.family, "d": d, "U": rows.shape[0]}
    out["nonzero"] = float(np.mean(rows != 0)) if rows.size else 0.0
    fused = part.log_density(stats)  # with the derived non-zeros above the threshold
    old = F.FUSED_MIN
    try:
        F.FUSED_MIN = 10**15
        numpy_density = part.log_density(stats)
        out["grad_numpy_ms"] = 1e3 * per_call(lambda: numpy_density.logp_grad(x))
        g_np = numpy_density.logp_grad(x)[1]
    finally:
        F.FUSED_MIN = old
    out["grad_fused_ms"] = 1e3 * per_call(lambda: fused.logp_grad(x))
    out["speedup"] = out["grad_numpy_ms"] / out["grad_fused_ms"]
    g = fused.logp_grad(x)[1]
    out["grad_rel_diff"] = float(np.abs(g - g_np).max() / np.abs(g_np).max())
    if fused.has_hessian:
        out["hessian_ms"] = 1e3 * per_call(lambda: fused.hessian(x), repeat=3)
        t = time.perf_counter()
        laplace.laplace_transform(part, stats)
        out["laplace_exact_s"] = time.perf_counter() - t
    if differences:
        cls = type(part)
        had = cls.has_hessian
        try:
            cls.has_hessian = False
            t = time.perf_counter()
            laplace.laplace_transform(part, stats)
            out["laplace_differences_s"] = time.perf_counter() - t
        finally:
            cls.has_hessian = had
    if part.family == "categorical" and part.p:
        draws = 100
        params = {
            "intercept": rng.normal(size=(draws, part.n_levels - 1)) * 0.3,
            "beta": rng.normal(size=(draws, part.p, part.n_levels - 1)) * 0.3,
        }
        key_row, key_y = np.nonzero(arrays["counts"])
        old = F.TABLE_MIN
        try:
            F.TABLE_MIN = 10**15
            t = time.perf_counter()
            ref = part._key_table(params, rows, key_row, key_y.astype(float))
            out["table_numpy_s"] = time.perf_counter() - t
        finally:
            F.TABLE_MIN = old
        F.categorical_table(rows[:2], params["intercept"][:1], params["beta"][:1], [0], [0])
        t = time.perf_counter()
        got = F.categorical_table(rows, params["intercept"], params["beta"], key_row, key_y)
        out["table_fused_s"] = time.perf_counter() - t
        out["table_max_diff"] = float(np.abs(got - ref).max())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--file", choices=("yrbss", "adult"), default="yrbss")
    ap.add_argument("--n", type=int, default=None, help="records sampled (adult)")
    ap.add_argument("--min-dim", type=int, default=100)
    ap.add_argument("--differences", action="store_true")
    ap.add_argument("--out", default="part_density")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    frame = load(args.file, args.n)
    model = FileModel()
    parts, data = file_part_data(model, model.prepare(frame))
    rows = []
    for part, d in zip(parts, data, strict=True):
        if part.layout.size < args.min_dim or part.conjugate:
            continue
        w = np.ones(d.n)
        stats = d.statistics(part, w) if isinstance(d, GroupedData) else part.statistics(d, w)
        if "rows" not in stats.arrays:
            continue
        rows.append(row(part, stats, args.differences))
        print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    load1 = os.getloadavg()[0]
    report(
        table,
        args.out,
        f"Part densities on {args.file} ({len(frame)} records): fused vs NumPy gradient, exact "
        f"Hessian, Laplace, per-key tables of 100 draws (load average {load1:.1f}, "
        f"{os.cpu_count()} cores)",
    )


if __name__ == "__main__":
    main()
